"""Probes of the tcgen05 data-movement instructions: shift, st / ld (with .red) and cp.

TMEM images tag their cells where the probe reads positions: (lane << 16) | column. The tcgen05
kernel generator (`tcgen05_conformance.device.ptx.kernels`) issues mma, cp and shift only, so the st / ld probes run
on the oracle and await a kernel that issues tcgen05.ld / st from a program.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.instructions import Tcgen05Cp, Tcgen05Ld, Tcgen05Shift, Tcgen05St, Tcgen05Wait
from tcgen05_conformance.probes.images import Images, codes, kmajor
from tcgen05_conformance.probes.probe import Probe

SHIFT_COLUMNS = 8  # tcgen05.shift moves 256 bits of each lane
CP_ROWS, CP_ROW_BYTES = 128, 16  # .128x128b
NAN = 0x7FC00000


def _tagged(lanes: np.ndarray) -> Images:
    """TMEM cells (lane, column < 8) of the given lanes hold (tag lane << 16) | column."""
    images = Images()
    images.tmem[0, :lanes.size, :SHIFT_COLUMNS] = (lanes[:, None] << 16) | np.arange(SHIFT_COLUMNS)
    return images


def shift_row0() -> Probe:
    return Probe(
        "A-SHIFT-ROW0", _tagged(np.arange(32)).program("sm_100a", (Tcgen05Shift(),)),
        "What does the first lane of the block hold after tcgen05.shift?",
        "its old contents: lanes 0-31 x columns 0-7 hold (lane << 16) | column, and after the shift at (0, 0) lane 0 "
        "still reads (0 << 16) | column.",
        "lane 0 = 0 (a zero row shifted in) or lane 31's old (31 << 16) | column (a rotation).",
    )


def shift_dir() -> Probe:
    return Probe(
        "A-SHIFT-DIR", shift_row0().program,
        "Which way is \"down\" for tcgen05.shift?",
        "lane i moves to lane i + 1: after the shift lane i (1-31) reads ((i - 1) << 16) | column; lane 31's old "
        "contents are dropped.",
        "up: lane i reads ((i + 1) << 16) | column.",
    )


def shift_lanes() -> Probe:
    return Probe(
        "A-SHIFT-LANES", _tagged(np.arange(128) % 32).program("sm_100a", (Tcgen05Shift(),)),
        "Does tcgen05.shift move only the 32 lanes from the taddr lane, or every subpartition?",
        "only lanes 0-31: every 32-lane quarter holds (lane % 32) << 16 | column, and after a shift at lane 0 "
        "lanes 32-127 are unchanged.",
        "each subpartition shifted (the CuTe DSL docstring's \"within each sub-partition\"): lane 32q + i reads "
        "((i - 1) << 16) | column.",
    )


def unpack_high16() -> Probe:
    images = Images(tmem_fill=0xFFFFFFFF)
    ops = (Tcgen05St("32x32b", 1, unpack=True, values_seed=1), Tcgen05Wait("st"), Tcgen05Ld("32x32b", 2))
    return Probe(
        "A-UNPACK-HIGH16", images.program("sm_100a", ops),
        "What do the high 16 bits of each column hold after tcgen05.st .unpack::16b?",
        "zero: over TMEM of 0xFFFFFFFF, the ld without .pack reads 0x0000xxxx in columns 0 and 1 (the register's "
        "low and high halves).",
        "0xFFFF (left untouched) or a copy of the other half.",
    )


def st_split_overlap() -> Probe:
    op = Tcgen05St("16x32bx2", 4, split_offset=3, values_seed=1)
    return Probe(
        "A-ST-SPLIT-OVERLAP", Images().program("sm_100a", (op,)),
        "What does a .16x32bx2 st whose halves overlap (split offset < columns per half) leave?",
        "undefined: threads t and t + 16 both write column 3 of lane t, so the oracle refuses the program.",
        "column 3 holds thread t's register 3 (first half wins), thread t + 16's register 0 (second half wins), "
        "or a mix (the registers differ, tcgen05_conformance.oracles.data_movement.st_registers).",
        refusal="tcgen05.st.16x32bx2.x4: the two halves overlap (immHalfSplitoff 3), so two threads write the same TMEM cell",
    )


def _rows(rows: list[list[int]]) -> Images:
    """TMEM lanes 0.. holding the given words in columns 0.."""
    images = Images()
    images.tmem[0, :len(rows), :len(rows[0])] = rows
    return images


def _f32(*x: float) -> list[int]:
    return codes("f32", x).tolist()


def ldred_f32() -> Probe:
    images = _rows([_f32(-0.0, 0.0, 1.0, 2.0), [NAN, *_f32(1.0, -2.0), NAN]])
    ops = tuple(Tcgen05Ld("32x32b", 4, red_op=op, red_nan=nan) for op in ("min", "max") for nan in (False, True))
    return Probe(
        "A-LDRED-F32", images.program("sm_103a", ops),
        "What are the f32 min / max rules of tcgen05.ld.red?",
        "PTX min/max.f32 without .ftz: lane 0 {-0, +0, 1, 2} gives min -0 (0x80000000), max 2; lane 1 {NaN, 1, -2, NaN} "
        "gives min -2, max 1 without .NaN and 0x7FFFFFFF (canonical NaN) with it; lanes 2-31 (+0) give +0.",
        "-0 and +0 equal (min +0), NaN propagated without .NaN, or another NaN pattern.",
    )


def ldred_data() -> Probe:
    images = _rows([_f32(-1.0, -3.0, -2.0, -0.5)])
    op = Tcgen05Ld("32x32b", 4, red_op="max", red_abs=True)
    return Probe(
        "A-LDRED-DATA", images.program("sm_103a", (op,)),
        "Does .abs change the loaded registers of tcgen05.ld.red too?",
        "no: thread 0's registers hold -1, -3, -2, -0.5 as stored and its redval is 3.0 (.max.abs).",
        "the registers hold the magnitudes 1, 3, 2, 0.5.",
    )


def ldred_scope() -> Probe:
    op = Tcgen05Ld("16x32bx2", 2, red_op="max", red_type="u32", split_offset=2)
    return Probe(
        "A-LDRED-SCOPE", _rows([[1, 9, 4, 3]]).program("sm_103a", (op,)),
        "What does each thread of a .16x32bx2.red reduce?",
        "its own registers: lane 0 = [1, 9, 4, 3], split offset 2, .x2: thread 0 (columns 0-1) gets 9, thread 16 "
        "(columns 2-3) gets 4.",
        "both halves together (9 for both threads), or the whole warp's registers.",
    )


def _cp_images(ctas: int) -> tuple[Images, sdesc_codec.SmemDescriptor]:
    """A .128x128b source per CTA (row r at bytes 16r..16r+15), its bytes (x mod 128) | (CTA << 7)."""
    images = Images(ctas=ctas)
    size = CP_ROWS * CP_ROW_BYTES
    for cta in range(ctas):
        images.smem_bytes(cta, 0, ((np.arange(size) % 128) | cta << 7).astype(np.uint8))
    return images, kmajor(0, CP_ROWS)


def cp_pair_source() -> Probe:
    images, desc = _cp_images(2)
    op = Tcgen05Cp("128x128b", cta_group=2, s_desc=sdesc_codec.encode(desc))
    return Probe(
        "A-CP-PAIR-SOURCE", images.program("sm_100a", (op,)),
        "Where does each CTA's data come from with tcgen05.cp.cta_group::2?",
        "each CTA from its own shared memory at the descriptor's addresses: CTA c's lanes 0-127 x columns 0-3 hold its "
        "own rows, bytes (x mod 128) | (c << 7).",
        "both CTAs receive the issuing CTA 0's rows (bytes below 0x80 in CTA 1 too).",
    )


def cp_desc() -> Probe:
    images, desc = _cp_images(1)
    op = Tcgen05Cp("128x128b", s_desc=sdesc_codec.TABLE_40.field("swizzle").with_value(sdesc_codec.encode(desc), 3))
    return Probe(
        "A-CP-DESC", images.program("sm_100a", (op,)),
        "What does tcgen05.cp do with a source descriptor of swizzle code 3 (invalid, Table 40)?",
        "undefined: the oracle refuses the program.",
        "a fault, or rows gathered as with code 2 (128B: bit 61 ignored) or 1 (128B with 32B atoms: bit 62 ignored), "
        "told apart by the distinct source bytes.",
        refusal="tcgen05.cp source descriptor is invalid: swizzle code 3 (PTX ISA 9.7.16.4.1, Table 40)",
    )


def data_movement_probes() -> list[Probe]:
    """The probes of this module, in the order of docs/assumptions.md."""
    return [shift_row0(), shift_lanes(), shift_dir(), unpack_high16(), st_split_overlap(), ldred_f32(), ldred_data(),
            ldred_scope(), cp_pair_source(), cp_desc()]
