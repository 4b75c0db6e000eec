"""The shared-memory matrix descriptor, in its tcgen05 form (PTX ISA 9.7.16.4.1, Tables 40 and
41) and its sm_90 wgmma form (same address fields; swizzle in bits 62-63, no version field and no
leading-dimension mode: CUTLASS include/cute/arch/mma_sm90_desc.hpp, `GmmaDescriptor`)."""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.encoding.bitfields import BitField, EncodingError, Layout
from tcgen05_conformance.core.isa.swizzle import (
    SWIZZLE_BY_SM90_CODE,
    SWIZZLE_BY_TCGEN05_CODE,
    SWIZZLE_MODES,
)
from tcgen05_conformance.core.memo import memo

VARIANTS = ("tcgen05", "sm90")
ADDRESS_LIMIT = 1 << 18  # matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4

TABLE_40 = Layout(
    "shared-memory descriptor (tcgen05)",
    "PTX ISA 9.7.16.4.1, Table 40",
    64,
    (
        BitField("start_address", 0, 14, "matrix start address, encoded (x & 0x3FFFF) >> 4"),
        BitField("reserved14", 14, 2, "Reserved", fixed=0),
        BitField("leading_byte_offset", 16, 14, "leading dimension byte offset or absolute address, encoded"),
        BitField("reserved30", 30, 2, "Reserved", fixed=0),
        BitField("stride_byte_offset", 32, 14, "stride dimension byte offset, encoded"),
        BitField("version", 46, 3, "fixed constant 0b001", fixed=0b001),
        BitField("base_offset", 49, 3, "matrix base offset"),
        BitField("lbo_mode", 52, 1, "leading dimension stride mode: 0 relative offset, 1 absolute address"),
        BitField("fixed53", 53, 8, "fixed constant 0", fixed=0),
        BitField("swizzle", 61, 3, "swizzling: 0 none, 1 128B/32B atom, 2 128B, 4 64B, 6 32B"),
    ),
)
SM90_LAYOUT = Layout(
    "shared-memory descriptor (sm_90 wgmma)",
    "PTX ISA 9.7.15.5.1 matrix descriptor; CUTLASS cute/arch/mma_sm90_desc.hpp GmmaDescriptor",
    64,
    (
        BitField("start_address", 0, 14, "matrix start address, encoded (x & 0x3FFFF) >> 4"),
        BitField("reserved14", 14, 2, "Reserved", fixed=0),
        BitField("leading_byte_offset", 16, 14, "leading dimension byte offset, encoded"),
        BitField("reserved30", 30, 2, "Reserved", fixed=0),
        BitField("stride_byte_offset", 32, 14, "stride dimension byte offset, encoded"),
        BitField("reserved46", 46, 3, "Reserved", fixed=0),
        BitField("base_offset", 49, 3, "matrix base offset"),
        BitField("reserved52", 52, 10, "Reserved", fixed=0),
        BitField("swizzle", 62, 2, "layout type: 0 interleave (none), 1 128B, 2 64B, 3 32B"),
    ),
)
LAYOUTS = {"tcgen05": TABLE_40, "sm90": SM90_LAYOUT}


@dataclass(frozen=True)
class SmemDescriptor:
    """A shared-memory matrix descriptor in bytes: addresses and offsets as the ISA defines them."""

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_absolute: bool = False
    fixed_field_errors: tuple[str, ...] = ()


def _address_code(name: str, value: int) -> int:
    if value % 16:
        raise EncodingError(f"{name} = {value} must be 16-byte aligned (PTX ISA 9.7.16.4.1)")
    if not 0 <= value < ADDRESS_LIMIT:
        raise EncodingError(f"{name} = {value} is outside the 18-bit shared-memory window")
    return value >> 4


def _variant(variant: str) -> Layout:
    try:
        return LAYOUTS[variant]
    except KeyError:
        raise EncodingError(f"unknown descriptor variant {variant!r}; variants: {VARIANTS}") from None


