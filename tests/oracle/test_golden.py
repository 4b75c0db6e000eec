"""Golden cases: small hand-built programs whose expected results are computed here, from the ISA
text (and, for facts only in figures, the CUTLASS layouts cited beside them), independently of
the oracle's own layout code."""

from __future__ import annotations

import numpy as np
import pytest

from tcgen05_conformance.core.encoding import idesc, sdesc, taddr, zcmask
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.layouts.smem import storage_for
from tcgen05_conformance.core.program import Program, SmemSegment, TmemRegion
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.core.layouts.operands import gather
from tcgen05_conformance.oracles.state import initial_state

RNG = np.random.default_rng(20261122)


def cute_offset(shape, stride, index: int) -> int:
    """CuTe: a flat index into a (possibly nested) layout, colexicographic, to an offset."""
    if isinstance(shape, int):
        return (index % shape) * stride
    offset = 0
    for s, d in zip(shape, stride):
        size = int(np.prod(_flat(s)))
        offset += cute_offset(s, d, index % size)
        index //= size
    return offset


def _flat(shape):
    return [shape] if isinstance(shape, int) else [x for s in shape for x in _flat(s)]


def swizzle_bytes(address: int, b: int) -> int:
    """Swizzle<B,4,3> on a byte address: bits [7, 7+B) XORed into bits [4, 4+B)."""
    return address ^ (((address >> 7) & ((1 << b) - 1)) << 4)


# The five examples of PTX ISA 9.7.16.3.3 (Figures 188-192): exact layouts in elements,
# (rows, K) extents, element bytes, major-ness, swizzle, LBO and SBO in bytes. The K-major 32B
# example's K mode (4,4):(1,4) runs 64 bytes into 32-byte rows, so its last two chunks land on
# the next row's first two; the test takes K = 8 (the 32 bytes one MMA reads, CUTLASS
# mma_sm100_desc.hpp: ((8,m),(T,2)):((2T,SBO),(1,T))).
ISA_EXAMPLES = [
    ("K-major none tf32", ((8, 2), (4, 4)), ((4, 32), (1, 64)), 4, True, "none", 64 * 4, 32 * 4),
    ("K-major 32B tf32", ((8, 2), (4, 2)), ((8, 64), (1, 4)), 4, True, "32B", 16, 64 * 4),
    ("MN-major none bf16", ((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128)), 2, False, "none", 128 * 2, 64 * 2),
    ("MN-major 32B bf16", ((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256)), 2, False, "32B", 128 * 2, 256 * 2),
    ("MN-major 64B bf16", ((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512)), 2, False, "64B", 256 * 2, 512 * 2),
]


@pytest.mark.parametrize("name, shape, stride, size, k_major, mode, lbo, sbo", ISA_EXAMPLES, ids=[e[0] for e in ISA_EXAMPLES])
def test_gather_follows_the_isa_layout_examples(name, shape, stride, size, k_major, mode, lbo, sbo):
    """Elements placed by the ISA's exact layout (then swizzled on byte addresses) are gathered
    back in (row, k) order from a descriptor with the example's LBO and SBO."""
    rows, k = int(np.prod(_flat(shape[0]))), int(np.prod(_flat(shape[1])))
    start = 2048  # a 1024-byte boundary: matrix base offset 0 (Table 41)
    b = {"none": 0, "32B": 1, "64B": 2}[mode]
    codes = RNG.integers(1, 2**(8 * size) - 1, (rows, k), dtype=np.uint64).astype(np.uint32)
    image = np.zeros(16384, np.uint8)
    for r in range(rows):
        for kk in range(k):
            element = cute_offset(shape[0], stride[0], r) + cute_offset(shape[1], stride[1], kk)
            address = swizzle_bytes(start + element * size, b)
            image[address:address + size] = np.frombuffer(int(codes[r, kk]).to_bytes(size, "little"), np.uint8)
    program = Program(target="sm_100a", ops=(), smem=(SmemSegment(0, image.tobytes()),))
    d = sdesc.SmemDescriptor(start, lbo, sbo, mode)
    got = gather(initial_state(program), 0, d, k_major, rows, k, storage_for(8 * size, False), name)
    assert np.array_equal(got, codes)


# --- whole MMAs -----------------------------------------------------------------------------


