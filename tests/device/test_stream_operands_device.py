"""Stream data sets on a GPU: the `stream_*` kernels and `sample_rows`, compiled by NVRTC, draw
exactly what their numpy twin draws (the cases of tests/test_stream_operands.py, launched as many
blocks of many threads)."""

from __future__ import annotations

import numpy as np
import pytest

from tcgen05_conformance.device.check_kernels import JOB_KERNELS
from tcgen05_conformance.device.launch import DeviceArray
from tests import test_stream_operands as cases


@pytest.fixture(scope="module")
def run(gpu) -> cases.Run:
    from tcgen05_conformance.numerics.gpu_checker import checker_kernels_source
    from tcgen05_conformance.device.check_kernels import compile_cubin

    module = gpu.load_cubin(compile_cubin(checker_kernels_source(), gpu.arch))

    def launch(name: str, *args, out: int) -> np.ndarray:
        values = [gpu.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel = JOB_KERNELS[name]
        job = gpu.to_device(kernel.table([[0 if v is None else v.address if isinstance(v, DeviceArray) else v
                                           for v in values]]))
        gpu.launch(module.get_kernel(kernel.entry), 7, 96, 0, np.uint64(0), job, np.uint32(1))
        return gpu.to_host(values[out])
    return launch


@pytest.mark.parametrize("formats,inputs", cases.SPECS, ids=cases.SPEC_IDS)
def test_kernels_draw_what_the_twin_draws(run, formats, inputs):
    s = cases.spec(formats, inputs)
    cases.check_words(run, s)
    cases.check_operand_codes(run, s)
    for field_bits in (1, 2):
        cases.check_metadata(run, s, field_bits)
        cases.check_columns(run, s, field_bits)
    for element_bytes in (1, 2, 4):
        cases.check_operand_images(run, s, element_bytes)
    cases.check_operand_masks(run, s)
    cases.check_sample_rows(run)
