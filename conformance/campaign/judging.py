"""The reference and the verdict: the campaign's only calls into the judge."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE
from tcgen05_conformance.harness.judge import CaseResult


def expected_states(programs: Sequence[Program], reference: str = DEFAULT_REFERENCE,
                    together: bool = True, profile: str | None = None) -> tuple[list[str], list[Observation]]:
    """The profile that judges each program (`profile`, a name or a profile file, where it applies,
    as for run; None: each program's architecture's own) and the reference's observation of it (the expected
    D, or why there is none); with `together`, the reference observes the programs in one call
    (the oracle evaluates their inner products in vectorised batches), else one at a time."""
    from tcgen05_conformance.harness.runner import reference_observations

    if together:
        observations, profiles = reference_observations(list(programs), reference, profile)
        return profiles, observations
    alone = [reference_observations([p], reference, profile) for p in programs]
    return [profiles[0] for _, profiles in alone], [observations[0] for observations, _ in alone]


def verdict(p: Program, reference: str, expected: Observation, d: np.ndarray) -> CaseResult:
    """The verdict on the D the GPU gave against the reference's, as `run` judges it (a fail
    carries the decoded diff)."""
    from tcgen05_conformance.harness.backends.hopper import observed_state
    from tcgen05_conformance.harness.judge import state_result

    return state_result(p, reference, expected, Observation(p.case_id, state=observed_state(p, d)))
