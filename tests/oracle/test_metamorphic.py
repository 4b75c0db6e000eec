"""Metamorphic relations of the tcgen05.mma oracle over generated programs.

No silicon reachable here runs tcgen05, so these relations are the oracle's internal consistency
checks (DESIGN.md, "Where truth comes from"): each transforms a generated program into variants
whose expected states follow from the original's, runs them through the oracle and compares. Each
compares states that differ when the oracle ignores or misreads the feature it is about:

* an MMA writes D only (`check_untouched_cells`);
* collector usage, negating both operands, transposing an operand (re-laid in the other
  major-ness) and re-swizzling one leave the whole state unchanged: transformations that compose,
  so one or two oracle runs per program check all four (`check_equivalences`);
* negating one operand negates D = A*B (`check_negate_one`);
* disable-output-lane, enable-input-d, the zero-column mask (`check_disable_output_lane`,
  `check_accumulating_onto_zero`, `check_zero_column_mask`);
* cta_group::2 = its two halves, sparse = dense with the expanded A, .ws = non-.ws with M = 128,
  .ashift = A rows moved down, block scale 1.0 = unscaled and 2^e = times 2^e
  (`check_cta_pair_halves`, `check_sparse_as_dense`, `check_ws_as_plain`, `check_ashift`,
  `check_block_scale`).

Programs carry exact inputs (generators/operand_images.py) and run under the `exact` profile. N is
at most MAX_N (the row's smallest N where that is larger): no relation depends on N, and small N
keeps the runs cheap. A program takes ~20 ms to draw and an oracle run 2-8 ms, and three relations
need disjoint families (cta_group::2, .ws M = 128, .kind::mxf8f6f4), so each of the three tests
draws one family and checks every relation that applies to each program; non-.ws cta_group::1
MMAs run as the references of the CTA-pair, sparse and .ws relations. Under the derandomized `ci`
profile every relation holds on at least 1,000 programs (counts in the test docstrings).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.isa.swizzle import SWIZZLE_MODES
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.layouts.mma_shape import MmaShape, shape_of
from tcgen05_conformance.core.layouts.smem import SWIZZLE_ROW_BYTES, ElementStorage, element_bit_addresses, storage_for
from tcgen05_conformance.core.layouts.tmem import a_tmem_container_bits, d_positions, split_lanes
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.program import SMEM_BYTES, Program, SmemSegment, TmemRegion
from tcgen05_conformance.generators.descriptors import swizzles_for
from tcgen05_conformance.generators.instructions import shape_classes_for_target
from tcgen05_conformance.generators.operand_images import write_word_fields
from tcgen05_conformance.generators.programs import tcgen05_programs
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.oracles.mma import operand_a, sparsity_metadata
from tcgen05_conformance.oracles.numerics.matmul import values
from tcgen05_conformance.core.layouts.operands import gather
from tcgen05_conformance.oracles.state import OracleState, initial_state

MAX_N = 16  # N of the drawn programs: at most this, or the row's smallest N where that is larger
RELATION_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
# 4/6-bit elements of these kinds sit 16 to a 16-byte chunk in shared memory (9.7.16.10.4.4).
PADDED_KINDS = frozenset({"f8f6f4", "mxf8f6f4"})
# A 16-bit D sits in the low half of its 32-bit cell (9.7.16.10.4.1).
D_BITS = {"f16": 16, "f32": 32, "s32": 32}
SIGN_BITS = {"f16": 1 << 15, "f32": 1 << 31, "s32": 0}
D_DTYPES = {"f16": np.float16, "f32": np.float32}
UE8M0_ONE = 127  # the ue8m0 code of 2^0 (exponent bias 127)
FILL_BYTE = 0x5A  # the bytes of a re-laid operand image that no element occupies
PATTERN_BYTES = max(mode.pattern_bytes for mode in SWIZZLE_MODES.values())  # Table 41: 1024
Equivalence = tuple[str, Callable[[Program], Program]]  # a state-preserving transformation, named


# --- programs -------------------------------------------------------------------------------


def programs(weight: Callable[[isa.ShapeClass], int], max_n: int = MAX_N) -> st.SearchStrategy[Program]:
    """Generated single-MMA programs on sm_100a and sm_103a, Table 39 class c drawn with relative
    weight `weight(c)` (0: never), N at most `max_n` or the row's smallest N."""
    classes = {target: [dataclasses.replace(c, n=tuple(n for n in c.n if n <= max_n) or c.n[:1])
                        for c in shape_classes_for_target(target) for _ in range(weight(c))]
               for target in TCGEN05_TARGETS}
    return st.sampled_from(TCGEN05_TARGETS).flatmap(
        lambda target: st.sampled_from(classes[target]).flatmap(lambda c: tcgen05_programs(target, c)))


def is_plain_form(c: isa.ShapeClass) -> bool:
    """Neither .ws nor block-scaled: the forms with disable-output-lane (9.7.16.10.9.1)."""
    return not c.ws and c.kind not in isa.BLOCK_SCALED_KINDS


def mma_of(p: Program) -> Tcgen05Mma:
    (op,) = p.ops
    return op


@functools.lru_cache(maxsize=64)
def idesc_of(op: Tcgen05Mma) -> idesc_codec.InstrDescriptor:
    return idesc_codec.decode(op.kind, op.idesc)


@functools.lru_cache(maxsize=64)
def shape(op: Tcgen05Mma) -> MmaShape:
    return shape_of(op)


def with_op(p: Program, **changes) -> Program:
    return dataclasses.replace(p, ops=(dataclasses.replace(mma_of(p), **changes),))


def with_idesc(p: Program, **fields) -> Program:
    op = mma_of(p)
    return with_op(p, idesc=idesc_codec.encode(op.kind, dataclasses.replace(idesc_of(op), **fields)))


