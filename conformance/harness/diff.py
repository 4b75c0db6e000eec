"""Bit-for-bit comparison of two machine states of one program, with the first mismatches
decoded: where (TMEM lane and column, ld register, Hopper D row and column), what the word holds
(the element type the program's operations give it) and both values as numbers.

Places are compared in the order `tmem` (per CTA, lane, column), `ld[0]`, `ld[1]`, ... (per
thread, register) and `d` (Hopper D, per row, column); the first mismatches follow that order.

A TMEM word's element type comes from the last tcgen05.mma that touches it: its D type when the
word lies in that MMA's D region, otherwise the role it plays as an operand (A in TMEM,
sparsity metadata, scale factors); words no MMA touches are `b32` (raw bits). Registers of a
tcgen05.ld are `b32`, except the `.red` value, which has the reduction's type. Hopper D words
have the wgmma's D type, 16-bit types in the low half.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import Tcgen05Ld, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.mma_shape import shape_of
from tcgen05_conformance.core.layouts.tmem import (
    CONTAINER_SHIFT,
    a_tmem_container_bits,
    d_positions,
    meta_positions,
    scale_factor_groups,
    scale_factor_positions,
    split_lanes,
)
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, UndefinedBehaviour

WORD_BITS = 32
# Value dtypes for decoding element codes (ue4m3, the unsigned NVFP4 block scale, decodes as e4m3).
_FLOAT_DTYPES = {
    "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu, "ue4m3": ml_dtypes.float8_e4m3fn,
}
_TF32_VALUE_MASK = 0xFFFFE000  # tf32: the 13 low bits of the binary32 container are not part of the value
_INTEGER_SIGNED = {"s32": True, "s8": True, "u8": False, "u32": False}


@dataclass(frozen=True)
class ElementType:
    """What one 32-bit word holds: `count` elements of format `fmt` (None: raw bits), each `bits`
    wide, element i at bit `shift + i * stride`."""

    role: str
    fmt: str | None = None
    bits: int = WORD_BITS
    count: int = 1
    stride: int = WORD_BITS
    shift: int = 0

    @property
    def label(self) -> str:
        if self.fmt is None:
            return self.role
        text = f"{self.role} {self.fmt}"
        if self.count > 1:
            text += f" x{self.count}"
            if self.stride != self.bits:
                text += f" ({self.stride}-bit containers)"
        elif self.bits < WORD_BITS:
            text += " (low half)"
        return text

    def decode(self, word: int) -> str:
        """The word's elements as numbers: one value, or a bracketed list of packed ones."""
        if self.fmt is None:
            return f"{word:#010x}"
        mask = (1 << self.bits) - 1
        values = [_element_value(self.fmt, (word >> (self.shift + i * self.stride)) & mask) for i in range(self.count)]
        if self.count > 1:
            return "[" + ", ".join(values) + "]"
        high = word >> 16 if self.bits == 16 else 0  # a 16-bit D's high half should be 0: show it when not
        return f"{values[0]} (high half {high:#06x})" if high else values[0]


B32 = ElementType("b32")


def _number(value: np.floating) -> str:
    """Shortest text that reads back as `value` in its own format: 1.5, -2, 3e-08, nan, -inf."""
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "-inf" if value < 0 else "inf"
    if value == 0:
        return "-0" if np.signbit(value) else "0"
    if not isinstance(value, (np.float16, np.float32, np.float64)):
        value = np.float64(value)  # ml_dtypes formats: exact in float64, printed in its shortest form
    if 1e-5 <= abs(float(value)) < 1e16:
        return np.format_float_positional(value, unique=True, trim="-")
    return np.format_float_scientific(value, unique=True, trim="-")


def _element_value(fmt: str, code: int) -> str:
    if fmt in _INTEGER_SIGNED:
        bits = WORD_BITS if fmt.endswith("32") else 8
        signed = _INTEGER_SIGNED[fmt] and code >> (bits - 1)
        return str(code - (1 << bits) if signed else code)
    if fmt == "tf32":
        fmt, code = "f32", code & _TF32_VALUE_MASK
    dtype = np.dtype(_FLOAT_DTYPES[fmt])
    container = {1: np.uint8, 2: np.uint16, 4: np.uint32}[dtype.itemsize]
    with np.errstate(invalid="ignore"):
        return _number(np.array([code], dtype=container).view(dtype)[0])


