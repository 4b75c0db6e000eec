"""Oracle semantics of the tcgen05 data-movement instructions (PTX ISA 9.7.16.8-9): tcgen05.ld
(with .red), tcgen05.st, tcgen05.cp and tcgen05.shift, acting on a `OracleState`.

The ISA shows the thread/lane maps of the ld/st shapes (Figures 183-187), pack/unpack (Figure 193)
and the 4/6-bit decompression (Figures 194-198) only as images; those facts come from CUTLASS,
cited beside each table. Where neither settles a point the interpretation is a named assumption
(A-...), recorded in docs/assumptions.md with a probe that settles it on silicon.

TMEM addresses in the operations are (lane << 16) | column relative to the allocation base,
which is column 0 of the state (9.7.16.1.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.formats import get_format
from tcgen05_conformance.core.instructions import Tcgen05Cp, Tcgen05Ld, Tcgen05Shift, Tcgen05St
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.layouts.ldst import FRAGMENTS, HALF_MASK, WARP_THREADS, fragment_cells  # noqa: F401 (FRAGMENTS: the mutants' table)
from tcgen05_conformance.core.layouts.smem import ElementStorage, element_bit_addresses
from tcgen05_conformance.oracles.state import OracleState, UndefinedBehaviour

def _warp_cells(state: OracleState, shape: str, num: int, packed: bool, taddr: int, split_offset: int | None,
                what: str) -> tuple[np.ndarray, np.ndarray]:
    """Absolute TMEM (lanes, columns) a warp's ld/st touches; refuses lanes outside the 32-lane
    quarter of the executing warp, the one owning the taddr lane (9.7.16.8.1), and cells outside
    the allocation."""
    if dm.LDST_SHAPES[shape].split and split_offset is None:
        raise UndefinedBehaviour(f"{what}.{shape} without its immHalfSplitoff operand (PTX ISA 9.7.16.8.3-4)")
    lane0, column0 = taddr_codec.decode(taddr)
    lanes, columns = fragment_cells(shape, num, packed, split_offset)
    lanes, columns = lanes + lane0, columns + column0
    first = lane0 - lane0 % dm.LANES_PER_WARP_QUARTER
    if lanes.max() >= first + dm.LANES_PER_WARP_QUARTER:
        raise UndefinedBehaviour(
            f"{what}.{shape} at lane {lane0} reaches lane {int(lanes.max())}, outside lanes "
            f"{first}-{first + dm.LANES_PER_WARP_QUARTER - 1} of the executing warp (PTX ISA 9.7.16.8.1)"
        )
    state.check_tmem(lanes, columns, what)
    return lanes, columns


def ld(state: OracleState, op: Tcgen05Ld, cta: int = 0) -> np.ndarray:
    """The registers of the warp executing `op` (the one owning the taddr lane quarter), uint32
    [32 threads, R], appended to `state.loads`. With .red the array is [32, R + 1]: columns 0..R-1
    are the loaded registers r (the raw TMEM words, which .abs does not touch: assumption
    A-LDRED-DATA) and column R is the thread's redval (9.7.16.8.3), as the bits of an f32 / u32 / s32."""
    lanes, columns = _warp_cells(state, op.shape, op.num, op.pack, op.taddr, op.split_offset, "tcgen05.ld")
    words = state.tmem[cta][lanes[:, :, None], columns]
    registers = (words[:, :, 0] & HALF_MASK) | ((words[:, :, 1] & HALF_MASK) << 16) if op.pack else words[:, :, 0]
    if op.red_op is not None:
        registers = np.concatenate([registers, reduce_registers(registers, op)[:, None]], axis=1)
    registers = registers.astype(np.uint32)
    state.loads.append(registers)
    return registers


def st(state: OracleState, op: Tcgen05St, registers: np.ndarray, cta: int = 0) -> None:
    """Write the warp's registers (uint32 [32, R]) into TMEM. .unpack::16b stores each register's
    low half in the lower 16 bits of the even column and its high half in the odd column, the
    upper 16 bits of both cleared (assumption A-UNPACK-HIGH16). Two threads writing one cell
    (.16x32bx2 halves that overlap) is refused (assumption A-ST-SPLIT-OVERLAP)."""
    lanes, columns = _warp_cells(state, op.shape, op.num, op.unpack, op.taddr, op.split_offset, "tcgen05.st")
    registers = np.asarray(registers, dtype=np.uint32)
    if registers.shape != lanes.shape:
        raise ValueError(f"tcgen05.st.{op.shape}.x{op.num} takes registers {lanes.shape}, got {registers.shape}")
    words = np.stack([registers & HALF_MASK, registers >> 16], axis=-1) if op.unpack else registers[:, :, None]
    cells = np.broadcast_to(lanes[:, :, None], columns.shape) * state.columns + columns
    if np.unique(cells).size != cells.size:
        raise UndefinedBehaviour(
            f"tcgen05.st.{op.shape}.x{op.num}: the two halves overlap (immHalfSplitoff {op.split_offset}), "
            "so two threads write the same TMEM cell"
        )
    state.tmem[cta][lanes[:, :, None], columns] = words


