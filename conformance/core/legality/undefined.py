"""undefined_behaviour(program): every `program` rule the program's legal instructions break as
they run, from the ISA's shapes and the program's TMEM allocation, shared-memory segments and
CTAs, without running it.

It covers the data-movement instructions (tcgen05.ld, .st, .cp, .shift) and the CTA pair of
every tcgen05 operation that acts on one; what an MMA reads from its operands (sparsity
metadata values, scale factors, shared memory) the oracle alone judges. The oracle reaches its
own verdict from the cells it touches (`tcgen05_conformance.oracles.execute.run` raises `UndefinedBehaviour`), and
tests hold the two to the same answer on every drawn program.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import Instruction, Tcgen05Cp, Tcgen05Ld, Tcgen05Mma, Tcgen05Shift, Tcgen05St
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.layouts.smem import ElementStorage, element_bit_addresses
from tcgen05_conformance.core.legality.check import Findings, Violation, check
from tcgen05_conformance.core.program import SMEM_BYTES, Program
from tcgen05_conformance.core.state import initial_smem

WORD_BITS = 32  # a TMEM cell (9.7.16.1)
CP_CHUNK_BYTES = 16  # tcgen05.cp moves 16-byte chunks: one core-matrix row, or 16 packed codes and padding (9.7.16.9.1)
PACK_COLUMNS = 2  # .pack::16b / .unpack::16b: a 32-bit register holds 16 bits of each of two columns (9.7.16.8.2)


def undefined_behaviour(program: Program) -> list[Violation]:
    """All `program` rules the program breaks (empty when every operation is defined); messages
    name the operation as "ops[k] OP: ...". An operation that breaks an instruction rule is
    `check`'s to report and is skipped here."""
    found = Findings()
    initialised = initial_smem(program)[1] if any(isinstance(op, Tcgen05Cp) for op in program.ops) else None
    for k, op in enumerate(program.ops):
        if check(op, program.target):
            continue
        where = f"ops[{k}] {op.OP}"
        if isinstance(op, (Tcgen05Mma, Tcgen05Cp, Tcgen05Shift)):
            found.require(op.cta_group == 1 or program.ctas >= 2, "program.cta-pair",
                          f"{where}: .cta_group::{op.cta_group} in a {program.ctas}-CTA program")
        for lanes, columns in _tmem_footprint(op, found, where):
            found.require(lanes.stop <= dm.TMEM_LANES and columns.stop <= program.tmem_columns, "program.tmem-allocation",
                          f"{where}: lanes {lanes.start}-{lanes.stop - 1}, columns {columns.start}-{columns.stop - 1} "
                          f"pass the allocation ({dm.TMEM_LANES} lanes, {program.tmem_columns} columns)")
        if isinstance(op, Tcgen05Cp):
            _check_cp_source(op, program, initialised, found, where)
    return list(found)


def _tmem_footprint(op: Instruction, found: Findings, where: str) -> list[tuple[range, range]]:
    """The boxes of TMEM (lanes, columns) an operation touches; ld/st rules on the boxes
    themselves (warp quarter, overlapping halves) are checked here."""
    if isinstance(op, (Tcgen05Ld, Tcgen05St)):
        return _ldst_footprint(op, found, where)
    if isinstance(op, Tcgen05Cp):
        lane, column = taddr_codec.decode(op.taddr)
        shape = dm.CP_SHAPES[op.shape]
        return [(range(lane, lane + shape.lane_span), range(column, column + shape.bits // WORD_BITS))]
    if isinstance(op, Tcgen05Shift):
        lane, column = taddr_codec.decode(op.taddr)
        return [(range(lane, lane + dm.SHIFT_ROWS + 1), range(column, column + dm.SHIFT_BITS // WORD_BITS))]
    return []


def _ldst_footprint(op: Tcgen05Ld | Tcgen05St, found: Findings, where: str) -> list[tuple[range, range]]:
    """A .LANESxBITS shape covers LANES lanes and BITS / 32 columns, .num times along the columns
    (9.7.16.2.3), twice the columns under .pack::16b / .unpack::16b; .16x32bx2 makes two such
    accesses, the second immHalfSplitoff columns after taddr."""
    shape = dm.LDST_SHAPES[op.shape]
    lane, column = taddr_codec.decode(op.taddr)
    packed = op.pack if isinstance(op, Tcgen05Ld) else op.unpack
    width = op.num * shape.bits // WORD_BITS * (PACK_COLUMNS if packed else 1)
    starts = (column, column + op.split_offset) if shape.split else (column,)
    lanes = range(lane, lane + shape.lanes)
    quarter = lane - lane % dm.LANES_PER_WARP_QUARTER
    found.require(lanes.stop <= quarter + dm.LANES_PER_WARP_QUARTER, "program.ldst-warp-lanes",
                  f"{where}: .{op.shape} at lane {lane} reaches lane {lanes.stop - 1}, outside lanes "
                  f"{quarter}-{quarter + dm.LANES_PER_WARP_QUARTER - 1} of the executing warp")
    if isinstance(op, Tcgen05St) and shape.split:
        found.require(op.split_offset >= width, "program.st-split-overlap",
                      f"{where}: .{op.shape}.x{op.num}{'.unpack::16b' if packed else ''} halves of {width} columns "
                      f"start {op.split_offset} columns apart (immHalfSplitoff)")
    return [(lanes, range(start, start + width)) for start in starts]


def _check_cp_source(op: Tcgen05Cp, program: Program, initialised: np.ndarray, found: Findings, where: str) -> None:
    """The source of a tcgen05.cp is a K-major canonical matrix of the shape's rows, each row's
    bytes its 8-bit elements (9.7.16.9.2 with 9.7.16.3.3); with decompression (9.7.16.9.1) only
    the packed codes at the start of each 16-byte chunk are read, not the padding."""
    d = sdesc_codec.decode(op.s_desc)
    invalid = [*d.fixed_field_errors, *([f"swizzle code {d.swizzle[1:]}"] if d.swizzle.startswith("?") else [])]
    if invalid:
        found.add("program.cp-source-descriptor", f"{where}: source descriptor: " + "; ".join(invalid))
        return
    shape = dm.CP_SHAPES[op.shape]
    row_bytes = shape.bits // 8
    addresses = element_bit_addresses(d, True, shape.lanes, row_bytes, ElementStorage(CP_CHUNK_BYTES, 8)) // 8
    if op.src_fmt is not None:
        element_bits, _padding = dm.CP_DECOMPRESS[op.src_fmt]
        addresses = addresses[:, np.arange(row_bytes) % CP_CHUNK_BYTES < CP_CHUNK_BYTES * element_bits // 8]
    if addresses.max() >= SMEM_BYTES:
        found.add("program.cp-source-initialised",
                  f"{where}: reads shared-memory byte {int(addresses.max()):#x}, beyond the {SMEM_BYTES}-byte shared memory")
        return
    for cta in range(min(op.cta_group, program.ctas)):
        unset = addresses[~initialised[cta][addresses]]
        if unset.size:
            found.add("program.cp-source-initialised",
                      f"{where}: reads shared-memory byte {int(unset.min()):#x} of CTA {cta}, which the program "
                      "does not initialise")
