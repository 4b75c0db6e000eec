"""The campaign's expected D computed by the integer checker instead of the Python model: the
oracle still reads each program's operands (its layout model: descriptors, swizzles, fragments,
sparsity metadata, imm-scale, scale-d), and the checker (`oracles/numerics/checker.h`, generated
from the judging profile's datapath) computes every inner product, on the GPU beside the tensor
core (`GpuReference`) or on the CPU through the same kernel source (`HostReference`, g++),
straight into the words the tensor-core kernel stores (`tcgen05_conformance.device.hopper_batch.d_word_elements`).

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
from typing import Callable, Sequence

import numpy as np

from tcgen05_conformance.numerics.gpu_checker import THREADS, checker_kernels_source, grid_for
from tcgen05_conformance.device.check_kernels import JOB_KERNELS
from tcgen05_conformance.device.hopper_batch import d_word_elements, unpack_d
from tcgen05_conformance.device.ptx.kernels import HopperForm
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct, evaluate

#: The checker's kernels, in launch order: the operands' codes decoded to terms, then D.
CHECK_KERNELS = ("decode_operands", "reference_products")
CONSTANTS_KEPT = 1024  # arrays kept on a GPU across launches (a form's word table: up to 128 KiB)


class DeviceConstants:
    """Arrays copied to a GPU once and kept there across launches (parameters, a form's tables):
    by `key` (what determines the array, e.g. its name and kernel form: no hashing of a large
    table per launch), else by content; at most CONSTANTS_KEPT, the oldest out (freed in stream
    order, after the launches that read it)."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.kept: dict = {}

    def __call__(self, x: np.ndarray, key: tuple | None = None):
        key = key or (x.dtype.str, x.shape, x.tobytes())
        if key not in self.kept:
            if len(self.kept) >= CONSTANTS_KEPT:
                del self.kept[next(iter(self.kept))]
            self.kept[key] = self.gpu.to_device(x)
        return self.kept[key]


@dataclass(frozen=True)
class Operands:
    """The operand codes of a launch group's programs, in one uint32 buffer (one copy to the GPU):
    A [P, M, K] (stored elements), B [P, N, K_B], C [P, M, N], then a sparse A's logical columns
    [P, M, K] (bytes, four to a word), then a block-scaled kind's scale factors, A's [P, M, F] and
    B's [P, N, F]; `shape` is (P, M, N, K, K_B), `factors` F (0: unscaled). Also the checker's
    parameters, and the sample the Python model evaluated: program indices within the group
    (possibly none) and their D [S, M, N]."""

    words: np.ndarray
    shape: tuple[int, int, int, int, int]
    sparse: bool
    parameters: np.ndarray
    sample: np.ndarray
    sample_d: np.ndarray
    factors: int = 0

    @property
    def offsets(self) -> tuple[int, int, int]:
        """Where B, C and the columns start in `words`."""
        p, m, n, k, k_b = self.shape
        b_at = p * m * k
        c_at = b_at + p * n * k_b
        return b_at, c_at, c_at + p * m * n

    @property
    def scales_at(self) -> int:
        """Where the scale factors start in `words` (0 when unscaled: no offset holds them)."""
        if not self.factors:
            return 0
        p, m, _, k, _ = self.shape
        return self.offsets[2] + (-(-p * m * k // 4) if self.sparse else 0)

    @property
    def a(self) -> np.ndarray:
        p, m, _, k, _ = self.shape
        return self.words[:p * m * k].reshape(p, m, k)

    @property
    def b(self) -> np.ndarray:
        p, _, n, _, k_b = self.shape
        b_at, c_at, _ = self.offsets
        return self.words[b_at:c_at].reshape(p, n, k_b)

    @property
    def c(self) -> np.ndarray:
        p, m, n, _, _ = self.shape
        _, c_at, columns_at = self.offsets
        return self.words[c_at:columns_at].reshape(p, m, n)

    @property
    def columns(self) -> np.ndarray | None:
        if not self.sparse:
            return None
        p, m, _, k, _ = self.shape
        return self.words[self.offsets[2]:].view(np.uint8)[:p * m * k].reshape(p, m, k)

    @property
    def scales(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The scale factors' codes, A's [P, M, F] and B's [P, N, F]."""
        if not self.factors:
            return None
        p, m, n, _, _ = self.shape
        at, f = self.scales_at, self.factors
        return (self.words[at:at + p * m * f].reshape(p, m, f),
                self.words[at + p * m * f:at + (p * m + p * n) * f].reshape(p, n, f))

    @property
    def inner_products(self) -> int:
        p, m, n, _, _ = self.shape
        return p * m * n


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
    """The operands of products that share one kernel form (so formats, K, profile, saturation and
    scaling), with `sample`, the Python model's D of some of them by position. ValueError when the
    checker cannot compute them (e.g. the `exact` profile, which has no truncating datapath)."""
    first = products[0]
    if any(p.key() != first.key() for p in products):
        raise ValueError("the products of one launch group differ in formats, K, profile, saturation or scaling")
    scaled = first.a_scale is not None
    factors = first.a_scale.shape[1] if scaled else 0
    parameters = checker.parameters(first.afmt, first.acc, first.a.shape[1], first.profile, b_fmt=first.bfmt,
                                    saturate=first.saturate, scale_fmt=first.scale_fmt if scaled else None,
                                    factors=factors, kind=first.kind)
    positions = np.array(sorted(sample), dtype=np.int64)
    (m, k), (n, k_b) = first.a.shape, first.b.shape
    sample_d = np.stack([sample[i] for i in positions]) if positions.size else np.zeros((0, m, n), np.uint32)
    parts = [np.stack([getattr(p, name) for p in products]).astype(np.uint32).ravel() for name in "abc"]
    if first.columns is not None:
        columns = np.stack([p.columns for p in products]).astype(np.uint8).ravel()
        parts.append(np.pad(columns, (0, -columns.size % 4)).view(np.uint32))
    if scaled:
        parts += [np.stack([getattr(p, name) for p in products]).astype(np.uint32).ravel() for name in ("a_scale", "b_scale")]
    return Operands(np.concatenate(parts), (len(products), m, n, k, k_b), first.columns is not None, parameters,
                    positions, sample_d, factors)


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


def _jobs(ops: Operands, table: np.ndarray, bits: int, addresses: tuple[int, int, int, int, int, int]) -> list[np.ndarray]:
    """The `decode_operands` and `reference_products` jobs of a group's operands, in launch order:
    `addresses` of the checker's parameters, the operand words (decoded in place), the word table,
    the checker's words out, the tensor core's words to compare with and the counts of differing
    words (0: no comparison)."""
    products, rows, cols, k, b_k = ops.shape
    parameters, words, table_at, out, observed, differing = addresses
    b_at, c_at, columns_at = ops.offsets
    scale_words = products * (rows + cols) * ops.factors
    return [JOB_KERNELS["decode_operands"].table([[parameters, words, products * rows * k, b_at, products * cols * b_k,
                                                  ops.scales_at, scale_words]]),
            JOB_KERNELS["reference_products"].table(
                [[parameters, products, rows, cols, words, b_k, b_at, c_at, columns_at, int(ops.sparse), ops.scales_at,
                  table_at, table.shape[0], table.shape[1], bits, out, observed, differing]])]


@dataclass(frozen=True)
class ElementPerWord:
    """D handed back as codes, one element per 32-bit word, row-major: [M, N] words, a 16-bit code
    in the low half. So a caller that reads D itself (tcgen05's D, unpacked from its TMEM image by
    `Tcgen05Form.unpack`) compares codes with codes, where a Hopper form's words are its kernel's
    registers."""

    m: int
    n: int

    @property
    def threads(self) -> int:
        return self.m

    @property
    def words_out(self) -> int:
        return self.n


@cache
def word_table(form: HopperForm | ElementPerWord) -> tuple[np.ndarray, int]:
    """Which element of D each word of `form` holds at which bits: the word table and bits per element."""
    if isinstance(form, ElementPerWord):
        return np.arange(form.m * form.n, dtype=np.int32).reshape(-1, 1), 32
    return d_word_elements(form)


def checker_module(gpu, arch: str, cache_dir: str | None = None):
    """The checker's kernels (`checker_kernels_source`) compiled by NVRTC for `arch`, loaded on `gpu`
    (once per GPU worker, while the producers start); with `cache_dir`, the cubin is kept there
    (`tcgen05_conformance.device.kernel_cache`, keyed by NVRTC's version and the source) for later runs."""
    from tcgen05_conformance.device.check_kernels import compile_cubin, nvrtc_version
    from tcgen05_conformance.device.kernel_cache import KernelCache

    if cache_dir is None:
        return gpu.load_cubin(compile_cubin(checker_kernels_source(), arch))
    source = f"// NVRTC {nvrtc_version()}\n{checker_kernels_source()}"  # a new NVRTC never meets a stale cubin
    return gpu.load_cubin(KernelCache(cache_dir, assemble=compile_cubin).get(source, arch))


class GpuReference:
    """`decode_operands` and `reference_products` on a GPU (from `checker_module`); their copies
    and launches add up in `seconds` as "reference": GPU work of the campaign, like the tensor core's."""

    def __init__(self, gpu, module, seconds: Counter):
        self.gpu, self.seconds = gpu, seconds
        self.kernels = [module.get_kernel(JOB_KERNELS[name].entry) for name in CHECK_KERNELS]
        self.constant = DeviceConstants(gpu)  # parameters, word tables

    def __call__(self, ops: Operands, form: HopperForm | ElementPerWord) -> np.ndarray:
        """The words [P, threads, words out] the tensor core's kernel would store for the checker's D
        (or with `ElementPerWord`, D's codes [P, M, N])."""
        started = time.perf_counter()
        gpu = self.gpu
        table, bits = word_table(form)
        parameters, table_on_gpu = self.constant(ops.parameters), self.constant(table, ("words", form))
        words = gpu.to_device(ops.words)
        out = gpu.empty((ops.shape[0], form.threads, form.words_out), np.uint32)
        jobs = _jobs(ops, table, bits, (parameters.address, words.address, table_on_gpu.address, out.address, 0, 0))
        work = (ops.words.size, out.shape[0] * THREADS)  # the checker: a block per program
        for kernel, job, amount in zip(self.kernels, jobs, work):
            gpu.launch(kernel, grid_for(amount), THREADS, 0, np.uint64(0), gpu.to_device(job), np.uint32(1))
        result = gpu.to_host(out)
        self.seconds["reference"] += time.perf_counter() - started
        return result


class HostReference:
    """`decode_operands` and `reference_products` compiled for this CPU (g++), for runs without a
    GPU and for tests."""

    def __init__(self, directory: str | None = None):
        from tcgen05_conformance.device.check_kernels import host_library

        self.library = host_library(checker_kernels_source(), directory or tempfile.mkdtemp(prefix="campaign-checker-"))

    def __call__(self, ops: Operands, form: HopperForm | ElementPerWord) -> np.ndarray:
        """As `GpuReference`, computed on the CPU."""
        return self.compared(ops, form, None)[0]

    def compared(self, ops: Operands, form: HopperForm | ElementPerWord,
                 observed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The checker's words, and per program the count of words in which `observed` (the
        tensor core's words, shaped as the checker's) differs from them, as the kernel counts them
        (zeros without `observed`)."""
        import ctypes

        table, bits = word_table(form)
        words = ops.words.copy()  # decoded in place: the caller's codes stay codes
        parameters, table = (np.ascontiguousarray(x) for x in (ops.parameters, table))
        out = np.empty((ops.shape[0], form.threads, form.words_out), np.uint32)
        differing = np.zeros(ops.shape[0], np.uint32)
        seen = None if observed is None else np.ascontiguousarray(observed, np.uint32)
        jobs = _jobs(ops, table, bits, (parameters.ctypes.data, words.ctypes.data, table.ctypes.data, out.ctypes.data,
                                        0 if seen is None else seen.ctypes.data, differing.ctypes.data))
        for name, job in zip(CHECK_KERNELS, jobs):
            getattr(self.library, JOB_KERNELS[name].entry)(None, ctypes.c_void_p(job.ctypes.data), ctypes.c_uint32(1))
        return out, differing


def tiles_checked(reference: GpuReference | HostReference) -> Callable[..., np.ndarray]:
    """`numerics measure`'s `expected` for tcgen05 forms: a chunk's D codes [tiles, M, N], computed
    by the integer checker on `reference` (the GPU beside the tensor core, or this CPU) from the
    chunk's operand codes and block scale factors, under the profile `measure` judges with."""

    def scales(c, chunk: dict, tile: int) -> dict:
        if chunk.get("a_scale") is None:
            return {}
        return {"a_scale": chunk["a_scale"][tile], "b_scale": chunk["b_scale"][tile], "scale_fmt": c.form.scale_fmt,
                "kind": c.form.kind}

    def expected(c, chunk: dict, profile, stages) -> np.ndarray:
        with stages("checker"):
            products = [MatrixProduct(chunk["a"][t], chunk["b"][t], chunk["c"][t], c.in_fmt, c.b_fmt or c.in_fmt, c.acc,
                                      c.profile(profile), saturate=c.saturate, **scales(c, chunk, t))
                        for t in range(chunk["c"].shape[0])]
            m, n = chunk["c"].shape[1:]
            return reference(operands(products, {}), ElementPerWord(m, n))

    return expected
