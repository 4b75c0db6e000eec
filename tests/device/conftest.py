"""The device suite (`tox -e device`): needs a CUDA GPU; every test skips with the reason where
there is none."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def gpu():
    from tcgen05_conformance.device.launch import Gpu, GpuUnavailable

    try:
        return Gpu()
    except GpuUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def hopper_gpu(gpu):
    from tcgen05_conformance.harness.backends.hopper import reason_for

    reason = reason_for(gpu.arch, gpu.name)
    if reason:
        pytest.skip(reason)
    return gpu
