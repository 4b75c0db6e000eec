"""A planted GPU fault for the device suite, loaded as `tests.device.planted_kernels:HangingKernel`:
every case launches a kernel that waits on an mbarrier expecting two arrivals and gets one, so it
never completes (the hang the supervisor's watchdog must catch)."""

from __future__ import annotations

from typing import Callable, Sequence

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.device.ptx.kernels import ptx_header

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
