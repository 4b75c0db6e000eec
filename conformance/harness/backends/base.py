"""The backend protocol: a backend runs programs and reports what it observed, never a verdict
(RISCOF-style: the reference and the devices under test are plugins with one interface, the
harness compares; `tcgen05_conformance.harness.judge`).

A backend has a `name`, says whether it can run here (`unavailable_reason`), and implements one
method, `observe(programs, progress=None)`, returning one `Observation` per program, in order.
It never raises for one bad case: it reports the case as an error and goes on. A backend is made
by a factory called with `profile=`, the numeric profile the harness chose for the programs it
will be given (a computing backend computes with it; silicon ignores it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol, Sequence

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, state_from_json, state_to_json

STATE, ASSEMBLY = "state", "assembly"  # what a backend observes (`Backend.observes`)


@dataclass
class Observation:
    """What a backend saw of one case, exactly one of: the final machine `state`; `assembled`,
    whether the assembler accepted the program (a backend that `observes` assembly, with its
    diagnostics in `data`); `skip`, why it did not run the case (unsupported, another
    architecture's program); `error`, why it could not produce an observation (a crash, a fault, a
    timeout, undefined behaviour). `data` holds extras that travel with the case's result."""

    case_id: str
    state: MachineState | None = None
    assembled: bool | None = None
    skip: str | None = None
    error: str | None = None
    data: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        given = [k for k in ("state", "assembled", "skip", "error") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"an observation of case {self.case_id} holds exactly one of state, assembled, skip and error, "
                             f"not {' and '.join(given) or 'none'}")


def observation_to_json(o: Observation) -> dict:
    """The observation as a JSON-able dict (the state compactly: `tcgen05_conformance.core.state.state_to_json`)."""
    return {"case_id": o.case_id, "state": None if o.state is None else state_to_json(o.state), "assembled": o.assembled,
            "skip": o.skip, "error": o.error, "data": o.data}


def observation_from_json(obj: dict) -> Observation:
    """The observation `observation_to_json` wrote; KeyError, TypeError or ValueError when `obj` is not one."""
    state = None if obj["state"] is None else state_from_json(obj["state"])
    return Observation(obj["case_id"], state, obj["assembled"], obj["skip"], obj["error"], dict(obj["data"]))


Progress = Callable[[int], None]


class Backend(Protocol):
    """What a plugin implements: `name`, `unavailable_reason` and `observe`; optionally
    `observes = "assembly"` for a backend that reports whether programs assemble instead of states,
    and `uses_gpu = True` on its factory (its class) for one that runs on a GPU (the first that
    CUDA lets its process see): `run` then spreads its batches over the GPUs, each in a child
    process that sees one GPU alone (`registry.uses_gpu`)."""

    name: str

    def unavailable_reason(self) -> str | None:
        """None when this backend can run on this machine; otherwise why it is skipped."""

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        """One observation per program, in order; `progress(n)` after the n-th, when given."""


def observes(backend: Backend) -> Literal["state", "assembly"]:
    """What `backend` observes: machine states (the default) or assembly."""
    return getattr(backend, "observes", STATE)


def observe_each(observe_one: Callable[[Program], Observation], programs: Sequence[Program],
                 progress: Progress | None = None) -> list[Observation]:
    """`observe` for backends that take one program at a time: observations in order, progress after each."""
    observations = []
    for k, p in enumerate(programs):
        observations.append(observe_one(p))
        if progress:
            progress(k + 1)
    return observations
