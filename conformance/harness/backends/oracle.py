"""The `oracle` backend: the golden model's state of each program, computed with the numeric
profile it was made for (`tcgen05_conformance.harness.judge.profile_for` chooses it per case).

It observes the state when the oracle computes one; a program whose result the ISA leaves
undefined is an error (generated programs never should be), as is a profile with no datapath for
the program's formats; an operation the oracle does not model yet is skipped with the reason.
"""

from __future__ import annotations

from typing import Sequence

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, NotModelled, UndefinedBehaviour
from tcgen05_conformance.harness.backends.base import Observation, Progress
from tcgen05_conformance.oracles.execute import run_many

OBSERVED_TOGETHER = 256  # programs a call of the oracle evaluates together (their Hopper MMAs in one batch); a campaign chunk is 200


class OracleBackend:
    name = "oracle"

    def __init__(self, profile: str | None = None):
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        return None

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        """The oracle's observation of each program under this backend's profile (None: each
        program's own), `OBSERVED_TOGETHER` programs at a time through `run_many` (their Hopper
        MMAs evaluated in vectorised batches), progress after each slice."""
        observations: list[Observation] = []
        for start in range(0, len(programs), OBSERVED_TOGETHER):
            part = programs[start:start + OBSERVED_TOGETHER]
            observations += [_observation(p, outcome) for p, outcome in zip(part, run_many(part, self.profile))]
            if progress:
                progress(len(observations))
        return observations

    def observe_one(self, p: Program) -> Observation:
        """The oracle's observation of one program, as `observe` gives it (not through `observe`,
        which a variant of the oracle may build on this)."""
        return _observation(p, run_many([p], self.profile)[0])


def _observation(p: Program, outcome: MachineState | Exception) -> Observation:
    """A program's observation from what the oracle gave for it: its state, a skip when it does
    not model the program, an error when its behaviour is undefined or the profile has no
    datapath for its formats."""
    if isinstance(outcome, NotModelled):
        return Observation(p.case_id, skip=f"not modelled: {outcome}")
    if isinstance(outcome, UndefinedBehaviour):
        return Observation(p.case_id, error=f"undefined behaviour: {outcome}")
    if isinstance(outcome, ValueError):  # e.g. a profile with no datapath for the program's formats
        return Observation(p.case_id, error=str(outcome))
    return Observation(p.case_id, state=outcome)
