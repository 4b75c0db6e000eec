"""tcgen05 data-movement facts: TMEM geometry (9.7.16.1), allocation (9.7.16.7.1), ld/st shapes
and .num (9.7.16.2.3, Tables 47 and 48), cp shapes, multicast and decompression (9.7.16.9.2),
shift (9.7.16.9.3) and the warp-to-lane access restriction (9.7.16.8.1)."""

from __future__ import annotations

from dataclasses import dataclass

TMEM_LANES = 128
TMEM_COLUMNS = 512  # "512 columns and 128 rows per CTA, with each cell being 32-bits" (9.7.16.1)
ALLOC_MIN_COLUMNS = 32
ALLOC_MAX_COLUMNS = 512
ALLOC_COLUMN_COUNTS = (32, 64, 128, 256, 512)  # power of 2 within [32, 512] (9.7.16.7.1)
LANES_PER_WARP_QUARTER = 32  # warp w of a warpgroup reaches lanes 32w .. 32w+31 (9.7.16.8.1)


# Table 47 / 48: a tcgen05.ld / st moves at most 128 registers per thread (the table's "NA"
# entries are exactly the combinations of .num and .shape that would need more).
MAX_REGISTERS_PER_LDST = 128


@dataclass(frozen=True)
class LdStShape:
    """A tcgen05.ld/st shape: lanes touched, bits per lane per repetition, registers per .x1."""

    name: str
    lanes: int
    bits: int
    regs_per_num: int
    split: bool = False  # .16x32bx2 takes immHalfSplitoff

    @property
    def max_num(self) -> int:
        """The largest .num of the shape (Table 47: registers = regs_per_num * num)."""
        return MAX_REGISTERS_PER_LDST // self.regs_per_num


LDST_SHAPES: dict[str, LdStShape] = {
    s.name: s
    for s in (
        LdStShape("32x32b", 32, 32, 1),
        LdStShape("16x64b", 16, 64, 1),
        LdStShape("16x128b", 16, 128, 2),
        LdStShape("16x256b", 16, 256, 4),
        LdStShape("16x32bx2", 16, 32, 1, split=True),
    )
}
LDST_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
# tcgen05.ld.red (9.7.16.8.3): shapes .32x32b and .16x32bx2, .num at least .x2.
LD_RED_SHAPES = ("32x32b", "16x32bx2")
LD_RED_OPS = ("min", "max")
LD_RED_TYPES = ("f32", "u32", "s32")  # .abs and .NaN only with .f32
LD_RED_MIN_NUM = 2


@dataclass(frozen=True)
class CpShape:
    name: str
    lanes: int
    bits: int
    multicasts: tuple[str | None, ...]  # allowed .multicast values (None: no qualifier)
    lane_span: int  # the TMEM lanes written, from the taddr lane to the last one


# 9.7.16.9.2: ".64x128b requires .warpx2::02_13 or .warpx2::01_23; .32x128b requires .warpx4".
# Lane spans: .128x256b and .128x128b put row r at lane r; .64x128b and .32x128b multicast their
# rows into the 32-lane quarters of warp pairs (.warpx2) or of all four warps (.warpx4); .4x256b
# puts one row in each quarter, lanes 0, 32, 64, 96 (CUTLASS include/cute/atom/copy_traits_sm100.hpp,
# Copy_Traits<SM100_UTCCP_4dp256bit_1cta>: SrcLayout (4,256):(32,128)).
CP_SHAPES: dict[str, CpShape] = {
    s.name: s
    for s in (
        CpShape("128x256b", 128, 256, (None,), 128),
        CpShape("4x256b", 4, 256, (None,), 97),
        CpShape("128x128b", 128, 128, (None,), 128),
        CpShape("64x128b", 64, 128, ("warpx2::02_13", "warpx2::01_23"), 128),
        CpShape("32x128b", 32, 128, ("warpx4",), 128),
    )
}
CP_DECOMPRESS = {  # .src_fmt -> (element bits, padding bytes per 16 elements), 9.7.16.9.1
    "b6x16_p32": (6, 4),
    "b4x16_p64": (4, 8),
}
CP_DST_FMT = "b8x16"
# tcgen05.shift: ".31x256b (implicit)": 31 rows of 256 bits move down one lane, so 32 lanes are
# touched; the lane of taddr "must be aligned to 32".
SHIFT_ROWS, SHIFT_BITS = 31, 256
SHIFT_LANE_ALIGNMENT = 32
FENCES = ("before_thread_sync", "after_thread_sync")
CTA_GROUPS = (1, 2)  # .cta_group = { .cta_group::1, .cta_group::2 }
# State spaces of the shared-memory address operands: alloc's dst is `{.shared::cta}` (9.7.16.7.1),
# commit's mbar `{.shared::cluster}` (9.7.16.12.1); None (no qualifier) is a generic address.
ALLOC_STATE_SPACES = (None, "shared::cta")
COMMIT_STATE_SPACES = (None, "shared::cluster")
ADDRESS_REGISTER_BITS = (32, 64)  # an address register of either width (ptxas accepts both: reports/ptx-spellings/spellings.json)
WAITS = ("ld", "st")

