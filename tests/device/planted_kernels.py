"""Planted GPU faults for the device suite: a kernel that waits on an mbarrier expecting two
arrivals and gets one, so it never completes. `HangingKernel` (a backend, loaded as
`tests.device.planted_kernels:HangingKernel`) launches it for every case: the hang the supervisor's
watchdog must catch. `hang_on_gpu_1` (a campaign launcher) launches it behind one launch group of
the worker on GPU 1: the hang the campaign's watchdog must charge to that group alone."""

from __future__ import annotations

from typing import Callable, Sequence

from tcgen05_conformance.campaign.run import GpuLauncher
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.device.ptx.kernels import ptx_header
from tests.fake_launchers import claim_first, misbehaviour_of, identity

HANGING_PTX = ptx_header("sm_90a") + """.shared .align 8 .b64 mbar;

.visible .entry hang()
{
  .reg .pred %p_ready;
  .reg .b64 %rd_state;
  mbarrier.init.shared::cta.b64 [mbar], 2;
  mbarrier.arrive.shared::cta.b64 %rd_state, [mbar];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p_ready, [mbar], 0;
  @!%p_ready bra WAIT;
  ret;
}
"""


class HangingKernel:
    name = "hanging-kernel"

    def __init__(self, profile: str | None = None):
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        from tcgen05_conformance.device.launch import Gpu, GpuUnavailable

        try:
            Gpu()
        except GpuUnavailable as e:
            return str(e)
        return None

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> list[Observation]:
        from tcgen05_conformance.device.launch import Gpu

        gpu = Gpu()
        kernel = gpu.load(HANGING_PTX, "sm_90a").get_kernel("hang")
        for _ in programs:
            gpu.launch(kernel, 1, 1, 0)
            gpu.sync()  # never returns
        return [Observation(p.case_id, error="the hanging kernel completed") for p in programs]


class HangingGpuLauncher(GpuLauncher):
    """A campaign's GPU launcher (`tcgen05_conformance.campaign.run.GpuLauncher`) on a real GPU, but
    the first launch group worker `target` submits is queued on its stream behind the hanging
    kernel, and so is that group wherever it runs again, as a kernel that hangs on its data would be: the
    GPU itself hangs, and the campaign's watchdog must charge that group alone while the other GPUs
    keep working. The group is named across processes as `tests.fake_launchers` names it."""

    def __init__(self, index: int, target: int):
        super().__init__(index)
        self.index, self.target = index, target
        self.hang = self.gpu.load(HANGING_PTX, "sm_90a").get_kernel("hang")

    def hangs(self, group) -> bool:
        name = identity(group)
        if misbehaviour_of(name) == "hang":
            return True
        return self.index == self.target and claim_first(f"hang-{self.index}", name)

    def stream_submit(self, groups, batch):
        if any(self.hangs(g) for g in groups):
            self.gpu.launch(self.hang, 1, 1, 0)  # the batch queues behind it on the GPU's stream: it never runs
        return super().stream_submit(groups, batch)

    def launch(self, group):
        if self.hangs(group):
            self.gpu.launch(self.hang, 1, 1, 0)
            self.gpu.sync()  # never returns
        return super().launch(group)


def hang_on_gpu_1(index: int) -> HangingGpuLauncher:
    return HangingGpuLauncher(index, 1)