def with_tmem(p: Program, tmem: np.ndarray) -> Program:
    """`p` starting from the TMEM image `tmem` [ctas, 128, columns] (every cell given)."""
    return dataclasses.replace(p, tmem_columns=tmem.shape[2], tmem=tuple(
        TmemRegion(0, 0, dm.TMEM_LANES, tmem.shape[2], tmem[cta].astype("<u4").tobytes(), cta)
        for cta in range(tmem.shape[0])))


@functools.lru_cache(maxsize=8)
def state_of(p: Program) -> OracleState:
    """The state before `p` runs (cached: read it, never change it)."""
    return initial_state(p)


def initial_tmem(p: Program) -> np.ndarray:
    """A copy of the TMEM image before `p` runs."""
    return state_of(p).tmem.copy()


@functools.lru_cache(maxsize=256)
def violations(op: Tcgen05Mma, target: str) -> tuple[str, ...]:
    """The legality rules `op` breaks on `target` (tcgen05_conformance.core.legality), cached."""
    return tuple(str(v) for v in check(op, target))


@functools.lru_cache(maxsize=16)
def final_tmem(p: Program) -> np.ndarray:
    """The TMEM image after `p` (read-only; cached, so variants that coincide run once). The
    relations only build programs the legality model accepts: checked here."""
    for op in p.ops:
        assert not violations(op, p.target), violations(op, p.target)
    tmem = run(p).tmem
    tmem.flags.writeable = False
    return tmem


# --- D and its cells ------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def d_cells(op: Tcgen05Mma) -> tuple[np.ndarray, np.ndarray]:
    """(lane, column) of each element (r, j) of one CTA's D, each [rows, N] (9.7.16.10.5; cached:
    read them, never change them)."""
    s = shape(op)
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    lanes, columns = d_positions(s.dp, s.d.n, lane0)
    columns += col0
    lanes.flags.writeable = columns.flags.writeable = False
    return lanes, columns


def d_of(op: Tcgen05Mma, tmem: np.ndarray) -> np.ndarray:
    """Every CTA's D [ctas, rows, N] in a TMEM image [ctas, 128, columns], 16-bit D in the low half."""
    lanes, columns = d_cells(op)
    return tmem[:, lanes, columns] & np.uint32((1 << D_BITS[idesc_of(op).dtype]) - 1)


def is_zero(d: np.ndarray, dtype: str) -> np.ndarray:
    """D elements that are +0 or -0 (0 for s32)."""
    return (d & ~np.uint32(SIGN_BITS[dtype])) == 0


def is_nan(d: np.ndarray, dtype: str) -> np.ndarray:
    """D elements that are NaN (none for s32)."""
    return np.zeros(d.shape, dtype=bool) if dtype == "s32" else np.isnan(values(d, dtype))


def assert_equal_but_zero_signs(actual: np.ndarray, expected: np.ndarray, dtype: str, what: str) -> None:
    """Bit-for-bit equality, except that where both are zero their signs may differ."""
    differ = (actual != expected) & ~(is_zero(actual, dtype) & is_zero(expected, dtype))
    if differ.any():
        where = tuple(int(i) for i in np.argwhere(differ)[0])
        raise AssertionError(f"{what}: {int(differ.sum())} elements differ, first at {where}: "
                             f"{int(actual[where]):#x} != {int(expected[where]):#x}")


def disabled_lanes(op: Tcgen05Mma, ctas: int) -> np.ndarray:
    """[ctas, 128]: the lanes disable-output-lane keeps from being written (9.7.16.10.9.1: bit i
    of element w masks lane 32 w + i; with cta_group::2 lanes 128.. are the peer CTA's,
    assumption A-DOL-CTA2)."""
    flags = np.zeros(ctas * dm.TMEM_LANES, dtype=bool)
    bits = [(word >> i) & 1 for word in op.disable_output_lane or () for i in range(32)]
    flags[:len(bits)] = bits
    return flags.reshape(ctas, dm.TMEM_LANES)


def written(op: Tcgen05Mma, ctas: int) -> np.ndarray:
    """[ctas, rows, N]: the D elements the MMA writes (not in a disabled lane)."""
    lanes, _ = d_cells(op)
    return ~disabled_lanes(op, ctas)[:, lanes]


# --- operands as code matrices --------------------------------------------------------------


def storage(kind: str, type_name: str) -> ElementStorage:
    return storage_for(isa.TYPE_BITS[type_name], kind in PADDED_KINDS)


def b_rows(op: Tcgen05Mma) -> int:
    """Columns of B in each CTA's shared memory: N / cta_group, plus a zero-column mask's column
    shift (Table 45)."""
    shift = zcmask_codec.decode(op.zero_column_mask).column_shift if op.zero_column_mask is not None else 0
    return idesc_of(op).n // op.cta_group + shift


def b_codes(p: Program, cta: int) -> np.ndarray:
    """The codes of B [b_rows, K] in one CTA's shared memory, as its descriptor lays them out."""
    op = mma_of(p)
    d = idesc_of(op)
    return gather(state_of(p), cta, sdesc_codec.decode(op.b_desc), not d.transpose_b, b_rows(op), shape(op).k,
                  storage(op.kind, d.btype), "B")


def a_codes(p: Program, cta: int) -> np.ndarray:
    """One CTA's A as stored [rows, K (K/2 when sparse)]. The data-path splits of the 2x2 and 1x4
    layouts read copies of one A from their own lanes; the generator writes equal copies."""
    op = mma_of(p)
    a = operand_a(state_of(p), op, shape(op), cta)
    assert (a == a[:1]).all(), "the data-path splits read different copies of A"
    return a[0]


def metadata(p: Program, cta: int) -> np.ndarray:
    """One CTA's 4-bit sparsity metadata chunks [rows, chunks] (equal copies per data-path split)."""
    op = mma_of(p)
    meta = sparsity_metadata(state_of(p), op, shape(op), cta)
    assert (meta == meta[:1]).all(), "the data-path splits read different copies of the metadata"
    return meta[0]


