"""The tcgen05.mma instruction descriptor: a 32-bit word whose layout depends on the kind.

PTX ISA 9.7.16.4.2: Table 42 (.kind::tf32, f16, f8f6f4, i8), Table 43 (.kind::mxf8f6f4),
Table 44 (.kind::mxf4, .kind::mxf4nvf4).
"""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.encoding.bitfields import BitField, EncodingError, Layout
from tcgen05_conformance.core.isa.mma import AB_TYPE_CODES, BLOCK_SCALED_KINDS, D_TYPE_CODES, KINDS, SCALE_TYPE_CODES, WS_MAX_SHIFT_CODES

_COMMON_TAIL = (
    BitField("negate_a", 13, 1, "Negate A matrix"),
    BitField("negate_b", 14, 1, "Negate B matrix"),
    BitField("transpose_a", 15, 1, "Transpose A matrix (1: M-major)"),
    BitField("transpose_b", 16, 1, "Transpose B matrix (1: N-major)"),
    BitField("n_shr3", 17, 6, "N, dimension of matrix B, >> 3"),
)

TABLE_42 = Layout(
    "instruction descriptor (tf32, f16, f8f6f4, i8)",
    "PTX ISA 9.7.16.4.2, Table 42",
    32,
    (
        BitField("sparse_selector", 0, 2, "Sparsity selector, if sparsity is enabled"),
        BitField("sparse", 2, 1, "Sparsity: dense 0, sparse 1"),
        BitField("saturate", 3, 1, "Saturate for integer types"),
        BitField("dtype", 4, 2, "dtype (matrix D type): F16 0, F32 1, S32 2"),
        BitField("reserved6", 6, 1, "Reserved", fixed=0),
        BitField("atype", 7, 3, "atype (matrix A type)"),
        BitField("btype", 10, 3, "btype (matrix B type)"),
        *_COMMON_TAIL,
        BitField("reserved23", 23, 1, "Reserved", fixed=0),
        BitField("m_shr4", 24, 5, "M, dimension of matrix A, >> 4"),
        BitField("reserved29", 29, 1, "Reserved", fixed=0),
        BitField("max_shift", 30, 2, "Maximum shift for B-matrix reuse in .ws: 0 none, 1 8, 2 16, 3 32"),
    ),
)
TABLE_43 = Layout(
    "instruction descriptor (mxf8f6f4)",
    "PTX ISA 9.7.16.4.2, Table 43",
    32,
    (
        BitField("reserved0", 0, 2, "Reserved", fixed=0),
        BitField("sparse", 2, 1, "Sparsity: dense 0, sparse 1"),
        BitField("reserved3", 3, 1, "Reserved", fixed=0),
        BitField("sfb_id", 4, 2, "Matrix B scale factor data ID"),
        BitField("reserved6", 6, 1, "Reserved", fixed=0),
        BitField("atype", 7, 3, "atype (matrix A type)"),
        BitField("btype", 10, 3, "btype (matrix B type)"),
        *_COMMON_TAIL,
        BitField("scale_type", 23, 1, "Scale matrix type for scale_A and scale_B: UE8M0 1"),
        BitField("reserved24", 24, 3, "Reserved", fixed=0),
        BitField("m_shr7", 27, 2, "M, dimension of matrix A, >> 7"),
        BitField("sfa_id", 29, 2, "Matrix A scale factor data ID"),
        BitField("reserved31", 31, 1, "Reserved", fixed=0),
    ),
)
TABLE_44 = Layout(
    "instruction descriptor (mxf4, mxf4nvf4)",
    "PTX ISA 9.7.16.4.2, Table 44",
    32,
    (
        BitField("reserved0", 0, 2, "Reserved", fixed=0),
        BitField("sparse", 2, 1, "Sparsity: dense 0, sparse 1"),
        BitField("reserved3", 3, 1, "Reserved", fixed=0),
        BitField("sfb_id", 4, 2, "Matrix B scale factor data ID (0 or 2)"),
        BitField("reserved6", 6, 1, "Reserved", fixed=0),
        BitField("atype", 7, 3, "atype (matrix A type): E2M1 1"),
        BitField("btype", 10, 2, "btype (matrix B type): E2M1 1"),
        BitField("reserved12", 12, 1, "Reserved", fixed=0),
        *_COMMON_TAIL,
        BitField("scale_type", 23, 1, "Scale matrix type: UE8M0 1, UE4M3 0"),
        BitField("reserved24", 24, 3, "Reserved", fixed=0),
        BitField("m_shr7", 27, 2, "M, dimension of matrix A, >> 7"),
        BitField("sfa_id", 29, 2, "Matrix A scale factor data ID (0 or 2)"),
        BitField("k96", 31, 1, "K dimension: 0 dense K=64 / sparse K=128, 1 dense K=96"),
    ),
)
LAYOUT_OF_KIND = {
    "f16": TABLE_42, "tf32": TABLE_42, "f8f6f4": TABLE_42, "i8": TABLE_42,
    "mxf8f6f4": TABLE_43, "mxf4": TABLE_44, "mxf4nvf4": TABLE_44,
}