# --- tcgen05.ld.red (9.7.16.8.3) ------------------------------------------------------------

F32_CANONICAL_NAN = get_format("f32").canonical_nan
F32_SIGN = 0x80000000
F32_EXPONENT = 0x7F800000
INT32 = np.iinfo(np.int32)
# redOp -> (integer reduction, index of the f32 winner, key a NaN gets so that it never wins).
RED_OPS = {
    "min": (np.min, np.argmin, INT32.max),
    "max": (np.max, np.argmax, INT32.min),
}
RED_INTEGER_VIEWS = {"u32": np.uint32, "s32": np.int32}


def reduce_registers(registers: np.ndarray, op: Tcgen05Ld) -> np.ndarray:
    """redval of each thread (uint32 [32]): .redOp over the thread's own registers, the columns it
    loaded from its lane (for .16x32bx2: of its own half; assumption A-LDRED-SCOPE)."""
    if op.red_type == "f32":
        return _reduce_f32(registers, op.red_op, op.red_abs, op.red_nan)
    values = registers.view(RED_INTEGER_VIEWS[op.red_type])
    return RED_OPS[op.red_op][0](values, axis=1).astype(values.dtype).view(np.uint32)


def _reduce_f32(bits: np.ndarray, red_op: str, absolute: bool, nan: bool) -> np.ndarray:
    """min/max over binary32 bit patterns as PTX min/max.f32 define them (no .ftz: subnormals
    kept): -0.0 < +0.0; a NaN is skipped unless .NaN, and the result is the canonical NaN when
    every input is NaN or, with .NaN, any is; .abs compares and returns magnitudes (assumption
    A-LDRED-F32)."""
    _, winner, nan_key = RED_OPS[red_op]
    if absolute:
        bits = bits & ~np.uint32(F32_SIGN)
    is_nan = (bits & ~np.uint32(F32_SIGN)) > F32_EXPONENT
    signed = bits.view(np.int32)
    key = np.where(signed < 0, signed ^ INT32.max, signed)  # monotone in the value, -0.0 just below +0.0
    pick = winner(np.where(is_nan, nan_key, key), axis=1)
    result = bits[np.arange(bits.shape[0]), pick]
    nan_result = is_nan.all(axis=1) | (nan & is_nan.any(axis=1))
    return np.where(nan_result, np.uint32(F32_CANONICAL_NAN), result).astype(np.uint32)


# --- the registers a program's tcgen05.st stores --------------------------------------------

WORD = 0xFFFFFFFF
# Seed mixing: x = seed * A + thread * B + register * C + K (mod 2^32; K keeps thread 0, register 0
# of seed 0 off zero, the value TMEM starts with), then Wellons' "lowbias32" finaliser: two
# (xor-shift, multiply) rounds and a closing xor-shift.
HASH_INPUT_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D)
HASH_OFFSET = 0x27D4EB2F
HASH_ROUNDS = ((16, 0x7FEB352D), (15, 0x846CA68B))
HASH_FINAL_SHIFT = 16


def st_registers(op: Tcgen05St) -> np.ndarray:
    """The registers (uint32 [32 threads, R]) a program's tcgen05.st stores, from `op.values_seed`.
    Thread t (%laneid), register r (the r-th register of the vector operand) holds, all arithmetic
    mod 2^32 (mul.lo.u32, add.u32, xor.b32, shr.b32 in PTX):

        x = seed * 0x9E3779B1 + t * 0x85EBCA77 + r * 0xC2B2AE3D + 0x27D4EB2F   (seed = values_seed mod 2^32)
        x = (x ^ (x >> 16)) * 0x7FEB352D
        x = (x ^ (x >> 15)) * 0x846CA68B
        x =  x ^ (x >> 16)
    """
    count = dm.LDST_SHAPES[op.shape].regs_per_num * op.num
    a, b, c = HASH_INPUT_MULTIPLIERS
    thread = np.arange(WARP_THREADS)[:, None].astype(np.uint64)
    register = np.arange(count, dtype=np.uint64)[None, :]
    x = (np.uint64((op.values_seed * a + HASH_OFFSET) & WORD) + thread * np.uint64(b) + register * np.uint64(c)) & np.uint64(WORD)
    for shift_bits, multiplier in HASH_ROUNDS:
        x = ((x ^ (x >> np.uint64(shift_bits))) * np.uint64(multiplier)) & np.uint64(WORD)
    return (x ^ (x >> np.uint64(HASH_FINAL_SHIFT))).astype(np.uint32)