def encode(d: SmemDescriptor, variant: str = "tcgen05") -> int:
    """The 64-bit descriptor word for `d`."""
    layout = _variant(variant)
    mode = SWIZZLE_MODES.get(d.swizzle)
    if mode is None:
        raise EncodingError(f"unknown swizzle {d.swizzle!r}; modes: {', '.join(SWIZZLE_MODES)}")
    code = mode.tcgen05_code if variant == "tcgen05" else mode.sm90_code
    if code is None:
        raise EncodingError(f"swizzle {d.swizzle} has no sm_90 encoding")
    if variant == "sm90" and d.lbo_absolute:
        raise EncodingError("the sm_90 descriptor has no absolute leading-dimension mode")
    values = {
        "start_address": _address_code("start address", d.start_address),
        "leading_byte_offset": _address_code("leading dimension offset", d.leading_byte_offset),
        "stride_byte_offset": _address_code("stride dimension offset", d.stride_byte_offset),
        "base_offset": d.base_offset,
        "swizzle": code,
    }
    if variant == "tcgen05":
        values["lbo_mode"] = int(d.lbo_absolute)
    return layout.pack(values)


def decode(word: int, variant: str = "tcgen05") -> SmemDescriptor:
    """The meaning of a 64-bit descriptor word; invalid swizzle codes decode to "?<code>" (decoded
    once for every data set of an instruction: `_decode`)."""
    return _decode(word, variant)


# Two descriptors per instruction of a campaign chunk (200 / data sets of them), decoded by the
# generator and then by the oracle: 512 covers a chunk of one data set per instruction.
@memo(maxsize=512)
def _decode(word: int, variant: str) -> SmemDescriptor:
    layout = _variant(variant)
    f = layout.unpack(word)
    table = SWIZZLE_BY_TCGEN05_CODE if variant == "tcgen05" else SWIZZLE_BY_SM90_CODE
    mode = table.get(f["swizzle"])
    return SmemDescriptor(
        start_address=f["start_address"] << 4,
        leading_byte_offset=f["leading_byte_offset"] << 4,
        stride_byte_offset=f["stride_byte_offset"] << 4,
        swizzle=mode.name if mode else f"?{f['swizzle']}",
        base_offset=f["base_offset"],
        lbo_absolute=bool(f.get("lbo_mode", 0)),
        fixed_field_errors=tuple(layout.fixed_field_violations(word)),
    )


def base_offset_for(pattern_start_address: int, swizzle: str) -> int:
    """Table 41: 0 when the swizzle pattern starts on its boundary (1024/512/256 bytes), else
    (pattern start address >> 7) & 7."""
    mode = SWIZZLE_MODES[swizzle]
    if mode.pattern_bytes == 0 or pattern_start_address % mode.pattern_bytes == 0:
        return 0
    return (pattern_start_address >> 7) & 0x7


def explain(word: int, variant: str = "tcgen05") -> list[tuple[str, str, str, str]]:
    """Rows (bits, field, raw value, meaning) describing the descriptor field by field."""
    layout = _variant(variant)
    d = decode(word, variant)
    meaning = {
        "start_address": f"start address = {d.start_address:#x} bytes",
        "leading_byte_offset": (
            f"leading dimension {'absolute address' if d.lbo_absolute else 'byte offset'} = "
            f"{d.leading_byte_offset:#x}"
        ),
        "stride_byte_offset": f"stride dimension byte offset = {d.stride_byte_offset:#x}",
        "swizzle": f"swizzle {d.swizzle}" + ("  <-- invalid code" if d.swizzle.startswith("?") else ""),
        "lbo_mode": "absolute address (sm_103a)" if d.lbo_absolute else "relative byte offset",
    }
    rows = []
    for field in layout.fields:
        raw = field.get(word)
        text = meaning.get(field.name, field.meaning)
        if field.fixed is not None and raw != field.fixed:
            text += f"  <-- must be {field.fixed:#b}"
        rows.append((field.bits, field.name, str(raw), text))
    return rows