@dataclass(frozen=True)
class InstrDescriptor:
    """The meaning of an instruction descriptor for a given kind.

    Types are names ("f16", "e4m3", ...); a code with no name decodes to "?<code>" so that a
    descriptor read from a user is always representable and the legality model can reject it.
    """

    m: int
    n: int
    atype: str
    btype: str
    dtype: str = "f32"
    sparse: bool = False
    sparse_selector: int = 0
    saturate: bool = False
    negate_a: bool = False
    negate_b: bool = False
    transpose_a: bool = False
    transpose_b: bool = False
    max_shift: int = 0
    sfa_id: int = 0
    sfb_id: int = 0
    scale_type: str | None = None
    k96: bool = False
    reserved_bits: tuple[str, ...] = ()


def _code(kind: str, table: dict[str, int], name: str, what: str) -> int:
    if name.startswith("?"):
        return int(name[1:])
    try:
        return table[name]
    except KeyError:
        raise EncodingError(
            f"{what} {name!r} has no code for .kind::{kind}; codes: {sorted(table)}"
        ) from None


def _name(table: dict[str, int], code: int) -> str:
    for name, c in table.items():
        if c == code:
            return name
    return f"?{code}"


def _check_kind(kind: str) -> None:
    if kind not in LAYOUT_OF_KIND:
        raise EncodingError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")


def encode(kind: str, d: InstrDescriptor) -> int:
    """The 32-bit instruction descriptor for `d` under `kind`'s layout."""
    _check_kind(kind)
    layout = LAYOUT_OF_KIND[kind]
    types = AB_TYPE_CODES[kind]
    m_field = "m_shr7" if kind in BLOCK_SCALED_KINDS else "m_shr4"
    m_unit = 128 if kind in BLOCK_SCALED_KINDS else 16
    if d.m % m_unit or d.n % 8:
        raise EncodingError(
            f"M={d.m} must be a multiple of {m_unit} and N={d.n} of 8 to be encodable "
            f"({layout.reference})"
        )
    _require_representable(kind, layout, d)
    values = {
        "sparse": int(d.sparse),
        "atype": _code(kind, types, d.atype, "atype"),
        "btype": _code(kind, types, d.btype, "btype"),
        "negate_a": int(d.negate_a),
        "negate_b": int(d.negate_b),
        "transpose_a": int(d.transpose_a),
        "transpose_b": int(d.transpose_b),
        "n_shr3": d.n >> 3,
        m_field: d.m // m_unit,
    }
    if layout is TABLE_42:
        values |= {
            "sparse_selector": d.sparse_selector,
            "saturate": int(d.saturate),
            "dtype": _code(kind, D_TYPE_CODES, d.dtype, "dtype"),
            "max_shift": d.max_shift,
        }
    else:
        values |= {
            "sfa_id": d.sfa_id,
            "sfb_id": d.sfb_id,
            "scale_type": _code(kind, SCALE_TYPE_CODES, d.scale_type or "ue8m0", "scale type"),
        }
        if layout is TABLE_44:
            values["k96"] = int(d.k96)
    return layout.pack(values)


