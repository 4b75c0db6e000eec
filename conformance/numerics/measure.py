"""Measure a numeric profile on silicon: random and discriminating inner products through
`mma.sync` and `wgmma` (Hopper) or `tcgen05.mma` (Blackwell, `tcgen05_conformance.device.tcgen05_inner_products`), run
on the GPU and diffed bit for bit against the model.

Each tile is one instruction: A rows and B rows are vectors of `tcgen05_conformance.generators.numeric_vectors.mix`
(every family), so D[m, n] = A[m] . B[n] + C[m, n] pairs the constructed a and b of one vector
on the diagonal (m = n, "paired") and crosses vectors elsewhere; every element of D is compared.
Work is cut in chunks of about 2^20 inner products; worker processes draw and pack a chunk, the
GPU runs it, workers run the model and compare, so the host's cores keep the GPU fed.

Every stage is timed (`tcgen05_conformance.harness.stages`), per combination and in all: in the workers
draw, pack, unpack, model and compare; on the GPU copy in, launch (until the GPU is done) and read
back; in the main process the waits for prepared chunks (the GPU idle for the host) and for the
last comparisons.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
import functools
from functools import cache
from typing import Callable, Sequence, TextIO

import numpy as np

from tcgen05_conformance.core.encoding.sdesc import SmemDescriptor
from tcgen05_conformance.core.encoding.sdesc import encode as encode_descriptor
from tcgen05_conformance.core.formats import get_format, storage_dtype
from tcgen05_conformance.core.instructions import WgmmaMma
from tcgen05_conformance.core.isa.fragments import MMA_SYNC_SHAPES, register_elements, wgmma_accumulator
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.inner_product_kernels import MmaSyncInstruction, mma_sync_kernel, wgmma_kernel
from tcgen05_conformance.device.tcgen05_inner_products import Tcgen05Form
from tcgen05_conformance.device.tcgen05_inner_products import forms as tcgen05_forms
from tcgen05_conformance.device.registers import pack_registers, unpack_registers
from tcgen05_conformance.oracles.numerics import checker, inner_product
from tcgen05_conformance.generators.numeric_vectors import FAMILIES, mix
from tcgen05_conformance.oracles.numerics.profiles import for_instruction

INPUT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
ACC_BITS = {"f32": 32, "f16": 16, "s32": 32}
# (input, accumulator, satfinite): every sm_90 mma.sync / wgmma dense format (PTX ISA 9.7.14.5.14,
# 9.7.15.5.2); integer accumulation both wrapping and with .satfinite.
HOPPER_FORMATS = (
    ("f16", "f32", False), ("f16", "f16", False), ("bf16", "f32", False), ("tf32", "f32", False),
    ("e4m3", "f32", False), ("e4m3", "f16", False), ("e5m2", "f32", False), ("e5m2", "f16", False),
    ("s8", "s32", False), ("s8", "s32", True), ("u8", "s32", False), ("u8", "s32", True),
)
WGMMA_N = 64
CHUNK_TILES = {"mma.sync": 8192, "wgmma": 256, "tcgen05": 32}  # 2^20 inner products per chunk
TCGEN05_CTAS = 148  # CTAs a tcgen05 batch launches at most (one per SM of a B200)
SAMPLES_PER_COMBINATION = 4096  # vectors kept with their silicon results (plus as many mismatches)


@dataclass(frozen=True)
class Combination:
    """One instruction family and format combination measured (a tcgen05 one carries its form)."""

    family: str  # "mma.sync", "wgmma" or "tcgen05"
    in_fmt: str  # A's format, and B's unless `b_fmt` names another
    acc: str
    satfinite: bool = False
    form: Tcgen05Form | None = None
    b_fmt: str | None = None  # mixed inputs: B's format (fp8: e4m3 x e5m2 or e5m2 x e4m3)

    @property
    def id(self) -> str:
        if self.form is not None:
            return self.form.id
        inputs = f"{self.in_fmt}x{self.b_fmt}" if self.b_fmt else self.in_fmt
        return f"{self.family}.{inputs}.{self.acc}{'.satfinite' if self.satfinite else ''}"

    @property
    def inputs(self) -> str | tuple[str, str]:
        """The input formats as the model and the vector families take them: one, or (A, B)."""
        return (self.in_fmt, self.b_fmt) if self.b_fmt else self.in_fmt

    @property
    def k(self) -> int:
        return self.form.k if self.form is not None else MMA_SYNC_SHAPES[INPUT_BITS[self.in_fmt]].k

    @property
    def tile(self) -> tuple[int, int]:
        if self.form is not None:
            return self.form.tile
        return (16, 8) if self.family == "mma.sync" else (64, WGMMA_N)

    @property
    def arch(self) -> str:
        return self.form.target if self.form is not None else "sm_90a"

    @property
    def entry(self) -> str:
        return {"mma.sync": "mma_sync_batch", "wgmma": "wgmma_batch", "tcgen05": "tcgen05_batch"}[self.family]

    def profile(self, name: str | dict[str, str]) -> str:
        """The variant of profile `name` for this instruction family (`sm_90a.mma_sync`); `name` may
        map families to profiles (names or profile files) instead."""
        if isinstance(name, dict):
            return name[self.family]
        return for_instruction(name, self.family.replace(".", "_"))

    @property
    def saturate(self) -> bool | None:
        return self.satfinite if self.acc == "s32" else None

    def wgmma(self) -> WgmmaMma:
        transpose = 0 if INPUT_BITS[self.in_fmt] == 16 else None  # imm-trans only for 16-bit types
        return WgmmaMma(n=WGMMA_N, k=self.k, dtype=self.acc, atype=self.in_fmt, btype=self.b_fmt or self.in_fmt,
                        satfinite=self.satfinite, imm_trans_a=transpose, imm_trans_b=transpose)

    def mma_sync(self) -> MmaSyncInstruction:
        return MmaSyncInstruction(self.k, self.in_fmt, self.b_fmt or self.in_fmt, self.acc, self.satfinite)


COMBINATIONS = tuple(Combination(f, i, a, s) for f in ("mma.sync", "wgmma") for i, a, s in HOPPER_FORMATS)
# mixed fp8 inputs, which mma.sync (m16n8k32) and wgmma take (PTX ISA 9.7.14.5.14, 9.7.15.5.2): measured
# apart from the 24 same-type combinations, to settle A-MMA-SP-MIXED-FP8 (docs/assumptions.md)
MIXED_FP8 = tuple(Combination(f, a, acc, b_fmt=b) for f in ("mma.sync", "wgmma")
                  for a, b in (("e4m3", "e5m2"), ("e5m2", "e4m3")) for acc in ("f32", "f16"))
#: Every Hopper combination, same-type then mixed; a combination's place here is its number in the
#: GPU checker's operand stream (`numerics_gpucheck.stream_parameters`).
HOPPER_COMBINATIONS = COMBINATIONS + MIXED_FP8


def tcgen05_combinations(target: str) -> tuple[Combination, ...]:
    """Every tcgen05 form of `target` (sm_100a or sm_103a) as a combination."""
    return tuple(Combination("tcgen05", f.in_fmt, f.acc, f.satfinite, f) for f in tcgen05_forms(target))


#: ue8m0 / ue4m3 codes drawn as block scales: 2^-8 .. 2^8, and positive normal ue4m3 values.
SCALE_CODES = {"ue8m0": (127 - 8, 127 + 9), "ue4m3": (0x08, 0x78)}
UNIT_SCALE = {"ue8m0": 127, "ue4m3": 0x38}  # the code of 1.0


# --- operands: tiles of vectors, packed into registers or shared-memory images ------------------


def tiles_of(c: Combination, tiles: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A [tiles, M, K], B [tiles, N, K], C [tiles, M, N] raw codes and the family of each A row
    [tiles, M]: max(M, N) vectors per tile (rows shuffled over the families); A row m is vector m's
    a, B row n is vector n's b."""
    m, n = c.tile
    rows = max(m, n)
    rng = np.random.default_rng(seed)
    a, b, cc, labels = mix(c.inputs, c.acc, c.k, tiles * rows, rng)
    order = rng.permutation(tiles * rows)
    a, b, cc, labels = a[order], b[order], cc[order], labels[order]
    a = a.reshape(tiles, rows, c.k)[:, :m]
    b = b.reshape(tiles, rows, c.k)[:, :n]
    cm = np.broadcast_to(cc.reshape(tiles, rows, 1)[:, :m], (tiles, m, n)).copy()
    return a, b, cm, labels.reshape(tiles, rows)[:, :m]


