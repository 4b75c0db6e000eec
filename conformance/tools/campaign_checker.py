"""The campaign's expected D computed by the integer checker instead of the Python model: the
oracle still reads each program's operands (its layout model: descriptors, swizzles, fragments,
sparsity metadata, imm-scale, scale-d), and the checker (`oracles/numerics/checker.h`, generated
from the judging profile's datapath) computes every inner product, on the GPU beside the tensor
core (`GpuReference`) or on the CPU through the same kernel source (`HostReference`, g++).

The Python model stays the reference: in every launch group the producer evaluates a sample of
programs with it (`Operands.sample`), and the worker compares the checker's D of those programs
with the model's before judging anything (`disagreement`); a difference stops the run.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Sequence

import numpy as np

from oracles.numerics import checker
from oracles.numerics.matmul import MatrixProduct, evaluate

THREADS = 256
GRID_LIMIT = 132 * 16  # CTAs of a reference launch (H100: 132 SMs)


@dataclass(frozen=True)
class Operands:
    """The operand codes of a launch group's programs, stacked: A [P, M, K] (stored elements),
    B [P, N, K_B], C [P, M, N], a sparse A's logical columns [P, M, K] (uint8) or None; the
    checker's parameters; and the sample the Python model evaluated: program indices within
    the group and their D [S, M, N]."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    columns: np.ndarray | None
    parameters: np.ndarray
    sample: np.ndarray
    sample_d: np.ndarray

    @property
    def inner_products(self) -> int:
        return int(self.c.size)


def operands(products: Sequence[MatrixProduct], every: int) -> Operands:
    """The operands of products that share one kernel form (so formats, K, profile and saturation),
    with the Python model's D of every `every`-th (the first included). ValueError when the
    checker cannot compute them (e.g. the `exact` profile, which has no truncating datapath)."""
    first = products[0]
    if any(p.key() != first.key() for p in products):
        raise ValueError("the products of one launch group differ in formats, K, profile or saturation")
    if first.a_scale is not None:
        raise ValueError("the checker computes no block-scaled products")
    parameters = checker.parameters(first.afmt, first.acc, first.a.shape[1], first.profile, b_fmt=first.bfmt,
                                    saturate=first.saturate)
    sample = np.arange(0, len(products), every)
    columns = None if first.columns is None else np.stack([p.columns for p in products]).astype(np.uint8)
    return Operands(np.stack([p.a for p in products]).astype(np.uint32), np.stack([p.b for p in products]).astype(np.uint32),
                    np.stack([p.c for p in products]).astype(np.uint32), columns, parameters, sample,
                    np.stack(evaluate([products[i] for i in sample])))


def disagreement(ops: Operands, d: np.ndarray, label: str) -> str | None:
    """None when the checker's D [P, M, N] equals the model's on the sample, else one line naming
    the first differing element with its inputs."""
    got = d[ops.sample]
    bad = np.argwhere(got != ops.sample_d)
    if not bad.size:
        return None
    s, m, n = (int(x) for x in bad[0])
    p = int(ops.sample[s])
    b_row = ops.b[p, n] if ops.columns is None else ops.b[p, n, ops.columns[p, m]]
    return (f"{label}: the integer checker's D differs from the Python model's in {len(bad)} element(s) of "
            f"{got.size} sampled; first: program {p} of the group, D[{m}, {n}]: a={[hex(int(x)) for x in ops.a[p, m]]} "
            f"b={[hex(int(x)) for x in b_row]} c={int(ops.c[p, m, n]):#x} checker={int(got[s, m, n]):#x} "
            f"model={int(ops.sample_d[s, m, n]):#x}")


@cache
def kernel_source() -> str:
    """The checker kernels' CUDA source with the headers they need."""
    from device.check_kernels import source
    from generators import numeric_stream

    return source(numeric_stream.C_SOURCE.read_text(), checker.C_SOURCE.read_text())


class GpuReference:
    """`reference_products` on a GPU (compiled by NVRTC once per worker); its copies and launch
    add up in `seconds` as "reference": GPU work of the campaign, like the tensor core's."""

    def __init__(self, gpu, arch: str, seconds: Counter):
        from device.check_kernels import compile_cubin

        self.gpu, self.seconds = gpu, seconds
        self.kernel = gpu.load_cubin(compile_cubin(kernel_source(), arch)).get_kernel("reference_products")

    def __call__(self, ops: Operands) -> np.ndarray:
        started = time.perf_counter()
        gpu = self.gpu
        products, rows, k = ops.a.shape
        cols, b_k = ops.b.shape[1], ops.b.shape[2]
        columns = ops.columns if ops.columns is not None else np.zeros(1, np.uint8)
        args = [gpu.to_device(x) for x in (ops.parameters, ops.a, ops.b, columns, ops.c)]
        out = gpu.empty(ops.c.shape, np.uint32)
        grid = min(GRID_LIMIT, -(-ops.c.size // THREADS))
        gpu.launch(self.kernel, grid, THREADS, 0, args[0], np.uint32(products), np.uint32(rows), np.uint32(cols),
                   args[1], args[2], np.uint32(b_k), args[3], np.uint32(ops.columns is not None), args[4], out)
        d = gpu.to_host(out)
        self.seconds["reference"] += time.perf_counter() - started
        return d.reshape(ops.c.shape)


class HostReference:
    """`reference_products` compiled for this CPU (g++), for runs without a GPU and for tests."""

    def __init__(self, directory: str | None = None):
        from device.check_kernels import host_library

        self.library = host_library(kernel_source(), directory or tempfile.mkdtemp(prefix="campaign-checker-"))

    def __call__(self, ops: Operands) -> np.ndarray:
        import ctypes

        def ptr(x: np.ndarray):
            return ctypes.c_void_p(x.ctypes.data)

        products, rows, _ = ops.a.shape
        cols, b_k = ops.b.shape[1], ops.b.shape[2]
        columns = ops.columns if ops.columns is not None else np.zeros(1, np.uint8)
        inputs = [np.ascontiguousarray(x) for x in (ops.parameters, ops.a, ops.b, columns, ops.c)]
        out = np.empty(ops.c.shape, np.uint32)
        u32 = ctypes.c_uint32
        self.library.reference_products(ptr(inputs[0]), u32(products), u32(rows), u32(cols), ptr(inputs[1]),
                                        ptr(inputs[2]), u32(b_k), ptr(inputs[3]), u32(ops.columns is not None),
                                        ptr(inputs[4]), ptr(out))
        return out