_FIELDS_OF = {  # descriptor attributes and the layouts that have bits for them
    "dtype": (TABLE_42,), "sparse_selector": (TABLE_42,), "saturate": (TABLE_42,),
    "max_shift": (TABLE_42,), "sfa_id": (TABLE_43, TABLE_44), "sfb_id": (TABLE_43, TABLE_44),
    "scale_type": (TABLE_43, TABLE_44), "k96": (TABLE_44,),
}
_DEFAULTS = {"dtype": "f32", "sparse_selector": 0, "saturate": False, "max_shift": 0,
             "sfa_id": 0, "sfb_id": 0, "scale_type": None, "k96": False}


def _require_representable(kind: str, layout: Layout, d: InstrDescriptor) -> None:
    """A value the kind's table has no bits for cannot be encoded (and must not be dropped)."""
    for name, layouts in _FIELDS_OF.items():
        value = getattr(d, name)
        if layout not in layouts and value != _DEFAULTS[name] and not (name == "dtype" and value == "f32"):
            raise EncodingError(f"{name} = {value!r} has no field in {layout.reference} (.kind::{kind})")


def decode(kind: str, word: int) -> InstrDescriptor:
    """The meaning of a 32-bit instruction descriptor under `kind`'s layout."""
    _check_kind(kind)
    layout = LAYOUT_OF_KIND[kind]
    f = layout.unpack(word)
    types = AB_TYPE_CODES[kind]
    common = dict(
        n=f["n_shr3"] << 3,
        atype=_name(types, f["atype"]),
        btype=_name(types, f["btype"]),
        sparse=bool(f["sparse"]),
        negate_a=bool(f["negate_a"]),
        negate_b=bool(f["negate_b"]),
        transpose_a=bool(f["transpose_a"]),
        transpose_b=bool(f["transpose_b"]),
        reserved_bits=tuple(layout.fixed_field_violations(word)),
    )
    if layout is TABLE_42:
        return InstrDescriptor(
            m=f["m_shr4"] << 4,
            dtype=_name(D_TYPE_CODES, f["dtype"]),
            sparse_selector=f["sparse_selector"],
            saturate=bool(f["saturate"]),
            max_shift=f["max_shift"],
            **common,
        )
    return InstrDescriptor(
        m=f["m_shr7"] << 7,
        dtype="f32",
        sfa_id=f["sfa_id"],
        sfb_id=f["sfb_id"],
        scale_type=_name(SCALE_TYPE_CODES, f["scale_type"]),
        k96=bool(f.get("k96", 0)),
        **common,
    )


def explain(kind: str, word: int) -> list[tuple[str, str, str, str]]:
    """Rows (bits, field, raw value, meaning) describing `word` field by field."""
    _check_kind(kind)
    layout = LAYOUT_OF_KIND[kind]
    d = decode(kind, word)
    meaning = {
        "n_shr3": f"N = {d.n}",
        "m_shr4": f"M = {d.m}",
        "m_shr7": f"M = {d.m}",
        "atype": f"A is {d.atype}",
        "btype": f"B is {d.btype}",
        "dtype": f"D is {d.dtype}",
        "scale_type": f"scale factors are {d.scale_type}",
        "max_shift": f"maximum shift for B-matrix reuse in .ws: {WS_MAX_SHIFT_CODES[d.max_shift] or 'none'}",
    }
    rows = []
    for field in layout.fields:
        raw = field.get(word)
        text = meaning.get(field.name, field.meaning)
        if field.fixed is not None and raw != field.fixed:
            text += f"  <-- must be {field.fixed}"
        rows.append((field.bits, field.name, str(raw), text))
    return rows