@dataclass(frozen=True)
class SmemImages:
    """Where each operand element of a wgmma tile sits: byte addresses [rows, K, bytes per element]
    of A and of B in one image, and the two descriptors (start addresses relative to the image)."""

    a_bytes: np.ndarray
    b_bytes: np.ndarray
    image_bytes: int
    a_desc: int
    b_desc: int


@cache
def smem_images_for(c: Combination) -> SmemImages:
    """K-major, no swizzle: 8-row core matrices of 16-byte rows, K chunks 128 bytes apart (LBO) and
    8-row groups 256 bytes apart (SBO); addresses from the oracle's gathering code, so silicon
    checks the same layout the oracle reads (PTX ISA 9.7.15.5.1.2)."""
    bits = INPUT_BITS[c.in_fmt]
    row_bytes = c.k * bits // 8  # 32 bytes for every Hopper type
    size = bits // 8

    def layout(start: int, rows: int) -> tuple[np.ndarray, int]:
        d = SmemDescriptor(start_address=start, leading_byte_offset=128, stride_byte_offset=128 * (row_bytes // 16),
                           swizzle="none")
        bit = element_bit_addresses(d, True, rows, c.k, storage_for(bits, False))
        return bit[..., None] // 8 + np.arange(size), encode_descriptor(d, "sm90")

    a_bytes, a_desc = layout(0, 64)
    b_bytes, b_desc = layout(64 * row_bytes, WGMMA_N)
    return SmemImages(a_bytes, b_bytes, (64 + WGMMA_N) * row_bytes, a_desc, b_desc)


def pack_images(img: SmemImages, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shared-memory images [tiles, image_bytes] holding A and B little-endian at their addresses."""
    out = np.zeros((a.shape[0], img.image_bytes), np.uint8)
    for matrix, where in ((a, img.a_bytes), (b, img.b_bytes)):
        out[:, where] = np.ascontiguousarray(matrix).view(np.uint8).reshape(*matrix.shape, -1)
    return out


# --- one chunk: prepare (worker), run (GPU), compare (worker) -----------------------------------


def pack_tiles(c: Combination, a: np.ndarray, b: np.ndarray, cm: np.ndarray, a_scale=None, b_scale=None) -> tuple:
    """What the kernel of `c` takes for tiles A [tiles, M, K], B [tiles, N, K], C [tiles, M, N]
    (and block scales [tiles, M or N, factors])."""
    acc_bits = ACC_BITS[c.acc]
    if c.family == "tcgen05":
        return c.form.pack(a, b, cm, a_scale, b_scale)
    if c.family == "mma.sync":
        shape = MMA_SYNC_SHAPES[INPUT_BITS[c.in_fmt]]
        bits = INPUT_BITS[c.in_fmt]
        return (pack_registers(a, *register_elements(shape.a, bits), bits),
                pack_registers(b, *register_elements(shape.b, bits), bits),
                pack_registers(cm, *register_elements(shape.c, acc_bits), acc_bits))
    img = smem_images_for(c)
    return (pack_images(img, a, b),
            pack_registers(cm, *register_elements(wgmma_accumulator(WGMMA_N), acc_bits), acc_bits))


def scales_of(c: Combination, tiles: int, seed: int) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """Random block scales [tiles, M, F] and [tiles, N, F] for a block-scaled form."""
    if c.form is None or not c.form.scale_fmt:
        return None, None
    lo, hi = SCALE_CODES[c.form.scale_fmt]
    rng = np.random.default_rng(seed ^ 0x5CA1E)
    m, n = c.tile
    return (rng.integers(lo, hi, (tiles, m, c.form.factors)).astype(np.uint8),
            rng.integers(lo, hi, (tiles, n, c.form.factors)).astype(np.uint8))


def prepare(c: Combination, tiles: int, seed: int) -> dict:
    """A chunk's operands (with block scales for a scaled form), what the kernel takes and the
    time of its stages (draw, pack)."""
    stages = Stages()
    with stages("draw"):
        a, b, cm, labels = tiles_of(c, tiles, seed)
        sa, sb = scales_of(c, tiles, seed)
    with stages("pack"):
        inputs = pack_tiles(c, a, b, cm, sa, sb)
    return {"a": a, "b": b, "c": cm, "labels": labels, "a_scale": sa, "b_scale": sb, "inputs": inputs, "stages": stages}


def d_fragment(c: Combination):
    fragment = MMA_SYNC_SHAPES[INPUT_BITS[c.in_fmt]].c if c.family == "mma.sync" else wgmma_accumulator(WGMMA_N)
    return register_elements(fragment, ACC_BITS[c.acc])


def unpack_d(c: Combination, d_words: np.ndarray) -> np.ndarray:
    """D codes [tiles, M, N] from what the kernel wrote."""
    if c.family == "tcgen05":
        return c.form.unpack(d_words)
    m, n = c.tile
    return unpack_registers(d_words, *d_fragment(c), ACC_BITS[c.acc], (m, n), storage_dtype(get_format(c.acc)))


def compare(c: Combination, chunk: dict, d_words: np.ndarray, profile: str, tiny: int = 0,
            expected: np.ndarray | None = None, cross_check: int = 0) -> dict:
    """Model vs silicon over every inner product of the chunk: counts per family, mismatches,
    samples (with up to `tiny` more whose silicon result is subnormal, for fitting underflow) and
    the time of its stages (unpack, model, compare). With `expected` (D codes [tiles, M, N] the
    integer checker computed), silicon is compared with the checker instead, and the model
    evaluates the first `cross_check` inner products only: CrossCheckError when the checker
    differs from it there."""
    stages = Stages()
    a, b, cm = chunk["a"], chunk["b"], chunk["c"]
    tiles, m, n = cm.shape
    with stages("unpack"):
        got = unpack_d(c, d_words).reshape(-1)
    a_all = np.broadcast_to(a[:, :, None, :], (tiles, m, n, c.k)).reshape(-1, c.k)
    b_all = np.broadcast_to(b[:, None, :, :], (tiles, m, n, c.k)).reshape(-1, c.k)
    rows = got.size if expected is None else min(cross_check, got.size)
    want = np.zeros(0, storage_dtype(get_format(c.acc)))
    with stages("model"):
        scales = {}
        if chunk.get("a_scale") is not None:
            f = c.form.factors
            scales = {"a_scale": np.broadcast_to(chunk["a_scale"][:, :, None], (tiles, m, n, f)).reshape(-1, f)[:rows],
                      "b_scale": np.broadcast_to(chunk["b_scale"][:, None], (tiles, m, n, f)).reshape(-1, f)[:rows],
                      "scale_fmt": c.form.scale_fmt, "kind": c.form.kind}
        if rows:
            want = inner_product(a_all[:rows], b_all[:rows], cm.reshape(-1)[:rows], c.inputs, c.acc,
                                 c.profile(profile), saturate=c.saturate, **scales)
    if expected is not None:
        with stages("cross-check"):
            by_checker = checker.as_storage(np.asarray(expected).reshape(-1), c.acc)
            checker.cross_check(_codes(by_checker[:rows]), _codes(want), a_all[:rows], b_all[:rows],
                                cm.reshape(-1)[:rows], c.id)
            want = by_checker
    with stages("compare"):
        result = _compared(c, chunk, got, want, a_all, b_all, tiny)
    return result | {"stages": stages}


def _codes(x: np.ndarray) -> np.ndarray:
    """Storage-dtype results as uint32 codes."""
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint32)


def _compared(c: Combination, chunk: dict, got: np.ndarray, want: np.ndarray, a_all: np.ndarray,
              b_all: np.ndarray, tiny: int) -> dict:
    """`compare`'s counts and samples of the model's results `want` against silicon's `got`."""
    cm, labels = chunk["c"], chunk["labels"]
    tiles, m, n = cm.shape
    family = np.full((tiles, m, n), len(FAMILIES), np.uint8)  # len(FAMILIES) = "cross"
    diag = np.arange(min(m, n))
    family[:, diag, diag] = labels[:, diag]
    family = family.reshape(-1)
    bad = want.view(np.dtype(f"u{want.dtype.itemsize}")) != got.view(np.dtype(f"u{got.dtype.itemsize}"))
    names = (*FAMILIES, "cross")
    keep = np.flatnonzero(bad)[:SAMPLES_PER_COMBINATION]
    keep = np.concatenate([keep, np.arange(min(SAMPLES_PER_COMBINATION, got.size))])
    if tiny and get_format(c.acc).kind == "float":
        magnitude = np.abs(got.astype(np.float64))
        subnormal = (magnitude > 0) & (magnitude < 2.0 ** get_format(c.acc).emin)
        keep = np.concatenate([keep, np.flatnonzero(subnormal)[:tiny]])
    keep = keep[np.sort(np.unique(keep, return_index=True)[1])]  # each vector once, a fit counts it once
    return {
        "inner_products": int(got.size),
        "per_family": {names[f]: int(v) for f, v in enumerate(np.bincount(family, minlength=len(names)))},
        "mismatches": int(bad.sum()),
        "mismatches_per_family": {names[f]: int(v) for f, v in enumerate(np.bincount(family[bad], minlength=len(names))) if v},
        "samples": {"a": a_all[keep], "b": b_all[keep], "c": cm.reshape(-1)[keep], "silicon": got[keep],
                    "model": want[keep], "family": family[keep], "mismatch": bad[keep]},
    }


def run_chunk(gpu, kernels: dict, c: Combination, chunk: dict, stages: Stages) -> np.ndarray:
    """D fragment words [tiles, registers, threads] from the GPU; copy in, launch (until the GPU
    is done) and read back timed into `stages`."""
    tiles = chunk["c"].shape[0]
    kernel = kernels[c.id]
    with stages("copy in"):
        inputs = [gpu.to_device(x) for x in chunk["inputs"]]
        if c.family == "tcgen05":
            d = gpu.empty(chunk["inputs"][1].shape, np.uint32)
        else:
            threads = 32 if c.family == "mma.sync" else 128
            d = gpu.empty((tiles, chunk["inputs"][-1].shape[1], threads), np.uint32)
    with stages("launch"):
        if c.family == "tcgen05":
            form = c.form
            units = min(tiles, TCGEN05_CTAS // form.ctas) * form.ctas
            gpu.launch(kernel, units, 128, form.smem_bytes, inputs[0], inputs[1], d, np.uint32(tiles),
                       cluster=form.ctas if form.ctas > 1 else None)
        elif c.family == "mma.sync":
            gpu.launch(kernel, min(tiles // 4 + 1, 1024), 128, 0, *inputs, d, np.uint32(tiles))
        else:
            img = smem_images_for(c)
            gpu.launch(kernel, min(tiles, 528), 128, img.image_bytes, inputs[0], inputs[1], d, np.uint32(tiles),
                       np.uint64(img.a_desc), np.uint64(img.b_desc))
        gpu.sync()
    with stages("read back"):
        return gpu.to_host(d)


def kernel_source(c: Combination) -> str:
    if c.family == "tcgen05":
        return c.form.kernel()
    if c.family == "mma.sync":
        return mma_sync_kernel(c.mma_sync())
    return wgmma_kernel(c.wgmma(), smem_images_for(c).image_bytes)


def select(only: Sequence[str], pool: Sequence[Combination] = COMBINATIONS) -> list[Combination]:
    """The combinations of `pool` (default Hopper's) whose id contains one of `only` (all when it is empty)."""
    return [c for c in pool if not only or any(s in c.id for s in only)]


def gpu_description(gpu) -> dict[str, str]:
    """Name, architecture and CUDA driver version of the GPU a measurement ran on (a stand-in
    without a driver says so)."""
    return {"gpu": gpu.name, "arch": gpu.arch, "driver": getattr(gpu, "driver", "no CUDA driver (a stand-in GPU)")}


class VectorRunner:
    """Given inner products through one combination on this machine's GPU: vector i sits on the
    diagonal of a tile (A row r, B row r, C[r, r], r = i mod min(M, N)); every other operand
    element is +0 (code 0) and every other scale 1, and only the diagonal is read back."""

    def __init__(self, gpu=None):
        from tcgen05_conformance.device.launch import Gpu

        self.gpu = gpu or Gpu()
        self.kernels: dict[str, object] = {}

    def describe(self) -> dict[str, str]:
        return gpu_description(self.gpu)

    def run(self, c: Combination, a: np.ndarray, b: np.ndarray, cv: np.ndarray, a_scale=None, b_scale=None) -> np.ndarray:
        if c.id not in self.kernels:
            self.kernels[c.id] = self.gpu.load(kernel_source(c), c.arch).get_kernel(c.entry)
        m, n = c.tile
        per = min(m, n)
        count = len(cv)
        tiles = -(-count // per)
        t, r = np.divmod(np.arange(count), per)
        A = np.zeros((tiles, m, c.k), a.dtype)
        B = np.zeros((tiles, n, c.k), b.dtype)
        C = np.zeros((tiles, m, n), np.asarray(cv).dtype)
        A[t, r], B[t, r], C[t, r, r] = a, b, cv
        sa = sb = None
        if c.form is not None and c.form.scale_fmt:
            unit = UNIT_SCALE[c.form.scale_fmt]
            sa = np.full((tiles, m, c.form.factors), unit, np.uint8)
            sb = np.full((tiles, n, c.form.factors), unit, np.uint8)
            if a_scale is not None:
                sa[t, r], sb[t, r] = a_scale, b_scale
        chunk = {"c": C, "inputs": pack_tiles(c, A, B, C, sa, sb)}
        return unpack_d(c, run_chunk(self.gpu, self.kernels, c, chunk, Stages()))[t, r, r]


def measure(gpu, combinations: Sequence[Combination], count: int, seed: int, profile: str | dict[str, str], jobs: int,
            log: TextIO | None = None, tiny: int = 0, observe: Callable[[Combination, dict], np.ndarray] | None = None,
            described: dict[str, str] | None = None, expected: Callable[..., np.ndarray] | None = None,
            cross_check: int = 0) -> tuple[dict, dict]:
    """Run `count` (rounded up to whole chunks) inner products per combination on `gpu` (a
    `tcgen05_conformance.device.launch.Gpu` that runs their targets) with `jobs` worker processes; the report (JSON-able,
    with the time of every stage per combination and in all: `stage_profile`) and the kept samples
    (arrays per combination; `tiny`: up to that many subnormal results more). Progress lines go to
    `log` (standard error when None, looked up at call time). `profile`: a profile (name or file),
    or one per instruction family. `observe(c, chunk, stages)`, with `described` saying what it is,
    stands in for the GPU (gpu None): the D fragment words it gives are judged as the GPU's are.
    `expected(c, chunk, profile, stages)`, the integer checker's D codes [tiles, M, N] of a chunk
    (computed on the GPU beside the tensor core), replaces the Python model, which then evaluates
    only the first `cross_check` inner products of each combination (`compare`)."""
    log = log or sys.stderr
    if observe is None:
        kernels = {c.id: gpu.load(kernel_source(c), c.arch).get_kernel(c.entry) for c in combinations}
        observe = functools.partial(run_chunk, gpu, kernels)
        described = gpu_description(gpu)
    report = {**(described or {}), "profile": profile, "seed": seed, "combinations": []}
    samples: dict[str, np.ndarray] = {}
    every = {where: Stages() for where in STAGE_PLACES}
    started = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        for ci, c in enumerate(combinations):
            t0 = time.perf_counter()
            tiles = CHUNK_TILES[c.family]
            chunks = -(-count // (tiles * c.tile[0] * c.tile[1]))
            prepared = [pool.submit(prepare, c, tiles, seed * 1_000_003 + ci * 10_007 + i) for i in range(chunks)]
            stages = {where: Stages() for where in STAGE_PLACES}
            gpu_s, compared, to_cross_check = 0.0, [], cross_check
            for future in prepared:
                with stages["main"]("wait for chunks"):
                    chunk = future.result()
                stages["workers"].merge(chunk.pop("stages"))
                g0 = time.perf_counter()
                d = observe(c, chunk, stages["gpu"])
                by_checker = None if expected is None else expected(c, chunk, profile, stages["gpu"])
                gpu_s += time.perf_counter() - g0
                compared.append(pool.submit(compare, c, chunk, d, profile, tiny, by_checker, to_cross_check))
                to_cross_check = max(0, to_cross_check - chunk["c"].size)
            with stages["main"]("wait for comparisons"):
                results = [f.result() for f in compared]
            for r in results:
                stages["workers"].merge(r["stages"])
            entry = {"id": c.id, "instruction": c.family, "profile": c.profile(profile),
                     "input": c.in_fmt, "b_input": c.b_fmt or c.in_fmt, "accumulator": c.acc, "satfinite": c.satfinite,
                     "k": c.k, "inner_products": sum(r["inner_products"] for r in results),
                     "mismatches": sum(r["mismatches"] for r in results),
                     "per_family": _sum_dicts(r["per_family"] for r in results),
                     "mismatches_per_family": _sum_dicts(r["mismatches_per_family"] for r in results),
                     "gpu_and_transfer_s": round(gpu_s, 3), "seconds": round(time.perf_counter() - t0, 3)}
            entry["stages"] = stage_profile(stages, entry["inner_products"])
            report["combinations"].append(entry)
            for where, timed in stages.items():
                every[where].merge(timed)
            for key in results[0]["samples"]:
                samples[f"{c.id}/{key}"] = np.concatenate([r["samples"][key] for r in results])[: 2 * SAMPLES_PER_COMBINATION + tiny]
            print(f"{c.id}: {entry['inner_products']} inner products, {entry['mismatches']} mismatches, "
                  f"{entry['seconds']} s", file=log, flush=True)
    report["seconds"] = round(time.perf_counter() - started, 3)
    report["inner_products"] = {c["id"]: c["inner_products"] for c in report["combinations"]}
    report["mismatches"] = sum(c["mismatches"] for c in report["combinations"])
    report["stages"] = stage_profile(every, sum(report["inner_products"].values()))
    return report, samples


STAGE_PLACES = ("workers", "gpu", "main")  # where a stage runs: the worker processes, the GPU, the main process


def stage_profile(stages: dict[str, Stages], inner_products: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per place and stage: wall seconds (summed over the worker processes for theirs), CPU
    seconds, and nanoseconds of wall time per inner product."""
    per = max(inner_products, 1)
    return {where: {name: {"seconds": round(timed.wall[name], 3), "cpu_seconds": round(timed.cpu[name], 3),
                           "ns_per_inner_product": round(1e9 * timed.wall[name] / per, 3)}
                    for name in timed.wall}
            for where, timed in stages.items()}


def stage_table(report: dict) -> str:
    """A report's stages in all as an aligned text table (place, stage, seconds, CPU seconds, ns per inner product)."""
    lines = [f"{'where':<8} {'stage':<22} {'seconds':>10} {'cpu s':>10} {'ns/inner product':>17}"]
    lines += [f"{where:<8} {name:<22} {v['seconds']:>10.3f} {v['cpu_seconds']:>10.3f} {v['ns_per_inner_product']:>17.3f}"
              for where, timed in report["stages"].items() for name, v in timed.items()]
    return "\n".join(lines)


def _sum_dicts(dicts) -> dict:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out

