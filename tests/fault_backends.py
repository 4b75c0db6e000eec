"""Planted backends for the supervisor, journal and report tests, loaded as `tests.fault_backends:NAME`.

`Planted` passes every program, except that a program labelled `hang`, `segv`, `exit`, `raise`
or `garbage` does what its label says first, and `crash-once` dies only the first time it runs
(a marker file in $PLANTED_DIR remembers). Each case it starts appends `<pid> <case id>` to
$PLANTED_LOG when that is set, and takes $PLANTED_DELAY seconds (default 0). `Perturbed` is a
computing backend with a planted bug in one bit of D, for reports of failures."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from typing import Callable, Sequence

from conformance.backends.base import FAIL, PASS, CaseResult, run_each
from conformance.instructions import Tcgen05Mma
from conformance.program import Program, SmemSegment

PERTURBED_BIT = 22  # f32: the mantissa's top bit; s32: 2^22


def planted_programs(*labels: str) -> list[Program]:
    """One distinct, empty program per label (the label does not enter the case id, the byte does)."""
    return [Program(target="sm_100a", ops=(), smem=(SmemSegment(k, b"\x01"),), label=label)
            for k, label in enumerate(labels)]


class Planted:
    name = "planted"

    def __init__(self, profile: str | None = None):
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        return None

    def run(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[CaseResult]:
        return run_each(self.run_one, programs, progress)

    def run_one(self, p: Program) -> CaseResult:
        if "PLANTED_LOG" in os.environ:
            with open(os.environ["PLANTED_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} {p.case_id}\n")
        time.sleep(float(os.environ.get("PLANTED_DELAY", "0")))
        if p.label == "hang":
            time.sleep(3600)
        elif p.label == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif p.label == "exit":
            os._exit(7)
        elif p.label == "raise":
            raise RuntimeError("planted failure")
        elif p.label == "garbage":
            print("{not a result", flush=True)
            os.write(1, b"\xff\xfe raw bytes on file descriptor 1\n")
            sys.stderr.write("noise on stderr\n")
        elif p.label == "crash-once":
            marker = os.path.join(os.environ["PLANTED_DIR"], p.case_id)
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(9)
        return CaseResult(p.case_id, PASS)


class SetupCrash(Planted):
    """Dies while it is being set up, before any case (only for `run_supervised`, which sets
    backends up in its children alone)."""

    def __init__(self, profile: str | None = None):
        os._exit(5)


class Perturbed:
    """A computing backend with a planted bug: the state of a program whose tcgen05.mma has a kind
    in $PERTURBED_KINDS (comma-separated, default tf32) is the oracle's with bit PERTURBED_BIT of
    the word at the MMA's D address flipped, reported as a failure with the decoded diff; every
    other program passes."""

    name = "perturbed"

    def __init__(self, profile: str | None = None):
        self.profile = profile
        self.kinds = set(os.environ.get("PERTURBED_KINDS", "tf32").split(","))

    def unavailable_reason(self) -> str | None:
        return None

    def run(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[CaseResult]:
        return run_each(self.run_one, programs, progress)

    def run_one(self, p: Program) -> CaseResult:
        mmas = [op for op in p.ops if isinstance(op, Tcgen05Mma) and op.kind in self.kinds]
        if not mmas:
            return CaseResult(p.case_id, PASS)
        # Imported here so the supervisor tests' children, which load this module, start without numpy and the oracle.
        from conformance.diff import diff_states
        from conformance.encoding import taddr
        from oracles.execute import run as oracle_run

        expected = oracle_run(p, self.profile)
        lane, column = taddr.decode(mmas[0].d_tmem)
        tmem = expected.tmem.copy()
        tmem[0, lane, column] ^= 1 << PERTURBED_BIT
        diff = diff_states(p, expected, dataclasses.replace(expected, tmem=tmem))
        return CaseResult(p.case_id, FAIL, diff.summary_line(), data={"diff": diff.as_dict()})
