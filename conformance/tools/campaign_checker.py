"""The campaign's expected D computed by the integer checker instead of the Python model: the
oracle still reads each program's operands (its layout model: descriptors, swizzles, fragments,
sparsity metadata, imm-scale, scale-d), and the checker (`oracles/numerics/checker.h`, generated
from the judging profile's datapath) computes every inner product, on the GPU beside the tensor
core (`GpuReference`) or on the CPU through the same kernel source (`HostReference`, g++),
straight into the words the tensor-core kernel stores (`device.hopper_batch.d_word_elements`).

The Python model stays the reference: the producer evaluates every N-th program of a chunk with it
(`model_sample`, one call of the model per key), and the worker compares the checker's D of those
programs with the model's before judging anything (`disagreement`); a difference stops the run.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Sequence

import numpy as np

from device.hopper_batch import d_word_elements, unpack_d
from device.ptx.kernels import HopperForm
from oracles.numerics import checker
from oracles.numerics.matmul import MatrixProduct, evaluate

THREADS = 256
GRID_LIMIT = 132 * 16  # CTAs of a reference launch (H100: 132 SMs)


@dataclass(frozen=True)
class Operands:
    """The operand codes of a launch group's programs, stacked: A [P, M, K] (stored elements),
    B [P, N, K_B], C [P, M, N], a sparse A's logical columns [P, M, K] (uint8) or None; the
    checker's parameters; and the sample the Python model evaluated: program indices within
    the group (possibly none) and their D [S, M, N]."""

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


def model_sample(products: Sequence[MatrixProduct | None], every: int) -> dict[int, np.ndarray]:
    """The Python model's D of every `every`-th product (the first included; None entries are
    passed over), evaluated together (one call of the model per key) as {index: D}; products the
    model cannot evaluate (a profile with no datapath for their formats) are left out."""
    by_key: dict[tuple, list[int]] = {}
    for i in range(0, len(products), every):
        if products[i] is not None:
            by_key.setdefault(products[i].key(), []).append(i)
    sample = {}
    for members in by_key.values():
        try:
            sample.update(zip(members, evaluate([products[i] for i in members])))
        except ValueError:
            continue
    return sample


def operands(products: Sequence[MatrixProduct], sample: dict[int, np.ndarray]) -> Operands:
    """The operands of products that share one kernel form (so formats, K, profile and saturation),
    with `sample`, the Python model's D of some of them by position. ValueError when the checker
    cannot compute them (e.g. the `exact` profile, which has no truncating datapath)."""
    first = products[0]
    if any(p.key() != first.key() for p in products):
        raise ValueError("the products of one launch group differ in formats, K, profile or saturation")
    if first.a_scale is not None:
        raise ValueError("the checker computes no block-scaled products")
    parameters = checker.parameters(first.afmt, first.acc, first.a.shape[1], first.profile, b_fmt=first.bfmt,
                                    saturate=first.saturate)
    positions = np.array(sorted(sample), dtype=np.int64)
    m, n = first.c.shape
    sample_d = np.stack([sample[i] for i in positions]) if positions.size else np.zeros((0, m, n), np.uint32)
    columns = None if first.columns is None else np.stack([p.columns for p in products]).astype(np.uint8)
    return Operands(np.stack([p.a for p in products]).astype(np.uint32), np.stack([p.b for p in products]).astype(np.uint32),
                    np.stack([p.c for p in products]).astype(np.uint32), columns, parameters, positions, sample_d)


def disagreement(ops: Operands, form: HopperForm, words: np.ndarray, label: str) -> str | None:
    """None when the checker's D (`words` [P, threads, words out] of kernel form `form`) equals
    the model's on the sample, else one line naming the first differing element with its inputs."""
    got = unpack_d(form, words[ops.sample])
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


def _arguments(ops: Operands, form: HopperForm) -> tuple[list, list, tuple[int, int, int]]:
    """The kernel's arrays (parameters, A, B, columns, C, the word table) and scalars before and
    after the arrays, and the shape of the words it writes [P, threads, words out]."""
    products, rows, _ = ops.a.shape
    cols, b_k = ops.b.shape[1], ops.b.shape[2]
    table, bits = _word_table(form)
    columns = ops.columns if ops.columns is not None else np.zeros(1, np.uint8)
    arrays = [np.ascontiguousarray(x) for x in (ops.parameters, ops.a, ops.b, columns, ops.c, table)]
    scalars = [products, rows, cols, b_k, int(ops.columns is not None), table.shape[0], table.shape[1], bits]
    return arrays, scalars, (products, form.threads, form.words_out)


@cache
def _word_table(form: HopperForm) -> tuple[np.ndarray, int]:
    return d_word_elements(form)


class GpuReference:
    """`reference_products` on a GPU (compiled by NVRTC once per worker); its copies and launch
    add up in `seconds` as "reference": GPU work of the campaign, like the tensor core's."""

    def __init__(self, gpu, arch: str, seconds: Counter):
        from device.check_kernels import compile_cubin

        self.gpu, self.seconds = gpu, seconds
        self.kernel = gpu.load_cubin(compile_cubin(kernel_source(), arch)).get_kernel("reference_products")
        self.constants: dict[bytes, object] = {}  # parameters, word tables: copied once, kept on the GPU

    def constant(self, x: np.ndarray):
        key = x.dtype.str.encode() + x.tobytes()
        if key not in self.constants:
            self.constants[key] = self.gpu.to_device(x)
        return self.constants[key]

    def __call__(self, ops: Operands, form: HopperForm) -> np.ndarray:
        """The words [P, threads, words out] the tensor core's kernel would store for the checker's D."""
        started = time.perf_counter()
        gpu = self.gpu
        arrays, (products, rows, cols, b_k, sparse, words, per_word, bits), shape = _arguments(ops, form)
        parameters, table = self.constant(arrays[0]), self.constant(arrays[5])
        a, b, c = (gpu.to_device(x) for x in (arrays[1], arrays[2], arrays[4]))
        columns = gpu.to_device(arrays[3]) if sparse else self.constant(arrays[3])
        out = gpu.empty(shape, np.uint32)
        grid = min(GRID_LIMIT, -(-products * words // THREADS))
        u32 = np.uint32
        gpu.launch(self.kernel, grid, THREADS, 0, parameters, u32(products), u32(rows), u32(cols), a, b, u32(b_k), columns,
                   u32(sparse), c, table, u32(words), u32(per_word), u32(bits), out)
        result = gpu.to_host(out)
        self.seconds["reference"] += time.perf_counter() - started
        return result


class HostReference:
    """`reference_products` compiled for this CPU (g++), for runs without a GPU and for tests."""

    def __init__(self, directory: str | None = None):
        from device.check_kernels import host_library

        self.library = host_library(kernel_source(), directory or tempfile.mkdtemp(prefix="campaign-checker-"))

    def __call__(self, ops: Operands, form: HopperForm) -> np.ndarray:
        """As `GpuReference`, computed on the CPU."""
        import ctypes

        arrays, (products, rows, cols, b_k, sparse, words, per_word, bits), shape = _arguments(ops, form)
        parameters, a, b, columns, c, table = (ctypes.c_void_p(x.ctypes.data) for x in arrays)
        out = np.empty(shape, np.uint32)
        u32 = ctypes.c_uint32
        self.library.reference_products(parameters, u32(products), u32(rows), u32(cols), a, b, u32(b_k), columns,
                                        u32(sparse), c, table, u32(words), u32(per_word), u32(bits),
                                        ctypes.c_void_p(out.ctypes.data))
        return out
