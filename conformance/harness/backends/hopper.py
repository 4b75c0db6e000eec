"""The `hopper` backend: Hopper programs (wgmma, mma.sp) executed on an sm_90 GPU; it observes D
as the GPU leaves it. It pins no numeric profile: the harness judges each case by the profile it
chose (a Hopper program by `sm_90a`, the measured hardware, unless the run asks for another
Hopper profile; `tcgen05_conformance.harness.judge.profile_for`).

Programs of one kernel form run in one launch (`tcgen05_conformance.device.hopper_batch`). tcgen05 programs are
skipped (they need sm_100/sm_103: the blackwell backend). An sm_90 GPU has no Tensor Memory: the
TMEM image of the state it reports is the program's initial one, which Hopper instructions never
change.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, initial_tmem
from tcgen05_conformance.harness.backends.base import Observation, Progress

HOPPER_ARCHS = ("sm_90",)
NOT_HOPPER = "not a Hopper program (tcgen05 needs sm_100a/sm_103a: the blackwell backend)"


def reason_for(arch: str, name: str) -> str | None:
    """Why a GPU of compute capability `arch` (e.g. "sm_90") cannot run this backend, or None."""
    if arch in HOPPER_ARCHS:
        return None
    return f"{name} is {arch}; the hopper backend runs wgmma (sm_90a) on sm_90 GPUs only"


def is_hopper_program(p: Program) -> bool:
    """One wgmma or mma.sp: what the batch kernel runs."""
    return len(p.ops) == 1 and isinstance(p.ops[0], (WgmmaMma, MmaSp))


def observed_state(p: Program, d: np.ndarray) -> MachineState:
    """The state of a Hopper program whose D the GPU returned."""
    return MachineState(initial_tmem(p), [], d)


class HopperBackend:
    name = "hopper"
    uses_gpu = True  # run --gpus: its batches run in child processes pinned to one GPU each

    def __init__(self, profile: str | None = None):
        """`profile` is not used: the GPU computes as it does."""
        self._runner = None

    def unavailable_reason(self) -> str | None:
        from tcgen05_conformance.device.launch import Gpu, GpuUnavailable

        try:
            gpu = Gpu()
        except GpuUnavailable as e:
            return str(e)
        return reason_for(gpu.arch, gpu.name)

    def runner(self):
        if self._runner is None:
            from tcgen05_conformance.device.hopper_batch import HopperRunner
            from tcgen05_conformance.device.launch import Gpu

            self._runner = HopperRunner(Gpu())
        return self._runner

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        observations: list[Observation | None] = [None if is_hopper_program(p) else Observation(p.case_id, skip=NOT_HOPPER)
                                                  for p in programs]
        order = [i for i, o in enumerate(observations) if o is None]
        done = len(programs) - len(order)

        def finished(k: int, d: np.ndarray | Exception) -> None:
            nonlocal done
            i = order[k]
            p = programs[i]
            if isinstance(d, Exception):
                observations[i] = Observation(p.case_id, error=str(d))
            else:
                observations[i] = Observation(p.case_id, state=observed_state(p, d))
            done += 1
            if progress:
                progress(done)

        if not order:  # nothing for the GPU: it is not opened
            return observations
        try:
            self.runner().run([programs[i] for i in order], finished)
        except RuntimeError as e:  # a CUDA error poisons the context: the rest of this call is lost
            for i in order:
                if observations[i] is None:
                    observations[i] = Observation(programs[i].case_id, error=f"GPU: {' '.join(str(e).split())}")
            self._runner = None
        return observations
