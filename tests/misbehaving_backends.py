"""Plugin backends that misbehave as devices under test do, loaded as
`tests.misbehaving_backends:NAME`: `Misbehaving` observes every program's initial state (what
`tests.fault_backends:PlantedReference` observes) unless $MISBEHAVE names one thing to do wrong in
`observe` (or, for `unavailable`, in `unavailable_reason`; `text` answers HOSTILE_TEXT as each
case's error); `make_class` returns the class instead of a backend, and `exiting_factory` calls
sys.exit(0) as it is called."""

from __future__ import annotations

import os
import sys
from typing import Callable, Sequence

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tests.fault_backends import initial_state

# what $MISBEHAVE may name, and what a case's error then says (a part of it)
MISBEHAVIOURS = {
    "sys_exit": "raised SystemExit(0)",
    "base_exception": "raised BaseException: planted",
    "raise": "raised RuntimeError: planted",
    "none": "observe() returned a NoneType, not a list of observations",
    "count": "observe() returned 0 observations for",
    "ids": "with an observation of case 'not-a-case'",
    "order": "observe() returned the cases' observations out of order",
    "type": "with a dict, not an Observation",
    "data": "is not a JSON object",
    "state": "is not a MachineState",
    "unavailable": "unavailable_reason() raised SystemExit(0)",
    "os_exit": "crash: child exited with status 0",
}
# what `text` reports as every case's error: a terminal escape, HTML, a table bar, a newline, a bell
HOSTILE_TEXT = "\x1b[2J\x1b[31mred<script>alert(1)</script> | cell\nsecond line\x07"


class Misbehaving:
    name = "misbehaving"

    def __init__(self, profile: str | None = None):
        self.how = os.environ.get("MISBEHAVE", "")

    def unavailable_reason(self) -> str | None:
        if self.how == "unavailable":
            sys.exit(0)
        return None

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list:
        good = [Observation(p.case_id, state=initial_state(p)) for p in programs]
        how = self.how
        if how == "sys_exit":
            sys.exit(0)
        if how == "os_exit":
            os._exit(0)
        if how == "base_exception":
            raise BaseException("planted")
        if how == "raise":
            raise RuntimeError("planted")
        if how == "none":
            return None
        if how == "count":
            return []
        if how == "ids":
            return [Observation("not-a-case", state=o.state) for o in good]
        if how == "order":
            return good[::-1] if len(good) > 1 else [Observation("not-a-case", state=good[0].state)]
        if how == "type":
            return [{"case_id": o.case_id} for o in good]
        if how == "data":
            return [Observation(o.case_id, state=o.state, data={"x": object()}) for o in good]
        if how == "text":
            return [Observation(o.case_id, error=HOSTILE_TEXT) for o in good]
        if how == "state":
            return [Observation(o.case_id, state="a state") for o in good]
        return good


def make_class(profile: str | None = None) -> type:
    return Misbehaving


def exiting_factory(profile: str | None = None) -> Misbehaving:
    sys.exit(0)