def kmajor_image(matrix_codes: np.ndarray, size: int, start: int, image: np.ndarray) -> sdesc.SmemDescriptor:
    """Write a [rows, K] matrix K-major without swizzling (9.7.16.3.3: row r%8 at 16 B, rows//8 at
    SBO, 16-byte K chunks at LBO) and return its descriptor."""
    rows, k = matrix_codes.shape
    per_chunk = 16 // size
    sbo, lbo = 128, 128 * (rows // 8)
    for r in range(rows):
        for kk in range(k):
            a = start + (r % 8) * 16 + (r // 8) * sbo + (kk // per_chunk) * lbo + (kk % per_chunk) * size
            image[a:a + size] = np.frombuffer(int(matrix_codes[r, kk]).to_bytes(size, "little"), np.uint8)
    return sdesc.SmemDescriptor(start, lbo, sbo, "none")


def f16_codes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint16).astype(np.uint32)


def f16_mma_program(m: int, n: int, a: np.ndarray, b: np.ndarray, *, ws: bool = False, lane: int = 0,
                    dtype: str = "f32", **options) -> Program:
    image = np.zeros(65536, np.uint8)
    ad = kmajor_image(f16_codes(a), 2, 0, image)
    bd = kmajor_image(f16_codes(b), 2, 32768, image)
    d = idesc.InstrDescriptor(m=m, n=n, atype="f16", btype="f16", dtype=dtype)
    op = Tcgen05Mma(kind="f16", ws=ws, idesc=idesc.encode("f16", d), a_desc=sdesc.encode(ad), b_desc=sdesc.encode(bd),
                    d_tmem=taddr.encode(lane, 0), **options)
    return Program(target="sm_100a", ops=(op,), tmem_columns=256, smem=(SmemSegment(0, image.tobytes()),))


def small_matrix(rows: int, k: int) -> np.ndarray:
    return RNG.integers(-3, 4, (rows, k)).astype(np.float64)


def test_layout_d_m128_holds_row_r_at_lane_r():
    """M=128 cta_group::1 (layout D, 4x1): D[r][j] at lane r, column j; D = A B exactly."""
    a, b = small_matrix(128, 16), small_matrix(16, 16)
    tmem = run(f16_mma_program(128, 16, a, b, enable_input_d=False)).tmem[0]
    assert np.array_equal(tmem[:, :16].view(np.float32), (a @ b.T).astype(np.float32))
    assert not tmem[:, 16:].any()  # cells outside D untouched (initially 0)


def test_layout_f_m64_uses_half_the_lanes_from_the_alignment():
    """M=64 non-.ws (layout F, 4x1 with half the data path; CUTLASS tmem_frg 16x4 atom):
    row r at lane align + r%16 + 32 (r//16), align 0 or 16."""
    a, b = small_matrix(64, 16), small_matrix(8, 16)
    tmem = run(f16_mma_program(64, 8, a, b, lane=16, enable_input_d=False)).tmem[0]
    expected = (a @ b.T).astype(np.float32)
    for r in range(64):
        assert np.array_equal(tmem[16 + r % 16 + 32 * (r // 16), :8].view(np.float32), expected[r])
    assert not tmem[[r % 16 + 32 * (r // 16) for r in range(64)], :8].any()


def test_layout_g_ws_m32_splits_columns_in_four():
    """M=32 .ws (layout G, "1x4"; CUTLASS tmem_frg_ws M=32): column j of D at lane
    32 (j // (N/4)) + r, column j % (N/4)."""
    a, b = small_matrix(32, 16), small_matrix(64, 16)
    tmem = run(f16_mma_program(32, 64, a, b, ws=True, enable_input_d=False)).tmem[0]
    expected = (a @ b.T).astype(np.float32)
    for j in range(64):
        assert np.array_equal(tmem[32 * (j // 16):32 * (j // 16) + 32, j % 16].view(np.float32), expected[:, j])


def test_f16_accumulator_sits_in_the_low_half_and_accumulates():
    """9.7.16.10.4.1: a 16-bit D element in the low 16 bits of its word; D = A B + D."""
    a, b = small_matrix(128, 16), small_matrix(8, 16)
    c = small_matrix(128, 8)
    p = f16_mma_program(128, 8, a, b, dtype="f16")
    words = np.zeros((128, 256), np.uint32)
    words[:, :8] = f16_codes(c)
    p = Program(target=p.target, ops=p.ops, tmem_columns=256, smem=p.smem,
                tmem=(TmemRegion(0, 0, 128, 256, words.astype("<u4").tobytes()),))
    tmem = run(p).tmem[0]
    assert np.array_equal(tmem[:, :8] & 0xFFFF, f16_codes(a @ b.T + c))
    assert not (tmem[:, :8] >> 16).any()


def test_scale_input_d_scales_the_accumulator_by_a_power_of_two():
    """9.7.16.10.9.1: D = A*B + D * 2^-scale_input_d."""
    a, b = small_matrix(128, 16), small_matrix(8, 16)
    c = small_matrix(128, 8) * 8
    p = f16_mma_program(128, 8, a, b, scale_input_d=3)
    words = np.zeros((128, 256), np.uint32)
    words[:, :8] = c.astype(np.float32).view(np.uint32)
    p = Program(target=p.target, ops=p.ops, tmem_columns=256, smem=p.smem,
                tmem=(TmemRegion(0, 0, 128, 256, words.astype("<u4").tobytes()),))
    assert np.array_equal(run(p).tmem[0][:, :8].view(np.float32), (a @ b.T + c / 8).astype(np.float32))


def test_disable_output_lane_keeps_the_masked_lanes():
    """9.7.16.10.9.1: bit i of the disable-output-lane vector (LSB of element 0 first) keeps
    lane i of D unchanged."""
    a, b = small_matrix(128, 16), small_matrix(8, 16)
    mask = (0x0000FFFF, 0, 0x80000000, 1)  # lanes 0-15, 95 and 96
    tmem = run(f16_mma_program(128, 8, a, b, enable_input_d=False, disable_output_lane=mask)).tmem[0]
    kept = list(range(16)) + [95, 96]
    assert not tmem[kept, :8].any()
    rest = [r for r in range(128) if r not in kept]
    assert np.array_equal(tmem[rest, :8].view(np.float32), (a @ b.T).astype(np.float32)[rest])


def test_zero_column_mask_zeroes_b_columns_after_the_column_shift():
    """Table 45: with the mask, column j of B is replaced by zeros where mask bit j is 1, and B
    columns column_shift .. column_shift + N - 1 are used (.ws, M=128, N=64)."""
    a, b = small_matrix(128, 16), small_matrix(64 + 4, 16)
    z = zcmask.ZeroColumnMask(start_counts=(2, 0, 0, 0), first_spans=(1, 0, 0, 0), skip_span=2, use_span=4, column_shift=4)
    tmem = run(f16_mma_program(128, 64, a, b, ws=True, enable_input_d=False, zero_column_mask=zcmask.encode(z))).tmem[0]
    bits = zcmask.generate_mask(z, 128, 64)
    expected = (a @ b[4:].T).astype(np.float32)
    for j in range(64):
        column = tmem[:, j].view(np.float32)
        assert np.array_equal(column, np.zeros(128, np.float32) if (bits >> j) & 1 else expected[:, j])
    assert bits & 1 and not (bits >> 1) & 1  # the first span: one zeroed column left after skipping 2 of 3


def test_integer_saturate_and_wrap():
    """Table 42 bit 3 (saturate) for .kind::i8: an s32 sum past 2^31 - 1 clamps, else wraps."""
    image = np.zeros(65536, np.uint8)
    a = np.full((128, 32), 127, np.int64)
    b = np.full((8, 32), 127, np.int64)
    ad = kmajor_image((a & 0xFF).astype(np.uint32), 1, 0, image)
    bd = kmajor_image((b & 0xFF).astype(np.uint32), 1, 32768, image)
    words = np.zeros((128, 256), np.uint32)
    words[:, :8] = 2**31 - 1000
    outcome = {}
    for saturate in (False, True):
        d = idesc.InstrDescriptor(m=128, n=8, atype="s8", btype="s8", dtype="s32", saturate=saturate)
        op = Tcgen05Mma(kind="i8", idesc=idesc.encode("i8", d), a_desc=sdesc.encode(ad), b_desc=sdesc.encode(bd))
        p = Program(target="sm_100a", ops=(op,), tmem_columns=256, smem=(SmemSegment(0, image.tobytes()),),
                    tmem=(TmemRegion(0, 0, 128, 256, words.astype("<u4").tobytes()),))
        outcome[saturate] = run(p).tmem[0][:, :8].view(np.int32)
    exact = 2**31 - 1000 + 32 * 127 * 127
    assert (outcome[True] == 2**31 - 1).all()
    assert (outcome[False] == exact - 2**32).all()


def test_sparse_f16_metadata_selects_the_kept_elements():
    """9.7.16.10.8.2: 2:4 sparsity, two 2-bit indices per 4-wide chunk; metadata layout for
    M=128 f16 from CUTLASS `tmem_e_frg` (128x32 atom): row r's chunk q at lane
    r%8 + 16 (r//16) + 8 (q//4), bit 16 ((r//8)%2) + 4 (q%4)."""
    image = np.zeros(65536, np.uint8)
    stored = small_matrix(128, 16)
    b = small_matrix(8, 32)
    ad = kmajor_image(f16_codes(stored), 2, 0, image)
    bd = kmajor_image(f16_codes(b), 2, 32768, image)
    choices = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (2, 1)]
    words = np.zeros((128, 256), np.uint32)
    dense = np.zeros((128, 32))
    for r in range(128):
        for q in range(8):
            i0, i1 = choices[RNG.integers(len(choices))]
            lane, bit = r % 8 + 16 * (r // 16) + 8 * (q // 4), 16 * ((r // 8) % 2) + 4 * (q % 4)
            words[lane, 100] |= (i0 | i1 << 2) << bit
            dense[r, 4 * q + i0] = stored[r, 2 * q]
            dense[r, 4 * q + i1] = stored[r, 2 * q + 1]
    d = idesc.InstrDescriptor(m=128, n=8, atype="f16", btype="f16", dtype="f32", sparse=True)
    op = Tcgen05Mma(kind="f16", sparse=True, idesc=idesc.encode("f16", d), a_desc=sdesc.encode(ad),
                    b_desc=sdesc.encode(bd), sp_meta_tmem=taddr.encode(0, 100), enable_input_d=False)
    p = Program(target="sm_100a", ops=(op,), tmem_columns=256, smem=(SmemSegment(0, image.tobytes()),),
                tmem=(TmemRegion(0, 0, 128, 256, words.astype("<u4").tobytes()),))
    assert np.array_equal(run(p).tmem[0][:, :8].view(np.float32), (dense @ b.T).astype(np.float32))


def test_block_scale_multiplies_each_row_and_column_by_its_factor():
    """9.7.16.10.7: (A * scale_A)(B * scale_B) + D with one ue8m0 factor per row/column
    (mxf8f6f4, scale_vec::1X); factors at lane i%32 of every partition, column i//32 (CUTLASS
    tmem_sf_frg), byte SF_ID."""
    image = np.zeros(65536, np.uint8)
    a, b = small_matrix(128, 32), small_matrix(8, 32)
    e4m3 = lambda x: np.array(x, dtype=np.float64).astype(__import__("ml_dtypes").float8_e4m3fn).view(np.uint8).astype(np.uint32)  # noqa: E731
    ad = kmajor_image(e4m3(a), 1, 0, image)
    bd = kmajor_image(e4m3(b), 1, 32768, image)
    sa = RNG.integers(-2, 3, 128)
    sb = RNG.integers(-2, 3, 8)
    words = np.zeros((128, 256), np.uint32)
    sf_id = 2
    for p in range(4):
        for i in range(128):
            words[32 * p + i % 32, 200 + i // 32] |= int(127 + sa[i]) << (8 * sf_id)
        for j in range(8):
            words[32 * p + j, 210] |= int(127 + sb[j]) << (8 * sf_id)
    d = idesc.InstrDescriptor(m=128, n=8, atype="e4m3", btype="e4m3", dtype="f32", sfa_id=sf_id, sfb_id=sf_id,
                              scale_type="ue8m0")
    op = Tcgen05Mma(kind="mxf8f6f4", block_scale=True, scale_vec="scale_vec::1X", idesc=idesc.encode("mxf8f6f4", d),
                    a_desc=sdesc.encode(ad), b_desc=sdesc.encode(bd), scale_a_tmem=taddr.encode(0, 200),
                    scale_b_tmem=taddr.encode(0, 210), enable_input_d=False)
    p = Program(target="sm_100a", ops=(op,), tmem_columns=256, smem=(SmemSegment(0, image.tobytes()),),
                tmem=(TmemRegion(0, 0, 128, 256, words.astype("<u4").tobytes()),))
    expected = (a * 2.0 ** sa[:, None]) @ (b * 2.0 ** sb[:, None]).T
    assert np.array_equal(run(p).tmem[0][:, :8].view(np.float32), expected.astype(np.float32))
