"""tcgen05.ld / st / cp / shift oracle semantics. Expected values are written out here from the ISA
text and the CUTLASS facts the module cites (thread maps, UTCCP lanes, decompression holders),
never computed by the module under test."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tcgen05_conformance.core.encoding import sdesc, taddr
from tcgen05_conformance.core.instructions import Tcgen05Cp, Tcgen05Ld, Tcgen05Shift, Tcgen05St
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.program import Program, SmemSegment
from tcgen05_conformance.oracles import data_movement as mv
from tcgen05_conformance.oracles.state import OracleState, UndefinedBehaviour, initial_state

SENTINEL = 0xDEADBEEF


def make_state(ctas: int = 1, columns: int = 512, smem: tuple[SmemSegment, ...] = ()) -> OracleState:
    return initial_state(Program(target="sm_100a", ops=(), ctas=ctas, tmem_columns=columns, smem=smem))


def tagged_state(columns: int = 512) -> OracleState:
    """TMEM cell (lane, column) holds (lane << 16) | column, so a loaded word names its cell."""
    s = make_state(columns=columns)
    lanes, cols = np.meshgrid(np.arange(128), np.arange(columns), indexing="ij")
    s.tmem[0] = (lanes << 16) | cols
    return s


def cells(words: np.ndarray) -> list[tuple[int, int]]:
    return [(int(w) >> 16, int(w) & 0xFFFF) for w in words]


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


# --- ld / st shapes -----------------------------------------------------------------------------

REGS_PER_X1 = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}  # Table 47
LANES = {"32x32b": 32, "16x64b": 16, "16x128b": 16, "16x256b": 16, "16x32bx2": 16}
COLUMNS_PER_X1 = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 2}  # both halves


LDST_CASES = [
    pytest.param(shape, num, pack, id=f"{shape}-x{num}{'-pack' if pack else ''}")
    for shape, s in dm.LDST_SHAPES.items() for num in dm.LDST_NUMS if num <= s.max_num for pack in (False, True)
]


def test_fragment_register_counts_match_table_47():
    for shape, s in dm.LDST_SHAPES.items():
        assert len(mv.FRAGMENTS[shape].registers) == s.regs_per_num == REGS_PER_X1[shape]


@pytest.mark.parametrize("shape,num,pack", LDST_CASES)
def test_st_then_ld_round_trips_and_touches_exactly_the_shape(shape, num, pack):
    s = make_state()
    s.tmem[:] = SENTINEL
    halves = 2 if pack else 1
    split = num * halves if shape == "16x32bx2" else None
    address = taddr.encode(32, 0)  # warp 1's lane quarter
    st_op = Tcgen05St(shape, num, unpack=pack, taddr=address, split_offset=split, values_seed=num)
    registers = mv.st_registers(st_op)
    assert registers.shape == (32, REGS_PER_X1[shape] * num)
    mv.st(s, st_op, registers)
    loaded = mv.ld(s, Tcgen05Ld(shape, num, pack=pack, taddr=address, split_offset=split))
    np.testing.assert_array_equal(loaded, registers)
    changed = np.argwhere(s.tmem[0] != SENTINEL)
    assert len(changed) == registers.size * halves  # every register half in a cell of its own
    assert set(changed[:, 0]) == set(range(32, 32 + LANES[shape]))
    assert set(changed[:, 1]) == set(range(COLUMNS_PER_X1[shape] * num * halves))
    assert s.loads == [loaded]


# thread -> [(lane, column) of each register], written out from Figures 183-187 as CUTLASS lays them.
HAND_MAPS = [
    ("32x32b", 2, None, (32, 3), {5: [(37, 3), (37, 4)], 31: [(63, 3), (63, 4)]}),
    ("16x64b", 2, None, (0, 0), {0: [(0, 0), (0, 2)], 1: [(8, 0), (8, 2)], 2: [(0, 1), (0, 3)],
                                 7: [(9, 1), (9, 3)], 30: [(7, 1), (7, 3)]}),
    ("16x128b", 2, None, (16, 0), {0: [(16, 0), (24, 0), (16, 4), (24, 4)], 5: [(17, 1), (25, 1), (17, 5), (25, 5)]}),
    ("16x256b", 1, None, (0, 8), {6: [(1, 12), (1, 13), (9, 12), (9, 13)], 31: [(7, 14), (7, 15), (15, 14), (15, 15)]}),
    ("16x32bx2", 2, 10, (64, 0), {3: [(67, 0), (67, 1)], 19: [(67, 10), (67, 11)], 31: [(79, 10), (79, 11)]}),
]


@pytest.mark.parametrize("shape,num,split,at,expected", HAND_MAPS, ids=[m[0] for m in HAND_MAPS])
def test_ld_thread_register_map(shape, num, split, at, expected):
    s = tagged_state()
    loaded = mv.ld(s, Tcgen05Ld(shape, num, taddr=taddr.encode(*at), split_offset=split))
    for thread, want in expected.items():
        assert cells(loaded[thread]) == want


def test_ld_pack_joins_low_halves_of_adjacent_columns():
    s = make_state()
    s.tmem[0, 0, 0], s.tmem[0, 0, 1] = 0xAAAA1234, 0xBBBB5678
    assert mv.ld(s, Tcgen05Ld("32x32b", 1, pack=True))[0, 0] == 0x56781234


def test_ld_pack_split_offset_counts_tmem_columns():
    s = tagged_state()
    # CUTLASS SM100_TMEM_LOAD_16dp32b1x_16b: .16x32bx2.x1.pack::16b with immHalfSplitoff 2.
    loaded = mv.ld(s, Tcgen05Ld("16x32bx2", 1, pack=True, split_offset=2))
    assert loaded[0, 0] == 0x00010000  # lane 0: column 1 (high half) and column 0 (low half)
    assert loaded[16, 0] == 0x00030002  # lane 0: columns 3 and 2


def test_st_unpack_splits_register_and_clears_upper_halves():
    s = make_state()
    s.tmem[:] = SENTINEL
    registers = np.zeros((32, 1), dtype=np.uint32)
    registers[0, 0] = 0x56781234
    mv.st(s, Tcgen05St("32x32b", 1, unpack=True), registers)
    assert (s.tmem[0, 0, 0], s.tmem[0, 0, 1], s.tmem[0, 0, 2]) == (0x1234, 0x5678, SENTINEL)


def test_split_offset_zero_loads_the_same_columns_twice():
    s = tagged_state()
    loaded = mv.ld(s, Tcgen05Ld("16x32bx2", 4, split_offset=0))
    np.testing.assert_array_equal(loaded[:16], loaded[16:])


def test_st_with_overlapping_halves_is_refused():
    s = make_state()
    op = Tcgen05St("16x32bx2", 4, split_offset=3)
    with pytest.raises(UndefinedBehaviour, match="overlap"):
        mv.st(s, op, mv.st_registers(op))


def test_st_register_shape_is_checked():
    with pytest.raises(ValueError, match="takes registers"):
        mv.st(make_state(), Tcgen05St("16x256b", 1), np.zeros((32, 1), dtype=np.uint32))


@pytest.mark.parametrize("shape,lane,column,ok", [
    ("32x32b", 0, 0, True),
    ("32x32b", 16, 0, False),  # lanes 16-47 cross into warp 1's quarter (9.7.16.8.1)
    ("16x256b", 16, 0, True),  # lanes 16-31
    ("16x64b", 24, 0, False),
    ("16x128b", 112, 0, True),
    ("32x32b", 96, 508, False),  # .x8 reaches column 515 of 512
], ids=lambda v: str(v))
def test_ld_access_restrictions(shape, lane, column, ok):
    op = Tcgen05Ld(shape, 8, taddr=taddr.encode(lane, column), split_offset=None)
    if ok:
        mv.ld(tagged_state(), op)
    else:
        with pytest.raises(UndefinedBehaviour):
            mv.ld(tagged_state(), op)


# --- ld.red -------------------------------------------------------------------------------------

NAN = 0x7FC00000
CANONICAL_NAN = 0x7FFFFFFF
ONE, TWO, THREE = f32(1.0), f32(2.0), f32(3.0)
RED_F32 = [  # (row of 4 words, redOp, .abs, .NaN, redval)
    ([ONE, 0x80000000, 0x00000000, TWO], "min", False, False, 0x80000000),  # -0.0 < +0.0
    ([0x00000000, 0x80000000, 0x80000000, 0x80000000], "max", False, False, 0x00000000),
    ([NAN, ONE, f32(-2.0), NAN], "min", False, False, f32(-2.0)),  # NaN skipped
    ([NAN, ONE, f32(-2.0), NAN], "max", False, False, ONE),
    ([NAN, ONE, f32(-2.0), NAN], "min", False, True, CANONICAL_NAN),  # .NaN propagates
    ([NAN, 0xFFC00001, NAN, NAN], "max", False, False, CANONICAL_NAN),  # all NaN
    ([f32(-3.0), TWO, NAN, ONE], "max", True, False, THREE),  # .abs returns the magnitude
    ([0x80000000, TWO, f32(-1.0), f32(-4.0)], "min", True, False, 0x00000000),
    ([0x00000001, 0x80000001, ONE, TWO], "min", False, False, 0x80000001),  # subnormals kept
    ([0xFF800000, ONE, f32(-1e30), TWO], "min", False, False, 0xFF800000),
]


@pytest.mark.parametrize("row,red_op,absolute,nan,redval", RED_F32)
def test_ld_red_f32(row, red_op, absolute, nan, redval):
    s = make_state()
    s.tmem[0, 5, 0:4] = row
    loaded = mv.ld(s, Tcgen05Ld("32x32b", 4, red_op=red_op, red_abs=absolute, red_nan=nan))
    assert loaded.shape == (32, 5)
    assert list(loaded[5, :4]) == row  # r is the raw data, .abs included
    assert loaded[5, 4] == redval


@pytest.mark.parametrize("red_type,red_op,redval", [
    ("u32", "min", 5), ("u32", "max", 0xFFFFFFFF), ("s32", "min", 0xFFFFFFFF), ("s32", "max", 7),
])
def test_ld_red_integer(red_type, red_op, redval):
    s = make_state()
    s.tmem[0, 0, 0:4] = [5, 0xFFFFFFFF, 7, 6]
    assert mv.ld(s, Tcgen05Ld("32x32b", 4, red_op=red_op, red_type=red_type))[0, 4] == redval


def test_ld_red_16x32bx2_reduces_each_threads_own_half():
    s = make_state()
    s.tmem[0, 0, 0:4] = [1, 9, 4, 3]
    loaded = mv.ld(s, Tcgen05Ld("16x32bx2", 2, red_op="max", red_type="u32", split_offset=2))
    assert (loaded[0, 2], loaded[16, 2]) == (9, 4)


# --- st_registers -------------------------------------------------------------------------------


def reference_hash(seed: int, t: int, r: int) -> int:
    m = 0xFFFFFFFF
    x = (seed * 0x9E3779B1 + t * 0x85EBCA77 + r * 0xC2B2AE3D + 0x27D4EB2F) & m
    x = ((x ^ (x >> 16)) * 0x7FEB352D) & m
    x = ((x ^ (x >> 15)) * 0x846CA68B) & m
    return x ^ (x >> 16)


@pytest.mark.parametrize("seed", [0, 1, 0xFFFFFFFF, 2**40 + 7])
def test_st_registers_follow_the_documented_hash(seed):
    registers = mv.st_registers(Tcgen05St("16x128b", 4, values_seed=seed))
    assert registers.shape == (32, 8) and registers.dtype == np.uint32
    for t in (0, 1, 17, 31):
        for r in (0, 3, 7):
            assert registers[t, r] == reference_hash(seed % 2**32, t, r)


def test_st_registers_differ_across_cells_and_seeds():
    a = mv.st_registers(Tcgen05St("32x32b", 128, values_seed=0))
    b = mv.st_registers(Tcgen05St("32x32b", 128, values_seed=1))
    assert len(np.unique(a)) == a.size and 0 not in a
    assert (a != b).mean() > 0.99


# --- cp -----------------------------------------------------------------------------------------


def random_bytes(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def desc(start: int, lbo: int, sbo: int, swizzle: str = "none") -> int:
    return sdesc.encode(sdesc.SmemDescriptor(start, lbo, sbo, swizzle))


def word(image: bytes, address: int) -> int:
    return int.from_bytes(image[address:address + 4], "little")


def test_cp_128x128b_no_swizzle():
    image = random_bytes(2048)
    s = make_state(smem=(SmemSegment(0x400, image),))
    mv.cp(s, Tcgen05Cp("128x128b", taddr=taddr.encode(0, 4), s_desc=desc(0x400, 0x800, 128)))
    for r in (0, 7, 8, 100, 127):
        assert [int(v) for v in s.tmem[0, r, 4:8]] == [word(image, 16 * r + 4 * w) for w in range(4)]
    assert not s.tmem[0, :, :4].any() and not s.tmem[0, :, 8:].any()


def test_cp_128x256b_second_chunk_at_lbo():
    image = random_bytes(4096)
    s = make_state(smem=(SmemSegment(0, image),))
    mv.cp(s, Tcgen05Cp("128x256b", s_desc=desc(0, 2048, 128)))
    for r in (0, 9, 127):
        want = [word(image, 16 * r + 4 * w) for w in range(4)] + [word(image, 2048 + 16 * r + 4 * w) for w in range(4)]
        assert [int(v) for v in s.tmem[0, r, 0:8]] == want


def test_cp_128x256b_128b_swizzle():
    image = random_bytes(16 * 1024)
    s = make_state(smem=(SmemSegment(0, image),))
    mv.cp(s, Tcgen05Cp("128x256b", s_desc=desc(0, 16, 1024, "128B")))
    for r in (0, 3, 13, 126):
        # 8-row atoms of 128-byte rows at SBO; 16-byte chunk c of row r stored at chunk c ^ (r % 8).
        row = 1024 * (r // 8) + 128 * (r % 8)
        want = [word(image, row + 16 * (c ^ (r % 8)) + 4 * w) for c in range(2) for w in range(4)]
        assert [int(v) for v in s.tmem[0, r, 0:8]] == want


def lane_rows(s: OracleState, columns: int) -> dict[int, int]:
    """lane -> the source row it holds (rows of the image are 16 * r + ..., see `row_image`)."""
    return {lane: int(s.tmem[0, lane, 0]) >> 8 for lane in range(128) if s.tmem[0, lane, :columns].any()}


def row_image(rows: int) -> bytes:
    """Row r, 16 bytes at 16 r: bytes (1, r % 256, 0, 0, ...): the first word is 0x1 | r << 8."""
    return b"".join(bytes([1, r % 256]) + bytes(14) for r in range(rows))


@pytest.mark.parametrize("shape,multicast,lane_to_row", [
    ("4x256b", None, {0: 0, 32: 1, 64: 2, 96: 3}),
    ("64x128b", "warpx2::02_13", {lane: lane % 64 for lane in range(128)}),
    ("64x128b", "warpx2::01_23", {lane: lane % 32 + 32 * (lane // 64) for lane in range(128)}),
    ("32x128b", "warpx4", {lane: lane % 32 for lane in range(128)}),
    ("128x128b", None, {lane: lane for lane in range(128)}),
])
def test_cp_destination_lanes(shape, multicast, lane_to_row):
    s = make_state(smem=(SmemSegment(0, row_image(256)),))  # 256-bit rows take a second chunk at LBO = 2048
    mv.cp(s, Tcgen05Cp(shape, multicast=multicast, s_desc=desc(0, 2048, 128)))
    assert lane_rows(s, 8) == lane_to_row


def test_cp_cta_pair_reads_each_ctas_own_smem():
    a, b = random_bytes(2048, 1), random_bytes(2048, 2)
    s = make_state(ctas=2, smem=(SmemSegment(0, a, cta=0), SmemSegment(0, b, cta=1)))
    mv.cp(s, Tcgen05Cp("128x128b", cta_group=2, s_desc=desc(0, 2048, 128)))
    assert s.tmem[0, 3, 0] == word(a, 48) and s.tmem[1, 3, 0] == word(b, 48)


def test_cp_cta_pair_needs_a_peer():
    s = make_state(smem=(SmemSegment(0, random_bytes(2048)),))
    with pytest.raises(UndefinedBehaviour, match="peer"):
        mv.cp(s, Tcgen05Cp("128x128b", cta_group=2, s_desc=desc(0, 2048, 128)))


def test_cp_refuses_uninitialised_smem_and_bad_descriptors():
    s = make_state(smem=(SmemSegment(0, random_bytes(1024)),))
    with pytest.raises(UndefinedBehaviour, match="does not initialise"):
        mv.cp(s, Tcgen05Cp("128x128b", s_desc=desc(0, 2048, 128)))
    with pytest.raises(UndefinedBehaviour, match="swizzle code 3"):
        mv.cp(s, Tcgen05Cp("4x256b", s_desc=desc(0, 64, 128) | (3 << 61)))


def test_cp_decompress_4bit_to_middle_of_byte():
    # 16 codes 1, 2, ..., 15, 0 packed low nibble first; the 8 padding bytes are left uninitialised.
    chunk = bytes([0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F])
    s = make_state(smem=tuple(SmemSegment(16 * r, chunk) for r in range(128)))
    mv.cp(s, Tcgen05Cp("128x128b", src_fmt="b4x16_p64", s_desc=desc(0, 2048, 128)))
    holders = bytes([0x04, 0x08, 0x0C, 0x10, 0x14, 0x18, 0x1C, 0x20, 0x24, 0x28, 0x2C, 0x30, 0x34, 0x38, 0x3C, 0x00])
    for r in (0, 77):
        assert s.tmem[0, r, 0:4].astype("<u4").tobytes() == holders


def test_cp_decompress_6bit_to_middle_of_byte():
    # codes 0x3F, 0x01, 0x20, 0x0C (E3M2 1.0 in CUTLASS's example) packed LSB first: 0x32007F.
    chunk = bytes([0x7F, 0x00, 0x32]) * 4
    s = make_state(smem=tuple(SmemSegment(16 * r + 2048 * c, chunk) for r in range(128) for c in range(2)))
    mv.cp(s, Tcgen05Cp("128x256b", src_fmt="b6x16_p32", s_desc=desc(0, 2048, 128)))
    holders = bytes([0x7E, 0x02, 0x40, 0x18]) * 8
    assert s.tmem[0, 5, 0:8].astype("<u4").tobytes() == holders


# --- shift --------------------------------------------------------------------------------------


def test_shift_moves_31_rows_down_and_keeps_row_0():
    s = tagged_state()
    before = s.tmem[0].copy()
    mv.shift(s, Tcgen05Shift(taddr=taddr.encode(32, 8)))
    after = s.tmem[0]
    np.testing.assert_array_equal(after[33:64, 8:16], before[32:63, 8:16])
    np.testing.assert_array_equal(after[32, 8:16], before[32, 8:16])
    outside = np.ones_like(after, dtype=bool)
    outside[33:64, 8:16] = False
    np.testing.assert_array_equal(after[outside], before[outside])


def test_shift_cta_pair_and_bounds():
    s = make_state(ctas=2, columns=32)
    s.tmem[:, 0, 0] = [11, 22]
    mv.shift(s, Tcgen05Shift(cta_group=2))
    assert list(s.tmem[:, 1, 0]) == [11, 22]
    with pytest.raises(UndefinedBehaviour, match="column"):
        mv.shift(s, Tcgen05Shift(taddr=taddr.encode(0, 28)))