def _d_element(dtype: str) -> ElementType:
    """A D word: f32 / s32 whole, f16 in the low half (PTX ISA 9.7.16.10.4.1, 9.7.15.5.1)."""
    return ElementType("D", dtype, isa.TYPE_BITS[dtype])


def _packed(role: str, fmt: str, container: int, bits: int | None = None) -> ElementType:
    """Elements of `fmt` (`bits` wide, default its Table 39 width) packed from the low bits, one
    per `container` bits; 4/6-bit elements in 8-bit containers sit at the container's
    decompression offset (tcgen05_conformance.core.layouts.tmem)."""
    bits = bits or isa.TYPE_BITS[fmt]
    shift = CONTAINER_SHIFT.get(bits, 0) if container != bits else 0
    return ElementType(role, fmt, bits, WORD_BITS // container, container, shift)


@dataclass(frozen=True)
class Mismatch:
    """One differing word, decoded."""

    place: str  # "tmem" (row = lane), "ld[i]" (row = thread, column = register), "d" (Hopper D)
    cta: int
    row: int
    column: int
    element: str  # what the word holds, e.g. "D f32", "D f16 (low half)", "A e4m3 x4", "b32"
    expected_bits: int
    actual_bits: int
    expected: str  # decoded value, e.g. "1.5"; packed elements as a list, e.g. "[1.5, -2]"
    actual: str

    def where(self) -> str:
        """E.g. "tmem cta 1 lane 5 column 17", "ld[0] thread 3 register 2", "d row 5 column 17"."""
        cta = f" cta {self.cta}" if self.cta else ""
        if self.place == "tmem":
            return f"tmem{cta} lane {self.row} column {self.column}"
        if self.place.startswith("ld["):
            return f"{self.place} thread {self.row} register {self.column}"
        return f"{self.place}{cta} row {self.row} column {self.column}"


@dataclass(frozen=True)
class Diff:
    """How two states compare: `words` compared, `mismatched` of them differ, the `first` ones
    in comparison order."""

    words: int
    mismatched: int
    first: tuple[Mismatch, ...]

    def as_dict(self) -> dict:
        return {"words": self.words, "mismatched": self.mismatched, "first": [dataclasses.asdict(m) for m in self.first]}

    def summary_line(self) -> str:
        if not self.mismatched:
            return f"all {self.words} words match"
        head = f"{self.mismatched} of {self.words} words differ"
        if not self.first:
            return head
        m = self.first[0]
        return (f"{head}; first: {m.where()} ({m.element}): expected {_shown(m.expected, m.expected_bits)}, "
                f"got {_shown(m.actual, m.actual_bits)}")


def _shown(text: str, bits: int) -> str:
    raw = f"{bits:#010x}"
    return raw if text == raw else f"{text} ({raw})"


# --- element types of TMEM words ---------------------------------------------------------------


def _mark(labels: np.ndarray, cta: int, lanes: np.ndarray, columns: np.ndarray, code: int) -> None:
    inside = (lanes >= 0) & (lanes < labels.shape[1]) & (columns >= 0) & (columns < labels.shape[2])
    labels[cta, lanes[inside], columns[inside]] = code


def _mark_mma(labels: np.ndarray, types: list[ElementType], op: Tcgen05Mma) -> None:
    """Label the words one tcgen05.mma reads as operands, then those of its D region."""
    try:
        s = shape_of(op)
    except UndefinedBehaviour:
        return
    d = s.d

    def code(t: ElementType) -> int:
        if t not in types:
            types.append(t)
        return types.index(t)

    marks: list[tuple[np.ndarray, np.ndarray, int]] = []
    if op.a_tmem is not None:
        lane0, col0 = taddr_codec.decode(op.a_tmem)
        container = a_tmem_container_bits(s.kind, isa.TYPE_BITS[d.atype])
        columns = np.arange(col0, col0 + (s.k_stored * container - 1) // WORD_BITS + 1)
        lanes = split_lanes(s.dp, lane0).reshape(-1)
        marks.append((np.repeat(lanes, columns.size), np.tile(columns, lanes.size), code(_packed("A", d.atype, container))))
    if d.sparse:
        lane0, col0 = taddr_codec.decode(op.sp_meta_tmem)
        lanes, columns, _ = meta_positions(s.dp, s.kind, s.k, lane0, col0, d.sparse_selector)
        marks.append((lanes, columns, code(ElementType("sparsity metadata"))))
    if op.block_scale:
        sv = isa.scale_vector(op.kind, op.scale_vec, d.k96)
        if sv is not None:
            scale = _packed("scale", d.scale_type or "ue8m0", 8, 8)
            width = d.n // s.dp.splits
            for address, sf_id, count, operand in ((op.scale_a_tmem, d.sfa_id, s.dp.rows, "A"), (op.scale_b_tmem, d.sfb_id, width, "B")):
                col0 = taddr_codec.decode(address)[1]
                index = np.tile(np.arange(count), 4)
                groups = scale_factor_groups(operand, s.dp.rows if operand == "A" else d.n, s.dp.splits, d.k96)
                lanes, columns, _ = scale_factor_positions(np.repeat(np.arange(4), count), index, col0, sv.factors, sf_id, groups)
                marks.append((lanes, columns, code(dataclasses.replace(scale, role=f"scale {operand}"))))
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    lanes, columns = d_positions(s.dp, d.n, lane0)
    marks.append((lanes, columns + col0, code(_d_element(d.dtype))))
    for cta in range(min(op.cta_group, labels.shape[0])):
        for lanes, columns, c in marks:
            _mark(labels, cta, lanes, columns, c)


def tmem_element_types(program: Program, shape: tuple[int, ...]) -> tuple[np.ndarray, list[ElementType]]:
    """(index into the list, int array of the TMEM image's `shape`; the element types)."""
    types = [B32]
    labels = np.zeros(shape, dtype=np.int32)
    for op in program.ops:
        if isinstance(op, Tcgen05Mma):
            _mark_mma(labels, types, op)
    return labels, types


# --- the comparison ----------------------------------------------------------------------------


def _places(program: Program, expected: MachineState, actual: MachineState):
    """(place, expected, actual, element type of word (cta, row, column)) in comparison order;
    tmem arrays are [ctas, lanes, columns], the others [rows, columns]."""
    labels, types = tmem_element_types(program, expected.tmem.shape)
    yield "tmem", expected.tmem, actual.tmem, lambda c, r, k: types[labels[c, r, k]]
    if len(actual.loads) != len(expected.loads):
        raise ValueError(f"actual state has {len(actual.loads)} tcgen05.ld results, expected {len(expected.loads)}")
    lds = [op for op in program.ops if isinstance(op, Tcgen05Ld)]
    for i, (e, a) in enumerate(zip(expected.loads, actual.loads)):
        redval = ElementType("redval", lds[i].red_type) if i < len(lds) and lds[i].red_op is not None else None
        last = np.shape(e)[-1] - 1
        yield f"ld[{i}]", e, a, lambda c, r, k, redval=redval, last=last: redval if redval and k == last else B32
    if (expected.hopper_d is None) != (actual.hopper_d is None):
        raise ValueError(f"actual state {'lacks' if actual.hopper_d is None else 'has'} a Hopper D, expected "
                         f"{'one' if expected.hopper_d is not None else 'none'}")
    if expected.hopper_d is not None:
        wgmmas = [op for op in program.ops if isinstance(op, WgmmaMma)]
        d_type = _d_element(wgmmas[-1].dtype) if wgmmas else B32
        yield "d", expected.hopper_d, actual.hopper_d, lambda c, r, k: d_type


def diff_states(program: Program, expected: MachineState, actual: MachineState, limit: int = 8) -> Diff:
    """Compare `actual` with `expected` word by word: the count of words and of mismatches, and
    the first `limit` mismatches decoded. ValueError when the two states differ in shape."""
    words = mismatched = 0
    first: list[Mismatch] = []
    for place, e, a, element_of in _places(program, expected, actual):
        e, a = np.asarray(e, dtype=np.uint32), np.asarray(a)
        if a.shape != e.shape:
            raise ValueError(f"actual {place} has shape {'x'.join(map(str, a.shape))}, expected {'x'.join(map(str, e.shape))}")
        e, a = e.reshape(-1, *e.shape[-2:]), a.astype(np.uint32).reshape(-1, *e.shape[-2:])
        differ = e != a
        words += e.size
        count = int(differ.sum())
        mismatched += count
        if not count or len(first) >= limit:
            continue
        for cta, row, column in np.argwhere(differ)[:limit - len(first)]:
            t = element_of(int(cta), int(row), int(column))
            eb, ab = int(e[cta, row, column]), int(a[cta, row, column])
            first.append(Mismatch(place, int(cta), int(row), int(column), t.label, eb, ab, t.decode(eb), t.decode(ab)))
    return Diff(words, mismatched, tuple(first))
