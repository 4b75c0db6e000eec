"""Value coverpoints: the operand values a conformance run must exercise, as data, and which of them
a program hits.

Instruction forms are counted by `tcgen05_conformance.harness.coverage`; a bug that only shows for some
operand *values* (a scale code, a signed zero, an accumulation past 2^31) passes every form. Each
coverpoint names one value class of one operand of one instruction kind, with its ISA reference:

* element values of A and B per `.kind` and element type (Tables 39, 42-44; the number formats of
  `tcgen05_conformance.core.formats`): zero of each sign, a subnormal, the smallest and largest normal,
  infinities and NaN where the format has them; every code of the 4/6-bit formats; the integer
  extremes;
* the accumulator C (D as read) the same way, and .kind::i8 sums beyond the s32 range with and
  without .satfinite (9.7.16.10.9.1, Table 42 bit 3);
* every code of the ue8m0 and ue4m3 block-scale factors of A and B (Tables 54, 55; 9.7.16.10.7);
* scale-input-d 0-15 (9.7.16.10.9.1), disable-output-lane patterns, zero-column-mask spans and
  shifts at their limits (Table 45);
* tcgen05.ld.red min/max over signed zeros in both orders, NaN with and without .NaN, signed and
  unsigned integer orderings (9.7.16.8.3);
* TMEM addresses at the edges of the allocation (9.7.16.7.1, 9.7.16.8.1);
* wgmma's imm-scale-a and imm-scale-b, +1 and -1 (9.7.15.5.2), for the Hopper programs;
* a matrix descriptor's absolute leading-dimension address actually read (Table 40 bit 52,
  9.7.16.4.1.1: a K-major row longer than the two 16-byte chunks at the start address).

`hits(program)` is a pure function of the program: its initial images read through the layout
facts (`tcgen05_conformance.core.layouts`), no oracle. An operation's operand values are read only while
the memories are still the initial ones (up to and including the first operation that writes
them), which is every generated MMA program and the first operation of a data-movement program.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.formats import FINITE, INF, NAN, ZERO, FloatFormat, IntFormat, decode, get_format
from tcgen05_conformance.core.images import Images, initial_images
from tcgen05_conformance.core.instructions import Instruction, Tcgen05Cp, Tcgen05Ld, Tcgen05Mma, Tcgen05Shift, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.isa.targets import TARGETS, TCGEN05_TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.layouts.ldst import fragment_cells
from tcgen05_conformance.core.layouts.mma_shape import MmaShape, shape_of
from tcgen05_conformance.core.layouts.operands import block_scales, operand_a, operand_b
from tcgen05_conformance.core.layouts.smem import storage_for
from tcgen05_conformance.core.layouts.tmem import d_positions
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import UndefinedBehaviour


@dataclass(frozen=True)
class Coverpoint:
    """One value class: its stable `id`, the instruction `kind` and `operand` it belongs to (the
    rows and columns of the report's heat map), the `value` class, the ISA section that defines
    it, the instruction family a target must support and the target feature it needs ("" for none)."""

    id: str
    kind: str
    operand: str
    value: str
    isa: str
    feature: str = ""
    family: str = "tcgen05"


#: The value classes of a floating-point element or accumulator format that has them.
FLOAT_CLASSES = ("+0", "-0", "subnormal", "min normal", "max normal", "+inf", "-inf", "nan")
#: A format whose container holds bits that are not part of the value (tf32's 13 low bits, PTX ISA
#: "Alternate floating-point data formats") has the class of a code with some of them set.
IGNORED_BITS_SET = "ignored bits set"
#: Formats whose every code is a coverpoint (4/6-bit elements, OCP MX v1.0) and the scale formats.
EVERY_CODE_BITS = 6
SCALE_CODES = {"ue8m0": range(0x100), "ue4m3": range(0x80)}  # ue4m3: "sign bit must be 0"
INT_CLASSES = {"s8": {"min": -128, "0": 0, "max": 127}, "u8": {"0": 0, "max": 255},
               "s32": {"min": -2**31, "0": 0, "max": 2**31 - 1}}
SCALE_INPUT_D_KINDS = tuple(sorted(isa.SCALE_INPUT_D_KINDS))
DOL_PATTERNS = ("none disabled", "all disabled", "first lane only", "last lane only")
DOL_PEER_PATTERN = "peer CTA only"
SATURATION = ("above max", "below min")
LD_RED_F32_CLASSES = ("+0 before -0", "-0 before +0", "NaN with .NaN", "NaN skipped", "all NaN")
LD_RED_INT_CLASSES = {"s32": "negative and positive", "u32": "at and below 2^31"}
TMEM_EDGES = ("first column", "last column", "last lane quarter")
MMA_ISA = "PTX ISA 9.7.16.10.9.1, Tables 39, 42-44"
WGMMA_IMM_SCALES = ("imm-scale-a", "imm-scale-b")
LBO_ABSOLUTE_READ = "absolute LBO address read"
ABSOLUTE_FIRST_CHUNKS = 2  # chunks of a K-major row read at the start address in the absolute mode (9.7.16.4.1.1)


def _float_classes(fmt: FloatFormat) -> tuple[str, ...]:
    """The classes a float format has: no infinities outside IEEE specials, no NaN without them,
    no subnormals without a fraction."""
    out = [c for c in FLOAT_CLASSES if c not in ("+inf", "-inf", "nan")]
    if fmt.frac_bits == 0:
        out.remove("subnormal")
    if not fmt.signed:
        out.remove("-0")
    if fmt.specials == "ieee":
        out += ["+inf", "-inf"]
    if fmt.specials in ("ieee", "fn", "e8m0"):
        out.append("nan")
    if fmt.field_shift:
        out.append(IGNORED_BITS_SET)
    return tuple(out)


def value_classes(fmt_name: str) -> tuple[str, ...]:
    """The coverpoint values of one element or accumulator format."""
    fmt = get_format(fmt_name)
    if isinstance(fmt, IntFormat):
        return tuple(INT_CLASSES[fmt_name])
    if fmt.signed + fmt.exp_bits + fmt.frac_bits <= EVERY_CODE_BITS:
        return tuple(f"code {c:#04x}" for c in range(1 << (1 + fmt.exp_bits + fmt.frac_bits)))
    return _float_classes(fmt)


def _element_types(kind: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for types in isa.D_TYPES[kind].values() for t in types))


def _universe() -> Iterable[Coverpoint]:
    for kind in isa.KINDS:
        row = f"tcgen05.mma kind::{kind}"
        for operand in ("A", "B"):
            for fmt in _element_types(kind):
                for value in value_classes(fmt):
                    yield Coverpoint(f"mma.{kind}.{operand}.{fmt}.{value}", row, operand, f"{fmt} {value}", MMA_ISA)
        for dtype in isa.D_TYPES[kind]:
            for value in value_classes(dtype):
                yield Coverpoint(f"mma.{kind}.C.{dtype}.{value}", row, "C", f"{dtype} {value}", "PTX ISA 9.7.16.10.9.1 (D read)")
        if kind == "i8":
            for saturate in (True, False):
                for side in SATURATION:
                    qualifier = ".satfinite" if saturate else "no .satfinite"
                    yield Coverpoint(f"mma.i8.D.s32.{side}.{'satfinite' if saturate else 'wrap'}", row, "D",
                                     f"s32 sum {side}, {qualifier}", "PTX ISA 9.7.16.10.9.1, Table 42 bit 3")
        if kind in isa.BLOCK_SCALED_KINDS:
            for operand in ("scale A", "scale B"):
                for fmt in sorted({t for sv in isa.SCALE_VECTORS if sv.kind == kind for t in sv.scale_types}):
                    for code in SCALE_CODES[fmt]:
                        yield Coverpoint(f"mma.{kind}.{operand.replace(' ', '_')}.{fmt}.code {code:#04x}", row, operand,
                                         f"{fmt} code {code:#04x}", "PTX ISA 9.7.16.10.7, Tables 54, 55")
        if kind in isa.SCALE_INPUT_D_KINDS:
            for v in isa.SCALE_INPUT_D_RANGE:
                yield Coverpoint(f"mma.{kind}.scale-input-d.{v}", row, "scale-input-d", str(v), "PTX ISA 9.7.16.10.9.1")
    for group in isa.DISABLE_OUTPUT_LANE_WORDS:
        for pattern in DOL_PATTERNS + ((DOL_PEER_PATTERN,) if group == 2 else ()):
            yield Coverpoint(f"mma.cta{group}.disable-output-lane.{pattern}", f"tcgen05.mma cta_group::{group}",
                             "disable-output-lane", pattern, "PTX ISA 9.7.16.10.9.1")
    for value in _zcmask_limits():
        yield Coverpoint(f"mma.ws.zero-column-mask.{value}", "tcgen05.mma .ws", "zero-column mask", value, "PTX ISA 9.7.16.4.3, Table 45")
    for red_op in dm.LD_RED_OPS:
        for value in LD_RED_F32_CLASSES:
            yield Coverpoint(f"ld.red.f32.{red_op}.{value}", "tcgen05.ld.red", f".{red_op}.f32", value, "PTX ISA 9.7.16.8.3",
                             "tcgen05.ld.red")
        for red_type, value in LD_RED_INT_CLASSES.items():
            yield Coverpoint(f"ld.red.{red_type}.{red_op}.{value}", "tcgen05.ld.red", f".{red_op}.{red_type}", value,
                             "PTX ISA 9.7.16.8.3", "tcgen05.ld.red")
    for op in ("tcgen05.mma", "tcgen05.ld", "tcgen05.st"):
        for edge in TMEM_EDGES if op != "tcgen05.mma" else TMEM_EDGES[:2]:
            yield Coverpoint(f"tmem.{op.split('.')[1]}.{edge}", "TMEM address", op, edge, "PTX ISA 9.7.16.7.1, 9.7.16.8.1")
    for operand in ("A", "B"):
        yield Coverpoint(f"mma.desc.{operand}.{LBO_ABSOLUTE_READ}", "tcgen05.mma descriptors", f"{operand} descriptor",
                         LBO_ABSOLUTE_READ, "PTX ISA 9.7.16.4.1.1, Table 40 bit 52", "lbo-absolute")
    for operand in WGMMA_IMM_SCALES:
        for value in (1, -1):
            yield Coverpoint(f"wgmma.{operand}.{value:+d}", "wgmma.mma_async", operand, f"{value:+d}", "PTX ISA 9.7.15.5.2", family="wgmma")


def _zcmask_limits() -> tuple[str, ...]:
    shifts = sorted({*isa.ZCMASK_MAX_SHIFT.values(), isa.ZCMASK_MAX_SHIFT_DEFAULT})
    return ("all-zero mask", "skip span 0", "skip span 255", "use span 0", "use span 255", "start count 255",
            "column shift 0", *(f"column shift {s} (max)" for s in shifts))


COVERPOINTS: tuple[Coverpoint, ...] = tuple(_universe())
#: The targets a run draws programs for: the tcgen05 ones and those of wgmma (its Hopper programs).
RUN_TARGETS: tuple[str, ...] = (*TCGEN05_TARGETS, *(t for t in TARGETS if "wgmma" in target_named(t).families))
COVERPOINT_BY_ID: dict[str, Coverpoint] = {c.id: c for c in COVERPOINTS}


def reachability(cp: Coverpoint, targets: Iterable[str]) -> tuple[bool, str]:
    """Whether a run over `targets` can hit the coverpoint, and why not when it cannot."""
    targets = tuple(targets)
    if not any(cp.family in target_named(t).families for t in targets):
        return False, f"needs a {cp.family} target, which none of {', '.join(targets)} is"
    if cp.feature and not any(cp.feature in target_named(t).features for t in targets):
        return False, f"needs {cp.feature}, which none of {', '.join(targets)} has"
    return True, ""


# --- classifying values --------------------------------------------------------------------------


def classify(codes: np.ndarray, fmt_name: str) -> set[str]:
    """The value classes (`value_classes`) among element codes (uint32, any shape) of a format."""
    codes = np.asarray(codes, dtype=np.uint32).ravel()
    if codes.size == 0:
        return set()
    fmt = get_format(fmt_name)
    if isinstance(fmt, IntFormat):
        signed = codes.astype(np.int64)
        if fmt.signed:
            signed = np.where(signed >= 1 << (fmt.bits - 1), signed - (1 << fmt.bits), signed)
        present = set(np.unique(signed).tolist())
        return {name for name, v in INT_CLASSES[fmt_name].items() if v in present}
    if fmt.signed + fmt.exp_bits + fmt.frac_bits <= EVERY_CODE_BITS:
        width = 1 + fmt.exp_bits + fmt.frac_bits
        return {f"code {c:#04x}" for c in np.unique(codes & ((1 << width) - 1)).tolist()}
    d = decode(codes, fmt)
    found = set()
    zero = d.cls == ZERO
    found |= {"+0"} if (zero & (d.sign == 0)).any() else set()
    found |= {"-0"} if (zero & (d.sign == 1)).any() else set()
    finite = d.cls == FINITE
    hidden = 1 << fmt.frac_bits
    if fmt.frac_bits and (finite & (d.mant < hidden)).any():
        found.add("subnormal")
    if (finite & (d.mant == hidden) & (d.aexp == fmt.emin)).any():
        found.add("min normal")
    if (finite & (d.mant == fmt.max_mant) & (d.aexp == fmt.emax)).any():
        found.add("max normal")
    inf = d.cls == INF
    found |= {"+inf"} if (inf & (d.sign == 0)).any() else set()
    found |= {"-inf"} if (inf & (d.sign == 1)).any() else set()
    found |= {"nan"} if (d.cls == NAN).any() else set()
    if fmt.field_shift and (codes & np.uint32((1 << fmt.field_shift) - 1)).any():
        found.add(IGNORED_BITS_SET)
    return found


def scale_codes_present(codes: np.ndarray, fmt: str) -> set[str]:
    return {f"code {c:#04x}" for c in np.unique(np.asarray(codes, dtype=np.uint32)).tolist() if c in SCALE_CODES[fmt]}


# --- what a program hits -------------------------------------------------------------------------

#: Operations that change the memories later operations read (the others only read or synchronise).
WRITERS = (Tcgen05Mma, Tcgen05St, Tcgen05Cp, Tcgen05Shift)
D_WORD_MASK = {"f16": 0xFFFF, "f32": 0xFFFFFFFF, "s32": 0xFFFFFFFF}  # 9.7.16.10.4.1: a 16-bit D in the low half


def hits(program: Program) -> set[str]:
    """The ids of the coverpoints the program hits."""
    found: set[str] = set()
    images: Images | None = None
    initial = True
    for op in program.ops:
        if initial and isinstance(op, (Tcgen05Mma, Tcgen05Ld)):
            images = images or initial_images(program)
        found |= _op_hits(op, program, images if initial else None)
        initial = initial and not isinstance(op, WRITERS)
    return found


def _op_hits(op: Instruction, program: Program, images: Images | None) -> set[str]:
    if isinstance(op, Tcgen05Mma):
        return _mma_hits(op, program, images)
    if isinstance(op, (Tcgen05Ld, Tcgen05St)):
        return _ldst_hits(op, program, images)
    if isinstance(op, WgmmaMma):
        return {f"wgmma.imm-scale-a.{op.imm_scale_a:+d}", f"wgmma.imm-scale-b.{op.imm_scale_b:+d}"} & set(COVERPOINT_BY_ID)
    return set()


def _mma_hits(op: Tcgen05Mma, program: Program, images: Images | None) -> set[str]:
    try:
        s = shape_of(op)
    except (ValueError, KeyError):
        return set()
    d = s.d
    found = set()
    if op.scale_input_d is not None:
        found.add(f"mma.{op.kind}.scale-input-d.{op.scale_input_d}")
    if op.disable_output_lane is not None:
        found |= {f"mma.cta{op.cta_group}.disable-output-lane.{p}" for p in _dol_patterns(op.disable_output_lane)}
    if op.zero_column_mask is not None:
        found |= {f"mma.ws.zero-column-mask.{v}" for v in _zcmask_values(op.zero_column_mask, d.m)}
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    width = d.n // s.dp.splits
    found |= {"tmem.mma.first column"} if col0 == 0 else set()
    found |= {"tmem.mma.last column"} if col0 + width == program.tmem_columns else set()
    found |= _descriptor_hits(op, s)
    if images is not None:
        found |= _mma_value_hits(op, s, images)
    return {f for f in found if f in COVERPOINT_BY_ID}


def _descriptor_hits(op: Tcgen05Mma, s: MmaShape) -> set[str]:
    """A and B descriptors whose absolute leading-dimension address is read: absolute mode,
    K-major, and rows of more than the chunks read at the start address."""
    found = set()
    padded = s.kind in isa.PADDED_NARROW_KINDS
    for operand, desc, k, k_major, typ in (("A", op.a_desc, s.k_stored, not s.d.transpose_a, s.d.atype),
                                           ("B", op.b_desc, s.k, not s.d.transpose_b, s.d.btype)):
        if operand == "A" and op.a_tmem is not None:
            continue
        try:
            d = sdesc_codec.decode(desc)
        except ValueError:
            continue
        chunks = -(-k // storage_for(isa.TYPE_BITS[typ], padded).per_chunk)
        if d.lbo_absolute and k_major and chunks > ABSOLUTE_FIRST_CHUNKS:
            found.add(f"mma.desc.{operand}.{LBO_ABSOLUTE_READ}")
    return found


def _mma_value_hits(op: Tcgen05Mma, s: MmaShape, images: Images) -> set[str]:
    """Classes of A, B, C and the scale factors as the MMA reads them from the initial images
    (an operand whose read is undefined contributes nothing)."""
    d, kind = s.d, op.kind
    found: set[str] = set()
    shift = zcmask_codec.decode(op.zero_column_mask).column_shift if op.zero_column_mask is not None else 0
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    d_lane, d_col = d_positions(s.dp, d.n, lane0)
    d_col = d_col + col0
    try:
        b = operand_b(images, op, s, shift)
        found |= {f"mma.{kind}.B.{d.btype}.{v}" for v in classify(b, d.btype)}
    except UndefinedBehaviour:
        b = None
    for cta in range(op.cta_group):
        try:
            a = operand_a(images, op, s, cta)
            found |= {f"mma.{kind}.A.{d.atype}.{v}" for v in classify(a, d.atype)}
        except UndefinedBehaviour:
            a = None
        try:
            images.check_tmem(d_lane, d_col, "D")
        except UndefinedBehaviour:
            continue
        c = images.tmem[cta][d_lane, d_col] & np.uint32(D_WORD_MASK[d.dtype])
        if op.enable_input_d:
            found |= {f"mma.{kind}.C.{d.dtype}.{v}" for v in classify(c, d.dtype)}
        if op.block_scale:
            try:
                scales = block_scales(images, op, s, cta, d_lane)
            except UndefinedBehaviour:
                scales = None
            if scales is not None:
                fmt = scales["fmt"]
                found |= {f"mma.{kind}.scale_A.{fmt}.{v}" for v in scale_codes_present(scales["a"], fmt)}
                found |= {f"mma.{kind}.scale_B.{fmt}.{v}" for v in scale_codes_present(scales["b"], fmt)}
        if kind == "i8" and not d.sparse and shift == 0 and a is not None and b is not None:
            found |= _saturation(a, b, c if op.enable_input_d else np.zeros_like(c), s)
    return found


def _signed(codes: np.ndarray, fmt: str) -> np.ndarray:
    f = get_format(fmt)
    values = codes.astype(np.int64) & ((1 << f.bits) - 1)
    return np.where(values >= 1 << (f.bits - 1), values - (1 << f.bits), values) if f.signed else values


def _saturation(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: MmaShape) -> set[str]:
    """.kind::i8 exact sums C + A B^T beyond the s32 range (the 2x2 / 1x4 data paths: each column
    split with its own rows of A)."""
    d = s.d
    width = d.n // s.dp.splits
    acc = _signed(c, "s32")
    a, b = _signed(a, d.atype), _signed(b[:d.n], d.btype)
    sums = np.concatenate([a[k] @ b[k * width:(k + 1) * width].T for k in range(s.dp.splits)], axis=1) + acc
    suffix = "satfinite" if d.saturate else "wrap"
    found = {f"mma.i8.D.s32.above max.{suffix}"} if (sums > 2**31 - 1).any() else set()
    return found | ({f"mma.i8.D.s32.below min.{suffix}"} if (sums < -2**31).any() else set())


def _dol_patterns(words: tuple[int, ...]) -> set[str]:
    bits = np.array([(w >> i) & 1 for w in words for i in range(32)], dtype=bool)
    found = set()
    if not bits.any():
        found.add("none disabled")
    if bits.all():
        found.add("all disabled")
    if bits[0] and bits.sum() == 1:
        found.add("first lane only")
    if bits[-1] and bits.sum() == 1:
        found.add("last lane only")
    if len(words) == 8 and not bits[:128].any() and bits[128:].any():
        found.add(DOL_PEER_PATTERN)
    return found


def _zcmask_values(word: int, m: int) -> set[str]:
    z = zcmask_codec.decode(word)
    found = set() if z.non_zero_mask else {"all-zero mask"}
    limit = isa.ZCMASK_MAX_SHIFT.get(m, isa.ZCMASK_MAX_SHIFT_DEFAULT)
    if z.non_zero_mask:
        found |= {f"skip span {z.skip_span}", f"use span {z.use_span}", f"column shift {z.column_shift}"}
        found |= {"start count 255"} if 255 in z.start_counts else set()
    if z.column_shift == limit:
        found.add(f"column shift {limit} (max)")
    found |= {f"column shift {z.column_shift}"} if z.column_shift == 0 else set()
    return found


def _ldst_hits(op: Tcgen05Ld | Tcgen05St, program: Program, images: Images | None) -> set[str]:
    packed = op.pack if isinstance(op, Tcgen05Ld) else op.unpack
    lanes, columns = fragment_cells(op.shape, op.num, packed, op.split_offset)
    lane0, col0 = taddr_codec.decode(op.taddr)
    lanes, columns = lanes + lane0, columns + col0
    name = op.OP.split(".")[1]
    found = {f"tmem.{name}.first column"} if columns.min() == 0 else set()
    found |= {f"tmem.{name}.last column"} if columns.max() == program.tmem_columns - 1 else set()
    found |= {f"tmem.{name}.last lane quarter"} if lane0 >= dm.TMEM_LANES - dm.LANES_PER_WARP_QUARTER else set()
    if (isinstance(op, Tcgen05Ld) and op.red_op is not None and not packed and images is not None
            and lanes.max() < dm.TMEM_LANES and columns.max() < images.columns):
        found |= {f"ld.red.{op.red_type}.{op.red_op}.{v}" for v in _ld_red_classes(images.tmem[0][lanes, columns[..., 0]], op)}
    return found


F32_SIGN, F32_EXPONENT = 0x80000000, 0x7F800000


def _ld_red_classes(words: np.ndarray, op: Tcgen05Ld) -> set[str]:
    """Orderings among each thread's reduced registers (words [threads, registers])."""
    if op.red_type == "s32":
        signed = words.view(np.int32)
        return {LD_RED_INT_CLASSES["s32"]} if ((signed < 0).any(axis=1) & (signed > 0).any(axis=1)).any() else set()
    if op.red_type == "u32":
        return {LD_RED_INT_CLASSES["u32"]} if ((words >= F32_SIGN).any(axis=1) & (words < F32_SIGN).any(axis=1)).any() else set()
    found = set()
    nan = (words & ~np.uint32(F32_SIGN)) > F32_EXPONENT
    if nan.all(axis=1).any():
        found.add("all NaN")
    some = nan.any(axis=1) & ~nan.all(axis=1)
    if some.any():
        found.add("NaN with .NaN" if op.red_nan else "NaN skipped")
    if not op.red_abs:
        for first, second, name in ((0, F32_SIGN, "+0 before -0"), (F32_SIGN, 0, "-0 before +0")):
            position = np.arange(words.shape[1])
            first_at = np.where(words == first, position, words.shape[1]).min(axis=1)
            second_at = np.where(words == second, position, -1).max(axis=1)
            if (first_at < second_at).any():
                found.add(name)
    return found
