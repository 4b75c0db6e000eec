"""The H100 inner-product harness without a GPU: register fragments against the PTX ISA's
groupID / threadID_in_group formulas (9.7.14.5.8-14, written out here independently of the CuTe
layouts the code evaluates), packing round trips, the wgmma shared-memory image against the
canonical no-swizzle K-major layout worked by hand, the kernels assembling for sm_90a, the
comparison catching a planted one-bit error, and the GPU stages timed apart."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tcgen05_conformance.core.isa.fragments import MMA_SYNC_SHAPES, register_elements, wgmma_accumulator
from tcgen05_conformance.numerics.measure import (
    ACC_BITS,
    COMBINATIONS,
    MIXED_FP8,
    compare,
    d_fragment,
    kernel_source,
    pack_images,
    prepare,
    run_chunk,
    smem_images_for,
)
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.assembler import assemble
from tcgen05_conformance.device.registers import pack_registers, unpack_registers
from tcgen05_conformance.oracles.numerics import inner_product
from tests.conftest import needs_assembler

LANES = np.arange(32)
GROUP, THREAD_IN_GROUP = LANES // 4, LANES % 4


def isa_a(k: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """A fragment (row, col) [reg, lane, elem] from the ISA's formulas for m16n8k{8,16,32}."""
    per = 32 // bits
    rows, cols = np.zeros((4, 32, per), int), np.zeros((4, 32, per), int)
    for reg in range(4):
        for j in range(per):
            i = reg * per + j  # the ISA's element index a_i
            rows[reg, :, j] = GROUP + 8 * (reg % 2)
            cols[reg, :, j] = THREAD_IN_GROUP * per + (i % per) + (k // 2) * (reg // 2)
    return rows, cols


def isa_b(k: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """B fragment (n, k) [reg, lane, elem]: k = threadID_in_group * per + j (+ K/2), n = groupID."""
    per = 32 // bits
    n, kk = np.zeros((2, 32, per), int), np.zeros((2, 32, per), int)
    for reg in range(2):
        for j in range(per):
            n[reg, :, j] = GROUP
            kk[reg, :, j] = THREAD_IN_GROUP * per + j + (k // 2) * reg
    return n, kk


@pytest.mark.parametrize("bits", sorted(MMA_SYNC_SHAPES))
def test_mma_sync_fragments_match_the_isa_formulas(bits):
    shape = MMA_SYNC_SHAPES[bits]
    for got, want in ((register_elements(shape.a, bits), isa_a(shape.k, bits)),
                      (register_elements(shape.b, bits), isa_b(shape.k, bits))):
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    rows, cols = register_elements(shape.c, 32)  # c_i: row groupID (+8 for i >= 2), col 2 tid + i % 2
    reg = np.arange(4)[:, None, None]
    assert np.array_equal(rows, (GROUP[None, :, None] + 8 * (reg >= 2)).repeat(1, axis=2))
    assert np.array_equal(cols, (2 * THREAD_IN_GROUP[None, :, None] + reg % 2).repeat(1, axis=2))


def test_wgmma_accumulator_matches_the_isa_layout():
    """m64nN D: thread t of warp w holds row 16 w + groupID (+8), columns 8 i + 2 tid + {0, 1}."""
    n = 64
    rows, cols = register_elements(wgmma_accumulator(n), 32)
    t = np.arange(128)
    for r in range(n // 2):
        assert np.array_equal(rows[r, :, 0], 16 * (t // 32) + (t % 32) // 4 + 8 * ((r // 2) % 2))
        assert np.array_equal(cols[r, :, 0], 8 * (r // 4) + 2 * (t % 4) + r % 2)


@pytest.mark.parametrize("fragment,bits", [(MMA_SYNC_SHAPES[16].a, 16), (MMA_SYNC_SHAPES[8].a, 8),
                                           (MMA_SYNC_SHAPES[32].b, 32), (wgmma_accumulator(64), 16)])
def test_each_element_is_held_once_and_packing_round_trips(fragment, bits):
    rows, cols = register_elements(fragment, bits)
    shape = (int(rows.max()) + 1, int(cols.max()) + 1)
    assert len(set(zip(rows.ravel(), cols.ravel()))) == rows.size == shape[0] * shape[1]
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    matrix = np.random.default_rng(0).integers(0, 1 << bits, (3, *shape), dtype=np.uint64).astype(dtype)
    words = pack_registers(matrix, rows, cols, bits)
    assert np.array_equal(unpack_registers(words, rows, cols, bits, shape, dtype), matrix)


def test_wgmma_image_is_the_no_swizzle_k_major_layout():
    """9.7.15.5.1.2: 8 x 16-byte core matrices; K-adjacent ones LBO = 128 bytes apart, 8-row groups
    SBO = 256 bytes apart (32-byte rows); B after A's 64 rows."""
    c = next(x for x in COMBINATIONS if x.id == "wgmma.f16.f32")
    img = smem_images_for(c)
    a = np.arange(64 * 16, dtype=np.uint16).reshape(1, 64, 16)
    b = (np.arange(64 * 16, dtype=np.uint16) + 4096).reshape(1, 64, 16)
    image = pack_images(img, a, b).view(np.uint16)[0]
    for matrix, base in ((a[0], 0), (b[0], 64 * 32)):
        for row in (0, 7, 8, 63):
            for k in (0, 7, 8, 15):
                byte = base + (row // 8) * 256 + (k * 2 // 16) * 128 + (row % 8) * 16 + (k * 2) % 16
                assert image[byte // 2] == matrix[row, k]


def test_the_mixed_fp8_combinations_are_the_isas_and_draw_b_in_its_own_format():
    """mma.sync and wgmma take e4m3 x e5m2 and e5m2 x e4m3 with f32 or f16 accumulators (PTX ISA
    9.7.14.5.14, 9.7.15.5.2): 8 combinations, each naming both formats in its instruction. Their
    B operands are drawn in B's format: e5m2 vectors reach magnitudes above e4m3's largest finite
    value (448), e4m3 ones never do."""
    from tcgen05_conformance.core.formats import values

    assert sorted(c.id for c in MIXED_FP8) == sorted(f"{f}.{a}x{b}.{acc}" for f in ("mma.sync", "wgmma")
                                                     for a, b in (("e4m3", "e5m2"), ("e5m2", "e4m3"))
                                                     for acc in ("f32", "f16"))
    for c in MIXED_FP8:
        if c.family == "mma.sync":
            assert f".{c.acc}.{c.in_fmt}.{c.b_fmt}.{c.acc} " in c.mma_sync().render(), c.id
        else:
            assert (c.wgmma().atype, c.wgmma().btype) == (c.in_fmt, c.b_fmt), c.id
        chunk = prepare(c, 64, seed=5)
        finite = {x: (v := values(chunk[x].ravel(), fmt))[np.isfinite(v)] for x, fmt in (("a", c.in_fmt), ("b", c.b_fmt))}
        largest = {x: float(np.abs(v).max()) for x, v in finite.items()}
        assert (largest["a"] > 448) == (c.in_fmt == "e5m2") and (largest["b"] > 448) == (c.b_fmt == "e5m2"), (c.id, largest)


@needs_assembler
def test_every_kernel_assembles_for_sm_90a():
    for c in COMBINATIONS + MIXED_FP8:
        result = assemble(kernel_source(c), "sm_90a")
        assert result.ok, (c.id, result.diagnostics[:2])


@pytest.mark.parametrize("cid", ["mma.sync.e4m3.f16", "wgmma.tf32.f32", "mma.sync.s8.s32.satfinite",
                                 "mma.sync.e4m3xe5m2.f32", "wgmma.e5m2xe4m3.f16"])
def test_compare_counts_a_planted_one_bit_error(cid):
    """Silicon simulated by the model itself: 0 mismatches; one flipped bit: exactly 1."""
    c = next(x for x in COMBINATIONS + MIXED_FP8 if x.id == cid)
    chunk = prepare(c, 8, seed=3)
    a, b, cm = chunk["a"], chunk["b"], chunk["c"]
    tiles, m, n = cm.shape
    want = inner_product(np.broadcast_to(a[:, :, None], (tiles, m, n, c.k)).reshape(-1, c.k),
                         np.broadcast_to(b[:, None], (tiles, m, n, c.k)).reshape(-1, c.k),
                         cm.reshape(-1), c.inputs, c.acc, c.profile("sm_90a"), saturate=c.saturate)
    words = pack_registers(want.reshape(tiles, m, n), *d_fragment(c), ACC_BITS[c.acc])
    assert compare(c, chunk, words, "sm_90a")["mismatches"] == 0
    words[1, 0, 5] ^= 1
    result = compare(c, chunk, words, "sm_90a")
    assert result["mismatches"] == 1 and result["inner_products"] == tiles * m * n


class _QueueingGpu:
    """A GPU whose launch only queues the work, as a CUDA stream does: the work (`busy` seconds)
    is done by the next sync; reading back returns `words`."""

    def __init__(self, busy: float, words: np.ndarray):
        self.busy, self.words, self.queued, self.calls = busy, words, False, []

    def to_device(self, array):
        self.calls.append("to_device")
        return array

    def empty(self, shape, dtype):
        self.calls.append("empty")
        return np.empty(shape, dtype)

    def launch(self, kernel, grid, block, shared_bytes, *args):
        self.calls.append("launch")
        self.queued = True

    def sync(self):
        self.calls.append("sync")
        if self.queued:
            time.sleep(self.busy)
            self.queued = False

    def to_host(self, array):
        self.calls.append("to_host")
        self.sync()
        return self.words


@pytest.mark.parametrize("cid", ["mma.sync.f16.f32", "wgmma.e4m3.f16"])
def test_run_chunk_times_copy_in_launch_until_done_and_read_back(cid):
    """The GPU's work counts to the launch stage (the launch waits for the GPU), not to reading back."""
    c = next(x for x in COMBINATIONS if x.id == cid)
    chunk = prepare(c, 4, seed=1)
    assert set(chunk["stages"].wall) == {"draw", "pack"}
    words = np.arange(12, dtype=np.uint32)
    gpu, stages = _QueueingGpu(0.2, words), Stages()
    assert run_chunk(gpu, {c.id: "kernel"}, c, chunk, stages) is words
    assert gpu.calls == ["to_device"] * len(chunk["inputs"]) + ["empty", "launch", "sync", "to_host", "sync"]
    assert list(stages.wall) == ["copy in", "launch", "read back"]
    assert stages.wall["launch"] >= 0.2 > stages.wall["read back"] + stages.wall["copy in"]