# --- tcgen05.cp (9.7.16.9) ------------------------------------------------------------------


@dataclass(frozen=True)
class CpLanes:
    """Destination lanes of source row r, relative to the taddr lane: (r % block) +
    block_stride * (r // block) + each of `copies` (the multicast)."""

    block: int
    block_stride: int
    copies: tuple[int, ...]


# (shape, multicast) -> lanes, from CUTLASS include/cute/atom/copy_traits_sm100.hpp, whose UTCCP
# ValID lists the logical bits as (source row, bit along the row, broadcast / repeat) -> TMEM address.
CP_LANES: dict[tuple[str, str | None], CpLanes] = {
    # Copy_Traits<SM100_UTCCP_128dp256bit_1cta>: ValID (128,256):(lane, bit).
    ("128x256b", None): CpLanes(128, 128, (0,)),
    # Copy_Traits<SM100_UTCCP_4dp256bit_1cta>: SrcLayout (4,256):(32, 128) over ValID (128,256):(lane, bit):
    # row r to lane 32 r, one lane of each 32-lane subpartition.
    ("4x256b", None): CpLanes(1, 32, (0,)),
    # Copy_Traits<SM100_UTCCP_128dp128bit_1cta>: ValID (128,128):(lane, bit).
    ("128x128b", None): CpLanes(128, 128, (0,)),
    # Copy_Traits<SM100_UTCCP_2x64dp128bitlw0213_1cta>: ValID (64,128,2):(lane, bit, 64 lanes): warps 0/2 get
    # rows 0-31, warps 1/3 rows 32-63.
    ("64x128b", "warpx2::02_13"): CpLanes(64, 64, (0, 64)),
    # Copy_Traits<SM100_UTCCP_2x64dp128bitlw0123_1cta>: ValID (32,128,2,2):(lane, bit, 64 lanes, 32 lanes),
    # SrcLayout repeat mode = rows 32-63: warps 0/1 get rows 0-31, warps 2/3 rows 32-63.
    ("64x128b", "warpx2::01_23"): CpLanes(32, 64, (0, 32)),
    # Copy_Traits<SM100_UTCCP_4x32dp128bit_1cta>: ValID (32,128,4):(lane, bit, 32 lanes), broadcast stride 0.
    ("32x128b", "warpx4"): CpLanes(32, 32, (0, 32, 64, 96)),
}
CHUNK_BYTES = 16  # a core-matrix row: 16 bytes, or 16 compressed elements plus padding (9.7.16.9.1)
ELEMENTS_PER_CHUNK = 16  # .b8x16
# 9.7.16.9.1, Figures 195, 197, 198: where a 4/6-bit code lands in its 8-bit TMEM byte: "FP4 UTCCP holder
# byte 00xxxx00 (payload bits [5:2])", "FP6 ... 0xxxxxx0 (payload bits [6:1])" (CUTLASS
# examples/python/CuTeDSL/experimental/primitives/tcgen05/cp_narrow_a_to_tmem_mma.py, module docstring).
DECOMPRESS_SHIFT = {"b4x16_p64": 2, "b6x16_p32": 1}


def _peer_ctas(state: OracleState, cta: int, cta_group: int, what: str) -> tuple[int, ...]:
    """The CTAs a single-thread op touches: its own, and with .cta_group::2 its peer, the other CTA
    of the even/odd pair (9.7.16.5.2)."""
    if cta_group == 1:
        return (cta,)
    if (cta ^ 1) >= state.ctas:
        raise UndefinedBehaviour(f"{what}.cta_group::2 from CTA {cta} has no peer CTA in a {state.ctas}-CTA program")
    return (cta, cta ^ 1)


def _chunk_addresses(d: sdesc_codec.SmemDescriptor, rows: int, chunks: int) -> np.ndarray:
    """Byte address of each 16-byte chunk (row, chunk) [rows, chunks]: the source is a K-major
    canonical matrix, rows along the strided dimension, bytes along the leading one (CUTLASS
    include/cute/atom/mma_traits_sm100.hpp `get_utccp_smem_desc_tensor`: UMMA::smem_desc<Major::K>
    over the UTCCP ValID modes (core_matrix_strided, core_matrix_leading))."""
    bits = element_bit_addresses(d, True, rows, chunks * CHUNK_BYTES, ElementStorage(CHUNK_BYTES, 8))
    return bits[:, ::CHUNK_BYTES] >> 3