def dense_a(stored: np.ndarray, meta: np.ndarray, kind: str) -> np.ndarray:
    """The dense A [rows, K] that a sparse A [rows, K/2] with its metadata stands for
    (9.7.16.10.8.1-2): in 2:4 sparsity a 4-bit chunk covers 4 elements, bits 0-1 and 2-3 giving
    the positions of its two stored elements in order; in 1:2 (tf32) a chunk covers 2 elements,
    its index pair (0,1) or (2,3) of 16-bit halves naming element 0 or 1. Other elements are 0."""
    assert kind in ("f16", "tf32", "f8f6f4", "i8"), kind
    rows, chunks = meta.shape
    dense = np.zeros((rows, 2 * stored.shape[1]), dtype=np.uint32)
    r = np.arange(rows)[:, None]
    q = np.arange(chunks)[None, :]
    if kind == "tf32":
        dense[r, 2 * q + (meta & 3) // 2] = stored
    else:
        for slot in (0, 1):
            dense[r, 4 * q + ((meta >> (2 * slot)) & 3)] = stored[:, slot::2]
    return dense


# --- operand placement ----------------------------------------------------------------------


def compact_offsets(swizzle: str, k_major: bool, rows: int, k: int, per_chunk: int) -> tuple[int, int] | None:
    """(LBO, SBO) of a canonical layout (9.7.16.3.3) that holds a rows x k operand densely, or
    None when a K-major row does not fit one row of the swizzle pattern. K-major: 8-row core
    matrices of one 16-byte chunk (no swizzle) or of a pattern row of chunks; MN-major: MN chunks
    across a pattern row, K in groups of 8 rows (4 with 32-byte atoms) per swizzle atom."""
    width = SWIZZLE_ROW_BYTES[swizzle]
    if k_major:
        chunks = -(-k // per_chunk)
        if swizzle == "none":
            return 128, 128 * chunks
        return (16, 8 * width) if 16 * chunks <= width else None
    if swizzle == "none":
        return 128 * -(-rows // per_chunk), 128
    k_atom = 4 if swizzle == "128B_base32B" else 8
    atom = width * k_atom
    return atom * -(-k // k_atom), atom


def free_offset(p: Program) -> int:
    """The first swizzle-pattern boundary after every shared-memory segment of `p`."""
    end = max((s.offset + len(s.data) for s in p.smem), default=0)
    return -(-end // PATTERN_BYTES) * PATTERN_BYTES


def with_fields(image: np.ndarray, bit_addresses: np.ndarray, codes: np.ndarray, bits: int) -> np.ndarray:
    """A copy of a uint8 image with `bits`-wide little-endian fields written at the bit addresses."""
    image_bits = np.unpackbits(image, bitorder="little")
    for bit in range(bits):
        image_bits[bit_addresses + bit] = (codes >> bit) & 1
    return np.packbits(image_bits, bitorder="little")


def with_operand(p: Program, codes: list[np.ndarray], k_major: bool, swizzle: str,
                 where: ElementStorage) -> tuple[Program, int]:
    """`p` with the code matrices `codes` (one [rows, k] per CTA) written into a fresh shared-memory
    image after its own, in the compact canonical layout of this major-ness and swizzle, and the
    descriptor word that addresses them. Bytes no element occupies hold FILL_BYTE, so an MMA that
    reads the wrong bytes reads garbage."""
    rows, k = codes[0].shape
    lbo, sbo = compact_offsets(swizzle, k_major, rows, k, where.per_chunk)
    start = free_offset(p)
    desc = sdesc_codec.SmemDescriptor(start, lbo, sbo, swizzle)
    bits = element_bit_addresses(desc, k_major, rows, k, where)
    assert (np.diff(np.sort(bits, axis=None)) >= where.bits).all(), "the re-laid operand overlaps itself"
    size = -(-(int(bits.max()) + where.bits) // 128) * 16 - start
    assert start + size <= SMEM_BYTES
    fill = np.full(size, FILL_BYTE, dtype=np.uint8)
    segments = tuple(SmemSegment(start, with_fields(fill, bits - 8 * start, matrix, where.bits).tobytes(), cta)
                     for cta, matrix in enumerate(codes))
    return dataclasses.replace(p, smem=p.smem + segments), sdesc_codec.encode(desc)


def relaid(p: Program, operand: str, transposed: bool, swizzle: str) -> Program:
    """`p` with operand "a" or "b" copied element by element into a fresh image in the canonical
    layout of the given major-ness (transposed: MN-major) and swizzle, its descriptor and transpose
    bit changed to match."""
    op = mma_of(p)
    d = idesc_of(op)
    s = shape(op)
    type_name, was_transposed, word = ((d.atype, d.transpose_a, op.a_desc) if operand == "a"
                                       else (d.btype, d.transpose_b, op.b_desc))
    rows, k = (s.dp.rows, s.k_stored) if operand == "a" else (b_rows(op), s.k)
    where = storage(op.kind, type_name)
    codes = [gather(state_of(p), cta, sdesc_codec.decode(word), not was_transposed, rows, k, where, operand)
             for cta in range(op.cta_group)]
    p, word = with_operand(p, codes, not transposed, swizzle, where)
    return with_op(with_idesc(p, **{f"transpose_{operand}": transposed}), **{f"{operand}_desc": word})


def layouts(p: Program) -> list[tuple[str, bool, str]]:
    """(operand, transposed, swizzle) of every canonical layout that a shared-memory operand of `p`
    may take in a legal variant and that holds it: the other major-ness where Tables 49, 50 and 52
    allow it (4/6-bit elements are never MN-major; the rest through the legality model), and the
    swizzles Table 52 allows for the major-ness."""
    op = mma_of(p)
    d = idesc_of(op)
    s = shape(op)
    options = []
    for operand in ("a", "b") if op.a_tmem is None else ("b",):
        type_name = d.atype if operand == "a" else d.btype
        bits = isa.TYPE_BITS[type_name]
        rows, k = (s.dp.rows, s.k_stored) if operand == "a" else (b_rows(op), s.k)
        for transposed in (False, True):
            if transposed != layout_of(p, operand)[0]:
                if transposed and bits not in isa.TRANSPOSE_SWIZZLE_RULE:
                    continue
                word = sdesc_codec.encode(sdesc_codec.SmemDescriptor(0, 16, 16, swizzles_for(bits, transposed)[0]))
                trial = with_op(with_idesc(p, **{f"transpose_{operand}": transposed}), **{f"{operand}_desc": word})
                if violations(mma_of(trial), p.target):
                    continue
            options += [(operand, transposed, swizzle) for swizzle in swizzles_for(bits, transposed)
                        if compact_offsets(swizzle, not transposed, rows, k, storage(op.kind, type_name).per_chunk)]
    return options


def relayouts(p: Program) -> tuple[list[tuple[str, bool, str]], list[tuple[str, bool, str]]]:
    """The layouts of `layouts(p)` that transpose an operand, and those that swizzle it otherwise in
    its own major-ness."""
    options = [(layout, layout_of(p, layout[0])) for layout in layouts(p)]
    transpositions = [layout for layout, (was_transposed, _) in options if layout[1] != was_transposed]
    reswizzlings = [layout for layout, was in options if layout[1] == was[0] and layout[2] != was[1]]
    return transpositions, reswizzlings


def layout_of(p: Program, operand: str) -> tuple[bool, str]:
    """(transposed, swizzle) of a shared-memory operand of `p`."""
    op = mma_of(p)
    d = idesc_of(op)
    word = op.a_desc if operand == "a" else op.b_desc
    return (d.transpose_a if operand == "a" else d.transpose_b), sdesc_codec.decode(word).swizzle


def with_a_in_tmem(p: Program) -> Program:
    """`p` with its shared-memory A copied into fresh TMEM columns after the allocation (which grows
    to hold them), in the A layout of its data path at D's lane alignment (9.7.16.10.5; 4/6-bit
    elements in 8-bit containers, 9.7.16.10.4.3)."""
    op = mma_of(p)
    d = idesc_of(op)
    s = shape(op)
    lane0 = taddr_codec.decode(op.d_tmem)[0]
    container = a_tmem_container_bits(op.kind, isa.TYPE_BITS[d.atype])
    col0 = p.tmem_columns
    columns = next(count for count in dm.ALLOC_COLUMN_COUNTS if count >= col0 + -(-s.k_stored * container // 32))
    tmem = np.zeros((p.ctas, dm.TMEM_LANES, columns), dtype=np.uint32)
    tmem[:, :, :col0] = initial_tmem(p)
    lanes = np.broadcast_to(split_lanes(s.dp, lane0)[:, :, None], (s.dp.splits, s.dp.rows, s.k_stored))
    kk = np.arange(s.k_stored)
    for cta in range(p.ctas):
        write_word_fields(tmem[cta], lanes, col0 + kk * container // 32, kk * container % 32,
                          np.broadcast_to(a_codes(p, cta), lanes.shape), container)
    return with_op(with_tmem(p, tmem), a_tmem=taddr_codec.encode(lane0, col0), a_desc=0)


# --- reference programs built from code matrices --------------------------------------------


def reference_program(p: Program, ws: bool, m: int, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Program:
    """A one-CTA program that computes D = A B^T + C [m, N] with dense MMAs of `p`'s kind, types,
    negation, saturation, enable-input-d and scale-input-d (.ws as given): A [m, K] and B [N, K]
    K-major without swizzle in shared memory, C at the D cells of its own layout from TMEM lane 0,
    column 0. A K longer than the dense shape's runs as a chain of MMAs, each after the first
    accumulating onto the last (enable-input-d true, no scaling)."""
    op = mma_of(p)
    d = idesc_of(op)
    n = b.shape[0]
    k = isa.shape_class_for(op.kind, ws, 1, False, m).k
    descriptor = idesc_codec.InstrDescriptor(m=m, n=n, atype=d.atype, btype=d.btype, dtype=d.dtype,
                                             saturate=d.saturate, negate_a=d.negate_a, negate_b=d.negate_b)
    first = Tcgen05Mma(kind=op.kind, ws=ws, idesc=idesc_codec.encode(op.kind, descriptor),
                       enable_input_d=op.enable_input_d, scale_input_d=op.scale_input_d)
    tmem = np.zeros((1, dm.TMEM_LANES, next(count for count in dm.ALLOC_COLUMN_COUNTS if count >= n)), dtype=np.uint32)
    lanes, cells = d_cells(first)
    tmem[0, lanes, cells] = c
    q = with_tmem(Program(target=p.target, ops=(), profile=p.profile), tmem)
    ops = []
    for k0 in range(0, a.shape[1], k):
        q, a_desc = with_operand(q, [a[:, k0:k0 + k]], True, "none", storage(op.kind, d.atype))
        q, b_desc = with_operand(q, [b[:, k0:k0 + k]], True, "none", storage(op.kind, d.btype))
        chained = {"enable_input_d": True, "scale_input_d": None} if ops else {}
        ops.append(dataclasses.replace(first, a_desc=a_desc, b_desc=b_desc, **chained))
    return dataclasses.replace(q, ops=tuple(ops))


def first_link_is_exact(op: Tcgen05Mma, a: np.ndarray, b: np.ndarray, c: np.ndarray, k: int) -> bool:
    """Whether the first link of a chained reference, A[:, :k] B[:, :k]^T + C (A and B negated as
    the instruction descriptor says), is exact in D's format, so that the chain rounds once as the
    unchained MMA does. float64 holds that sum exactly
    when A and B values are multiples of 2^-8 below 2^8 and C a multiple of 2^-24 below 2^16 (at
    most 64 products: multiples of 2^-24 below 2^23). s32 sums of 8-bit integers are exact."""
    d = idesc_of(op)
    if d.dtype == "s32":
        return True

    def on_grid(x: np.ndarray, step: int, bound: int) -> bool:
        return bool(np.all(np.abs(x) < 2.0**bound) and np.all(np.mod(x * 2.0**step, 1) == 0))

    av, bv = values(a[:, :k], d.atype), values(b[:, :k], d.btype)
    cv = values(c, d.dtype) * 2.0 ** -(op.scale_input_d or 0) if op.enable_input_d else np.zeros(c.shape)
    if not (on_grid(av, 8, 8) and on_grid(bv, 8, 8) and on_grid(cv, 24, 16)):
        return False
    link = (-1.0) ** (d.negate_a + d.negate_b) * (av @ bv.T) + cv
    return bool(np.all(link.astype(D_DTYPES[d.dtype]).astype(np.float64) == link))


# --- the relations --------------------------------------------------------------------------


def check_untouched_cells(p: Program) -> None:
    """An MMA writes D and nothing else (9.7.16.10.9.1): every TMEM cell outside the D cells of
    the data-path layout keeps its initial value, in every CTA of the CTA group."""
    event("relation checked: untouched cells")
    before, after = initial_tmem(p), final_tmem(p)
    outside = np.ones(before.shape, dtype=bool)
    lanes, columns = d_cells(mma_of(p))
    outside[:, lanes, columns] = False
    np.testing.assert_array_equal(after[outside], before[outside], err_msg="a cell outside D changed")


def collector_variants(p: Program) -> list[str | None]:
    """The legal collector-usage qualifiers of `p`'s form other than its own (9.7.16.10.9.1, .3):
    none, or buffer a (b0-b3 with .ws) with fill/use/lastuse/discard, not fill/use with .ashift."""
    op = mma_of(p)
    buffers = isa.COLLECTOR_BUFFERS_WS if op.ws else ("a",)
    usages = [u for u in isa.COLLECTOR_OPS if not (op.ashift and u in ("fill", "use"))]
    return [c for c in [None] + [f"{b}::{u}" for b in buffers for u in usages] if c != op.collector]


def collector_change(p: Program, collector: str | None) -> Equivalence:
    """Collector usage only permits the tensor core to reuse a loaded A or B ("reuse is
    opportunistic", 9.7.16.10): another qualifier leaves the state unchanged."""
    return f"collector usage {mma_of(p).collector} -> {collector}", lambda q: with_op(q, collector=collector)


def negated_both(q: Program) -> Program:
    """`q` with both A and B negated (instruction descriptor bits 13-14, 9.7.16.10.1), which leaves
    every product, and so the state, unchanged: (-a)(-b) = ab exactly, zero signs included."""
    d = idesc_of(mma_of(q))
    return with_idesc(q, negate_a=not d.negate_a, negate_b=not d.negate_b)


def relayout(layout: tuple[str, bool, str]) -> Equivalence:
    """The same matrix in another canonical layout (9.7.16.3.3) gives the same state: an operand
    copied element by element into the given major-ness (the transpose bit, Tables 49-52) and
    swizzle (9.7.16.10.6), its descriptor and transpose bit changed to match."""
    operand, transposed, swizzle = layout
    return (f"{operand.upper()} copied {'MN' if transposed else 'K'}-major with swizzle {swizzle}",
            lambda q: relaid(q, operand, transposed, swizzle))


def check_equivalences(p: Program, equivalences: list[Equivalence]) -> None:
    """State-preserving transformations compose: `p` with all of `equivalences` applied ends in
    `p`'s state, so one oracle run checks several relations. On a mismatch each is checked alone
    and the error names those that fail by themselves."""
    variant = p
    for name, transform in equivalences:
        event(f"relation checked: {name}")
        variant = transform(variant)
    if np.array_equal(final_tmem(variant), final_tmem(p)):
        return
    alone = [name for name, transform in equivalences if not np.array_equal(final_tmem(transform(p)), final_tmem(p))]
    raise AssertionError(f"TMEM changed under {' + '.join(name for name, _ in equivalences)}; "
                         f"alone: {', '.join(alone) or 'none'}")


def disable_output_lane_words(p: Program) -> st.SearchStrategy[tuple[int, ...]]:
    words = isa.DISABLE_OUTPUT_LANE_WORDS[mma_of(p).cta_group]
    return st.tuples(*[st.integers(0, 2**32 - 1)] * words)


def check_disable_output_lane(p: Program, words: tuple[int, ...]) -> None:
    """disable-output-lane (9.7.16.10.9.1): "if a bit in the mask is 1, then the corresponding lane
    in the Tensor Memory for the resultant matrix D will not be updated". With `p`'s mask, or
    `words` when `p` has none, every disabled lane keeps its initial cells and every other lane
    holds what the MMA without the mask writes there."""
    event("relation checked: disable output lane")
    op = mma_of(p)
    masked = p if op.disable_output_lane is not None else with_op(p, disable_output_lane=words)
    disabled = disabled_lanes(mma_of(masked), p.ctas)[:, :, None]
    expected = np.where(disabled, initial_tmem(p), final_tmem(with_op(p, disable_output_lane=None)))
    np.testing.assert_array_equal(final_tmem(masked), expected, err_msg="disable-output-lane")


def check_accumulating_onto_zero(p: Program) -> None:
    """enable-input-d false issues D = A*B (9.7.16.10.9.1); true issues D = A*B + D. Over a D of +0
    the two agree wherever the result is non-zero (x + 0 = x) and are both zero elsewhere (only the
    sign of a zero may differ). The variant without accumulation keeps `p`'s random D, so an
    oracle that accumulated anyway fails."""
    event("relation checked: accumulating onto zero")
    op = mma_of(p)
    tmem = initial_tmem(p)
    lanes, columns = d_cells(op)
    tmem[:, lanes, columns] = 0
    onto_zero = with_op(with_tmem(p, tmem), enable_input_d=True)
    overwriting = with_op(p, enable_input_d=False)
    cells = written(op, p.ctas)
    assert_equal_but_zero_signs(d_of(op, final_tmem(overwriting))[cells], d_of(op, final_tmem(onto_zero))[cells],
                                idesc_of(op).dtype, "A*B against A*B + (+0)")


def check_negate_one(p: Program, operand: str) -> None:
    """Negating one operand (9.7.16.10.1) of D = A*B (enable-input-d false) negates every product and
    so every non-zero result (round-to-nearest is symmetric about 0); zero results stay zero. NaN
    results (from non-finite inputs where the operands' images overlap) have no sign to compare."""
    event("relation checked: negate one")
    op = mma_of(p)
    d = idesc_of(op)
    base = with_op(p, enable_input_d=False)
    flag = f"negate_{operand}"
    negated = with_idesc(base, **{flag: not getattr(d, flag)})
    before, after = d_of(op, final_tmem(base)), d_of(op, final_tmem(negated))
    cells = written(op, p.ctas) & ~is_nan(before, d.dtype)
    before, after = before[cells], after[cells]
    assert_equal_but_zero_signs(after, before ^ np.uint32(SIGN_BITS[d.dtype]), d.dtype, f"negating {operand}")


def cta_half(p: Program, cta: int) -> Program:
    """The cta_group::1 MMA with M/2 rows that CTA `cta` of `p`'s cta_group::2 MMA performs where
    the two data-path layouts agree (M = 256: A and D; M = 128 sparse: C and F, 9.7.16.10.5): that
    CTA's shared memory and TMEM, with both CTAs' B columns in a fresh image, K-major."""
    op = mma_of(p)
    d = idesc_of(op)
    own = Program(target=p.target, ops=(), profile=p.profile, tmem_columns=p.tmem_columns,
                  smem=tuple(dataclasses.replace(s, cta=0) for s in p.smem if s.cta == cta),
                  tmem=tuple(dataclasses.replace(r, cta=0) for r in p.tmem if r.cta == cta))
    b = np.concatenate([b_codes(p, c) for c in range(2)])
    own, b_desc = with_operand(own, [b], True, "none", storage(op.kind, d.btype))
    half = dataclasses.replace(d, m=d.m // 2, transpose_b=False)
    return dataclasses.replace(own, ops=(dataclasses.replace(
        op, cta_group=1, idesc=idesc_codec.encode(op.kind, half), b_desc=b_desc),))


def check_cta_pair_halves(p: Program) -> None:
    """A cta_group::2 MMA (9.7.16.5.1) is its two halves: CTA c computes its M/2 rows of D from its
    own A and the whole B, the concatenation of both CTAs' N/2 columns (assumption
    A-CTA-PAIR-SPLIT), which is what a cta_group::1 MMA with M/2 rows computes from that A and B.
    Where the layouts agree CTA c's whole TMEM image matches; M = 128 dense (layout B, 2x2) has no
    cta_group::1 counterpart, so its D is compared with M = 64 (layout F) over the same matrices.
    Without disable-output-lane and .ashift (M = 64 has no .ashift)."""
    event("relation checked: cta pair halves")
    p = with_op(p, disable_output_lane=None, ashift=False, collector=None)
    op = mma_of(p)
    d = idesc_of(op)
    after = final_tmem(p)
    if d.m == 256 or d.sparse:
        for cta in range(2):
            np.testing.assert_array_equal(final_tmem(cta_half(p, cta))[0], after[cta],
                                          err_msg=f"CTA {cta} of cta_group::2 against cta_group::1")
        return
    b = np.concatenate([b_codes(p, c) for c in range(2)])
    before = d_of(op, initial_tmem(p))
    for cta in range(2):
        half = reference_program(p, False, d.m // 2, a_codes(p, cta), b, before[cta])
        np.testing.assert_array_equal(d_of(half.ops[0], final_tmem(half))[0], d_of(op, after)[cta],
                                      err_msg=f"CTA {cta} of cta_group::2 M = 128 against cta_group::1 M = 64")


def check_sparse_as_dense(p: Program, cta: int) -> None:
    """A sparse MMA (9.7.16.10.8) computes the dense MMA of the same kind over the dense A that its
    stored elements and metadata stand for: CTA `cta`'s D (with cta_group::2, from its own A and
    the whole B, as in check_cta_pair_halves). The dense K is half the sparse K, so the reference
    chains two dense MMAs; programs whose first link would round are rejected (it must round only
    once, as the sparse MMA does). Without disable-output-lane and zero-column mask."""
    p = with_op(p, disable_output_lane=None, zero_column_mask=None)
    op = mma_of(p)
    d = idesc_of(op)
    b = np.concatenate([b_codes(p, c) for c in range(op.cta_group)])
    a = dense_a(a_codes(p, cta), metadata(p, cta), op.kind)
    c = d_of(op, initial_tmem(p))[cta]
    assume(first_link_is_exact(op, a, b, c, shape(op).k // 2))
    event("relation checked: sparse as dense")
    dense = reference_program(p, op.ws, d.m // op.cta_group, a, b, c)
    np.testing.assert_array_equal(d_of(dense.ops[0], final_tmem(dense))[0], d_of(op, final_tmem(p))[cta],
                                  err_msg=f"CTA {cta}: sparse against dense with the expanded A")


def check_ashift(p: Program) -> None:
    """.ashift (9.7.16.10.9.1) "shifts the rows of the A matrix down by one row, except for the last
    row": the MMA equals the same MMA without .ashift over a TMEM image whose A rows were moved down
    by one, row r taking row r-1's cells and row 0 keeping its own (assumption A-ASHIFT-ROW0). A in
    shared memory is first copied into TMEM. Only lastuse/discard collector usage goes with
    .ashift: both run without another one (no collector changes a result, `collector_change`)."""
    event("relation checked: ashift")
    p = p if mma_of(p).a_tmem is not None else with_a_in_tmem(p)
    op = mma_of(p)
    d = idesc_of(op)
    s = shape(op)
    lane0, col0 = taddr_codec.decode(op.a_tmem)
    columns = slice(col0, col0 + -(-s.k_stored * a_tmem_container_bits(op.kind, isa.TYPE_BITS[d.atype]) // 32))
    lanes = split_lanes(s.dp, lane0)
    before = initial_tmem(p)
    moved = before.copy()
    moved[:, lanes[:, 1:], columns] = before[:, lanes[:, :-1], columns]
    collector = op.collector if op.collector is None or op.collector.endswith(("lastuse", "discard")) else None
    shifted = with_op(p, ashift=True, collector=collector)
    unshifted = with_op(with_tmem(p, moved), ashift=False, collector=collector)
    np.testing.assert_array_equal(d_of(op, final_tmem(shifted)), d_of(op, final_tmem(unshifted)),
                                  err_msg=".ashift against A rows moved down in TMEM")


def zero_column_masks(p: Program) -> st.SearchStrategy[int]:
    """Generating zero-column masks (Table 45) with `p`'s column shift (its B image holds that many
    extra columns) and short spans, so that N columns see both zeroed and used runs."""
    op = mma_of(p)
    shift = zcmask_codec.decode(op.zero_column_mask).column_shift if op.zero_column_mask is not None else 0
    return st.builds(zcmask_codec.ZeroColumnMask, start_counts=st.tuples(*[st.integers(0, 31)] * 4),
                     first_spans=st.tuples(*[st.integers(0, 1)] * 4), non_zero_mask=st.just(True),
                     skip_span=st.integers(0, 15), use_span=st.integers(0, 15),
                     column_shift=st.just(shift)).map(zcmask_codec.encode)


def check_zero_column_mask(p: Program, word: int) -> None:
    """The zero-column mask (9.7.16.4.3) replaces the B columns its mask bits select by zeros: with
    enable-input-d those D columns hold 0*A + D, the initial D (a zero of either sign where that is
    zero), in the rows where A is finite (NaN where it is not: 0 * inf); every other column equals
    the same MMA with an all-zero mask (Non-Zero Mask bit clear) and the same column shift."""
    event("relation checked: zero column mask")
    p = with_op(p, enable_input_d=True)
    op = mma_of(p)
    d = idesc_of(op)
    mask = zcmask_codec.decode(word)
    masked = with_op(p, zero_column_mask=word)
    unmasked = with_op(p, zero_column_mask=zcmask_codec.encode(dataclasses.replace(mask, non_zero_mask=False)))
    bits = zcmask_codec.generate_mask(mask, d.m, d.n)
    zeroed = np.array([(bits >> j) & 1 for j in range(d.n)], dtype=bool)
    result = d_of(op, final_tmem(masked))
    np.testing.assert_array_equal(result[..., ~zeroed], d_of(op, final_tmem(unmasked))[..., ~zeroed],
                                  err_msg="a column the zero-column mask keeps")
    result, kept = result[..., zeroed], d_of(op, initial_tmem(p))[..., zeroed]
    finite = np.ones(result.shape, dtype=bool)
    if d.dtype != "s32":
        finite &= np.isfinite(values(a_codes(p, 0), d.atype)).all(axis=1)[None, :, None]
    assert_equal_but_zero_signs(result[finite], kept[finite], d.dtype, "a column the zero-column mask zeroes")
    assert is_nan(result[~finite], d.dtype).all(), "0 * A with a non-finite A is not NaN"


def check_ws_as_plain(p: Program) -> None:
    """.ws M = 128 (9.7.16.10.9.3) computes what the non-.ws cta_group::1 M = 128 MMA computes: both
    use data-path layout D (9.7.16.10.5.4) for D, A in TMEM and the metadata, so with no .ws-only
    feature (zero-column mask, B-reuse shift) the whole TMEM image agrees."""
    event("relation checked: ws as plain")
    ws = with_op(p, zero_column_mask=None)
    plain = with_idesc(with_op(ws, ws=False, collector=None), max_shift=0)
    np.testing.assert_array_equal(final_tmem(plain), final_tmem(ws), err_msg=".ws against non-.ws")


def scale_columns(address: int, count: int, sv: isa.ScaleVector, sf_id: int, k96: bool) -> slice:
    """The TMEM columns holding the scale factors of `count` rows (columns) in every lane: index i at
    column i // 32 (two per 32 with K = 96), byte SF_ID + f (9.7.16.10.7.2-3)."""
    col0 = taddr_codec.decode(address)[1]
    last = col0 + (2 if k96 else 1) * ((count - 1) // 32) + (sf_id + sv.factors - 1) // 4
    return slice(col0, last + 1)


def with_uniform_scales(p: Program, ea: int, eb: int) -> Program:
    """`p` (block-scaled) with every ue8m0 scale factor of A = 2^ea and of B = 2^eb: the whole
    scale-factor columns hold the code, whatever byte and lane reads them."""
    op = mma_of(p)
    d = idesc_of(op)
    s = shape(op)
    sv = isa.scale_vector(op.kind, op.scale_vec, d.k96)
    tmem = initial_tmem(p)
    tmem[:, :, scale_columns(op.scale_a_tmem, s.dp.rows, sv, d.sfa_id, d.k96)] = 0x01010101 * (UE8M0_ONE + ea)
    tmem[:, :, scale_columns(op.scale_b_tmem, d.n // s.dp.splits, sv, d.sfb_id, d.k96)] = 0x01010101 * (UE8M0_ONE + eb)
    return with_tmem(p, tmem)


def check_block_scale(p: Program, ea: int, eb: int) -> None:
    """Block scaling (9.7.16.10.7) multiplies each product by its A and B scale factors. With every
    factor 1.0 (ue8m0 code 127) a .kind::mxf8f6f4 MMA leaves the whole state of the .kind::f8f6f4
    MMA over the same operands (same types, layouts, data-path layout and TMEM image); with every
    factor of A = 2^ea and of B = 2^eb, D = A*B (enable-input-d false) is 2^(ea+eb) times the
    unscaled one, exactly, which an oracle that ignores the factors fails."""
    event("relation checked: block scale")
    op = mma_of(p)
    d = idesc_of(op)
    ones = with_op(with_uniform_scales(p, 0, 0), enable_input_d=False)
    plain = idesc_codec.InstrDescriptor(m=d.m, n=d.n, atype=d.atype, btype=d.btype, dtype="f32", sparse=d.sparse,
                                        negate_a=d.negate_a, negate_b=d.negate_b,
                                        transpose_a=d.transpose_a, transpose_b=d.transpose_b)
    unscaled = final_tmem(with_op(ones, kind="f8f6f4", block_scale=False, scale_vec=None, scale_a_tmem=0,
                                  scale_b_tmem=0, idesc=idesc_codec.encode("f8f6f4", plain)))
    np.testing.assert_array_equal(final_tmem(ones), unscaled, err_msg="scale factors 1.0 against .kind::f8f6f4")
    scaled = with_op(with_uniform_scales(p, ea, eb), enable_input_d=False)
    expected = d_of(op, unscaled).view(np.float32) * np.float32(2.0 ** (ea + eb))
    np.testing.assert_array_equal(d_of(op, final_tmem(scaled)), expected.view(np.uint32),
                                  err_msg=f"scale factors 2^{ea} x 2^{eb} against .kind::f8f6f4")


# --- tests ----------------------------------------------------------------------------------


def equivalence_runs(p: Program, data: st.DataObject) -> list[list[Equivalence]]:
    """The state-preserving transformations drawn for `p`, grouped into runs: another collector
    usage; both operands negated (where the kind negates); an operand in shared memory moved to the
    other major-ness (where its type, kind and N allow it); an operand re-swizzled in its own
    major-ness. A swizzle change goes to the other operand, or to a run of its own when only the
    transposed operand allows one."""
    transpositions, reswizzlings = relayouts(p)
    run = [collector_change(p, data.draw(st.sampled_from(collector_variants(p)), "collector"))]
    if isa.NEGATE_SUPPORTED[mma_of(p).kind]:
        run.append(("A and B negated", negated_both))
    if transpositions:
        transposition = data.draw(st.sampled_from(transpositions), "transposition")
        run.append(relayout(transposition))
        other_operand = [r for r in reswizzlings if r[0] != transposition[0]]
        if reswizzlings and not other_operand:
            return [run, [relayout(data.draw(st.sampled_from(reswizzlings), "swizzle change"))]]
        reswizzlings = other_operand
    if reswizzlings:
        run.append(relayout(data.draw(st.sampled_from(reswizzlings), "swizzle change")))
    return [run]


@settings(max_examples=1250, **RELATION_SETTINGS)
@given(p=programs(lambda c: int(is_plain_form(c) and c.cta_group == 2)), data=st.data())
def test_cta_pair_forms(p: Program, data: st.DataObject) -> None:
    """Non-.ws, non-block-scaled cta_group::2 MMAs (M = 128, 256; dense and sparse; the four kinds).
    Under the ci profile 1,000 programs: untouched cells, collector usage, disable-output-lane,
    accumulation, the CTA-pair split and .ashift on all; negation on the 880 not of kind i8;
    a transposition on the 727 and a swizzle change on the 858 with an operand in shared memory
    that allows one; sparse = dense on 550."""
    op = mma_of(p)
    cta = data.draw(st.integers(0, 1), "CTA")
    runs = equivalence_runs(p, data)
    words = data.draw(disable_output_lane_words(p), "disable-output-lane")
    negated = data.draw(st.sampled_from("ab"), "negated operand")
    if op.sparse:
        check_sparse_as_dense(p, cta)
    check_untouched_cells(p)
    for equivalences in runs:
        check_equivalences(p, equivalences)
    check_disable_output_lane(p, words)
    check_accumulating_onto_zero(p)
    if isa.NEGATE_SUPPORTED[op.kind]:
        check_negate_one(p, negated)
    check_cta_pair_halves(p)
    check_ashift(p)


def ws_weight(c: isa.ShapeClass) -> int:
    """.ws classes, M = 128 twenty times as often as M = 32 and 64."""
    return (20 if c.m == 128 else 1) if c.ws else 0


@settings(max_examples=1250, **RELATION_SETTINGS)
@given(p=programs(ws_weight), data=st.data())
def test_ws_forms(p: Program, data: st.DataObject) -> None:
    """.ws MMAs (the four kinds, dense and sparse, mostly M = 128). Under the ci profile 1,100
    programs: untouched cells, collector usage (buffers b0-b3) and the zero-column mask on all;
    .ws = non-.ws on the 1,020 with M = 128; negation on 907; a transposition on 966 and a swizzle
    change on 995; sparse = dense on 542."""
    op = mma_of(p)
    runs = equivalence_runs(p, data)
    mask = data.draw(zero_column_masks(p), "zero-column mask")
    negated = data.draw(st.sampled_from("ab"), "negated operand")
    if op.sparse:
        check_sparse_as_dense(p, 0)
    check_untouched_cells(p)
    for equivalences in runs:
        check_equivalences(p, equivalences)
    check_zero_column_mask(p, mask)
    if isa.NEGATE_SUPPORTED[op.kind]:
        check_negate_one(p, negated)
    if idesc_of(op).m == 128:
        check_ws_as_plain(p)


@settings(max_examples=1000, **RELATION_SETTINGS)
@given(p=programs(lambda c: int(c.kind == "mxf8f6f4" and c.cta_group == 1), max_n=8),
       exponents=st.tuples(st.integers(-3, 3), st.integers(-3, 3)).filter(lambda e: sum(e) != 0))
def test_block_scale(p: Program, exponents: tuple[int, int]) -> None:
    """.kind::mxf8f6f4 with cta_group::1 (dense K = 32, sparse K = 64) against .kind::f8f6f4, 1,000
    programs under the ci profile: scale factors 1.0, and 2^ea, 2^eb with ea + eb != 0."""
    check_block_scale(p, *exponents)
