"""Planted backends for the supervisor, journal, judge and report tests, loaded as `tests.fault_backends:NAME`.

`Planted` observes every program's initial state (its TMEM regions, zero registers and D: what
`PlantedReference` observes too, so that against it every case passes), except that a program
labelled `hang`, `segv`, `exit`, `raise` or `garbage` does what its label says first, and
`crash-once` dies only the first time it runs (a marker file in $PLANTED_DIR remembers). Each
case it starts appends `<pid> <case id>` to $PLANTED_LOG when that is set, and takes
$PLANTED_DELAY seconds (default 0). `Perturbed` is a computing backend with a planted bug in one
bit of D, for reports of failures."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Callable, Sequence

import numpy as np

from tcgen05_conformance.core.instructions import Tcgen05Fence, Tcgen05Mma
from tcgen05_conformance.core.program import Program, SmemSegment
from tcgen05_conformance.core.state import MachineState, initial_tmem, state_shape
from tcgen05_conformance.harness.backends.base import Observation, observe_each

PERTURBED_BIT = 22  # f32: the mantissa's top bit; s32: 2^22
PLANTED_WORD = (0, 5, 17)  # (cta, lane, column) of the TMEM word a `fail` case flips


def initial_state(p: Program) -> MachineState:
    """The program's initial TMEM image with zero registers and D, in the shapes of its state."""
    shape = state_shape(p)
    loads = [np.zeros(words, np.uint32) for _, words in shape.loads]
    return MachineState(initial_tmem(p), loads, None if shape.hopper_d is None else np.zeros(shape.hopper_d, np.uint32))


def planted_programs(*labels: str) -> list[Program]:
    """One distinct program per label, a lone fence (a program issues at least one operation; the
    label does not enter the case id, the byte does)."""
    return [Program(target="sm_100a", ops=(Tcgen05Fence(),), smem=(SmemSegment(k, b"\x01"),), label=label)
            for k, label in enumerate(labels)]


class Planted:
    """Also: `rendezvous` waits until $PLANTED_RENDEZVOUS cases labelled so have started (so they
    are observed only when they run at once, markers in $PLANTED_DIR), `fail` observes the initial
    state with bit PERTURBED_BIT of the TMEM word PLANTED_WORD flipped, and `error` or `skip`
    observes that (`planted error`, `planted skip`). $PLANTED_VERDICTS, words `<case id>=<label>`,
    gives any program such a label (generated programs included)."""

    name = "planted"
    RENDEZVOUS_WAIT_S = 60

    def __init__(self, profile: str | None = None):
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        return None

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[Observation]:
        return observe_each(self.observe_one, programs, progress)

    def observe_one(self, p: Program) -> Observation:
        if "PLANTED_LOG" in os.environ:
            with open(os.environ["PLANTED_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} {p.case_id}\n")
        time.sleep(float(os.environ.get("PLANTED_DELAY", "0")))
        label = dict(word.split("=") for word in os.environ.get("PLANTED_VERDICTS", "").split()).get(p.case_id, p.label)
        if label in ("error", "skip"):
            return Observation(p.case_id, **{label: f"planted {label}"})
        if label == "fail":
            state = initial_state(p)
            state.tmem[PLANTED_WORD] ^= 1 << PERTURBED_BIT
            return Observation(p.case_id, state=state)
        if label == "rendezvous":
            return self.rendezvous(p)
        if label == "hang":
            time.sleep(3600)
        elif label == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif label == "exit":
            os._exit(7)
        elif label == "raise":
            raise RuntimeError("planted failure")
        elif label == "garbage":
            print("{not a result", flush=True)
            os.write(1, b"\xff\xfe raw bytes on file descriptor 1\n")
            sys.stderr.write("noise on stderr\n")
        elif label == "crash-once":
            marker = os.path.join(os.environ["PLANTED_DIR"], p.case_id)
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(9)
        return Observation(p.case_id, state=initial_state(p))

    def rendezvous(self, p: Program) -> Observation:
        directory, expected = os.environ["PLANTED_DIR"], int(os.environ["PLANTED_RENDEZVOUS"])
        open(os.path.join(directory, f"rendezvous-{p.case_id}"), "w").close()
        deadline = time.monotonic() + self.RENDEZVOUS_WAIT_S
        while sum(name.startswith("rendezvous-") for name in os.listdir(directory)) < expected:
            if time.monotonic() > deadline:
                return Observation(p.case_id, error=f"rendezvous: fewer than {expected} cases ran at once")
            time.sleep(0.01)
        return Observation(p.case_id, state=initial_state(p))


class PlantedReference(Planted):
    """A reference for `Planted`: every program's initial state, whatever its label; each case it
    observes appends its case id to $PLANTED_REFERENCE_LOG when that is set."""

    name = "planted-reference"

    def observe_one(self, p: Program) -> Observation:
        if "PLANTED_REFERENCE_LOG" in os.environ:
            with open(os.environ["PLANTED_REFERENCE_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{p.case_id}\n")
        return Observation(p.case_id, state=initial_state(p))


class SetupCrash(Planted):
    """Dies while it is being set up, before any case (only for `run_supervised`, which sets
    backends up in its children alone)."""

    def __init__(self, profile: str | None = None):
        os._exit(5)


class Perturbed:
    """A computing backend with a planted bug: the state of a program whose tcgen05.mma has a kind
    in $PERTURBED_KINDS (comma-separated, default tf32) is the oracle's with bit PERTURBED_BIT of
    the word at the MMA's D address flipped; every other program's is the oracle's."""

    name = "perturbed"

    def __init__(self, profile: str | None = None):
        self.profile = profile
        self.kinds = set(os.environ.get("PERTURBED_KINDS", "tf32").split(","))

    def unavailable_reason(self) -> str | None:
        return None

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[Observation]:
        return observe_each(self.observe_one, programs, progress)

    def observe_one(self, p: Program) -> Observation:
        # Imported here so the supervisor tests' children, which load this module, start without the oracle.
        from tcgen05_conformance.core.encoding import taddr
        from tcgen05_conformance.oracles.execute import run as oracle_run

        state = oracle_run(p, self.profile)
        mmas = [op for op in p.ops if isinstance(op, Tcgen05Mma) and op.kind in self.kinds]
        if mmas:
            lane, column = taddr.decode(mmas[0].d_tmem)
            state.tmem[0, lane, column] ^= 1 << PERTURBED_BIT
        return Observation(p.case_id, state=state)


class Rejecting:
    """An assembler that rejects every program with one diagnostic naming rule `syntax.qualifier`,
    so that the harness, not the backend, must find the legal programs among them."""

    name = "rejecting"
    observes = "assembly"

    def __init__(self, profile: str | None = None):
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        return None

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[Observation]:
        return [Observation(p.case_id, assembled=False, data={"diagnostics": [{"message": "planted rejection", "rule": "syntax.qualifier"}]})
                for p in programs]