def _decompress(packed: np.ndarray, src_fmt: str) -> np.ndarray:
    """16 little-endian packed codes per chunk ([..., bytes]) to their 8-bit TMEM bytes [..., 16]."""
    element_bits, _padding = dm.CP_DECOMPRESS[src_fmt]
    bits = np.unpackbits(packed, axis=-1, bitorder="little").reshape(*packed.shape[:-1], ELEMENTS_PER_CHUNK, element_bits)
    codes = bits @ (1 << np.arange(element_bits))
    return (codes << DECOMPRESS_SHIFT[src_fmt]).astype(np.uint8)


def _source_words(state: OracleState, cta: int, op: Tcgen05Cp, rows: int, row_bytes: int) -> np.ndarray:
    """The rows a tcgen05.cp writes, as TMEM words uint32 [rows, row_bytes / 4] (byte j of a row in
    column j // 4, little-endian), read from `cta`'s shared memory and decompressed if asked."""
    d = sdesc_codec.decode(op.s_desc)
    if d.fixed_field_errors or d.swizzle.startswith("?"):
        problems = ", ".join(d.fixed_field_errors) or f"swizzle code {d.swizzle[1:]}"
        raise UndefinedBehaviour(f"tcgen05.cp source descriptor is invalid: {problems} (PTX ISA 9.7.16.4.1, Table 40)")
    chunks = _chunk_addresses(d, rows, row_bytes // CHUNK_BYTES)
    read = CHUNK_BYTES
    if op.src_fmt is not None:
        read = ELEMENTS_PER_CHUNK * dm.CP_DECOMPRESS[op.src_fmt][0] // 8  # the padding is not read
    data = state.read_smem(cta, chunks[:, :, None] + np.arange(read), "tcgen05.cp")
    if op.src_fmt is not None:
        data = _decompress(data, op.src_fmt)
    return np.ascontiguousarray(data, dtype=np.uint8).reshape(rows, row_bytes).view("<u4")


def cp(state: OracleState, op: Tcgen05Cp, cta: int = 0) -> None:
    """Copy a matrix from shared memory to TMEM (9.7.16.9.2). With .cta_group::2 each CTA of the
    pair receives the rows read from its own shared memory at the descriptor's addresses
    (assumption A-CP-PAIR-SOURCE)."""
    shape = dm.CP_SHAPES[op.shape]
    route = CP_LANES.get((op.shape, op.multicast))
    if route is None:
        raise UndefinedBehaviour(f"tcgen05.cp.{op.shape} with {f'.multicast::{op.multicast}' if op.multicast else 'no .multicast'}"
                                 " is not a form the ISA defines (PTX ISA 9.7.16.9.2)")
    lane0, column0 = taddr_codec.decode(op.taddr)
    rows = np.arange(shape.lanes)
    lanes = lane0 + (rows % route.block + route.block_stride * (rows // route.block))[:, None] + np.array(route.copies)
    columns = column0 + np.arange(shape.bits // 32)
    state.check_tmem(lanes, columns, "tcgen05.cp")
    for target in _peer_ctas(state, cta, op.cta_group, "tcgen05.cp"):
        words = _source_words(state, target, op, shape.lanes, shape.bits // 8)
        state.tmem[target][lanes[:, :, None], columns] = words[:, None, :]


# --- tcgen05.shift (9.7.16.9.3) -------------------------------------------------------------

SHIFT_LANES = 32  # .31x256b: the 31 upper rows of a 32-lane matrix move down one lane
SHIFT_COLUMNS = 256 // 32


def shift(state: OracleState, op: Tcgen05Shift, cta: int = 0) -> None:
    """Shift the 32-lane x 256-bit matrix at taddr down one lane: lane i + 1 receives lane i for
    i = 0..30, the last lane's old contents are lost, and lane 0 keeps its contents (assumption
    A-SHIFT-ROW0); only the 32 lanes from the taddr lane move (assumption A-SHIFT-LANES)."""
    lane0, column0 = taddr_codec.decode(op.taddr)
    lanes = lane0 + np.arange(SHIFT_LANES)
    columns = column0 + np.arange(SHIFT_COLUMNS)
    state.check_tmem(lanes, columns, "tcgen05.shift")
    for target in _peer_ctas(state, cta, op.cta_group, "tcgen05.shift"):
        block = state.tmem[target][lanes[:, None], columns]
        state.tmem[target][lanes[1:, None], columns] = block[:-1]
