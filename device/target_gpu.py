"""The GPU the Hopper device tools (`campaign`, `numerics measure`) run on, or a one-line reason why
there is none here: cuda-core missing, no usable CUDA device, or a GPU that cannot run sm_90a code."""

from __future__ import annotations

from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.device.launch import Gpu, GpuUnavailable

TARGET = "sm_90a"  # wgmma is sm_90a only (PTX ISA 9.7.15, Target ISA Notes); the mma.sync kernels share it


#: The GPUs that run each target's code, for the messages.
GPUS = {"sm_90a": "H100, H200", "sm_100a": "B200", "sm_103a": "B300"}


def hopper_gpu(command: str, target: str = TARGET) -> Gpu:
    """GPU 0, opened, when it runs `target` code (default `TARGET`; `numerics measure --tcgen05`
    asks for sm_100a or sm_103a); else GpuUnavailable naming what is missing for `command`.

    An architecture-specific target ("a" suffix) runs only on GPUs of exactly its compute capability."""
    try:
        import cuda.core  # noqa: F401
    except ImportError:
        raise GpuUnavailable(f"cuda-core is not installed (pip install 'tcgen05-conformance[device]'): "
                             f"{command} launches its kernels through it") from None
    gpu = Gpu()  # GpuUnavailable: no driver, no device
    major, minor = gpu.compute_capability
    if major * 10 + minor != TARGETS[target].sm:
        raise GpuUnavailable(f"{gpu.name} is {gpu.arch}; {command} runs {target} kernels, which need an "
                             f"sm_{TARGETS[target].sm} GPU ({GPUS[target]})")
    return gpu
