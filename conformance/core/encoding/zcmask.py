"""The zero-column mask descriptor (PTX ISA 9.7.16.4.3, Table 45) and the N-bit mask it
generates. Bit j of the mask is 1 when column j of B is replaced by zeros.

The run lengths follow the four worked examples under Table 45, which contradict the field
descriptions: a run of 1-bits (zeroed columns) is `skip_span + 1` long and a run of 0-bits (B
used) is `use_span + 1` long. See docs/assumptions.md, A-ZCMASK-SPANS.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.encoding.bitfields import BitField, Layout

TABLE_45 = Layout(
    "zero-column mask descriptor",
    "PTX ISA 9.7.16.4.3, Table 45",
    64,
    (
        BitField("sc0", 0, 8, "start count 0: LSBs skipped in sub-mask 0"),
        BitField("sc1", 8, 8, "start count 1"),
        BitField("sc2", 16, 8, "start count 2"),
        BitField("sc3", 24, 8, "start count 3"),
        BitField("fs0", 32, 1, "first span 0: starting value of sub-mask 0"),
        BitField("fs1", 33, 1, "first span 1"),
        BitField("fs2", 34, 1, "first span 2"),
        BitField("fs3", 35, 1, "first span 3"),
        BitField("reserved36", 36, 3, "Reserved", fixed=0),
        BitField("non_zero_mask", 39, 1, "0: the mask is all 0s; 1: generate the mask"),
        BitField("skip_span", 40, 8, "skip span, minus 1"),
        BitField("use_span", 48, 8, "use span, minus 1"),
        BitField("column_shift", 56, 6, "column shift (max 16 for M=32, 32 otherwise)"),
        BitField("reserved62", 62, 2, "Reserved", fixed=0),
    ),
)
SUB_MASKS_PER_M = {128: 1, 64: 2, 32: 4}  # the "Zero-Column Mask breakup" table


@dataclass(frozen=True)
class ZeroColumnMask:
    start_counts: tuple[int, int, int, int] = (0, 0, 0, 0)  # sc0..sc3
    first_spans: tuple[int, int, int, int] = (0, 0, 0, 0)  # fs0..fs3
    non_zero_mask: bool = True
    skip_span: int = 0
    use_span: int = 0
    column_shift: int = 0
    fixed_field_errors: tuple[str, ...] = ()


def encode(z: ZeroColumnMask) -> int:
    values = {f"sc{i}": v for i, v in enumerate(z.start_counts)}
    values |= {f"fs{i}": v for i, v in enumerate(z.first_spans)}
    values |= {
        "non_zero_mask": int(z.non_zero_mask),
        "skip_span": z.skip_span,
        "use_span": z.use_span,
        "column_shift": z.column_shift,
    }
    return TABLE_45.pack(values)


def decode(word: int) -> ZeroColumnMask:
    f = TABLE_45.unpack(word)
    return ZeroColumnMask(
        start_counts=tuple(f[f"sc{i}"] for i in range(4)),
        first_spans=tuple(f[f"fs{i}"] for i in range(4)),
        non_zero_mask=bool(f["non_zero_mask"]),
        skip_span=f["skip_span"],
        use_span=f["use_span"],
        column_shift=f["column_shift"],
        fixed_field_errors=tuple(TABLE_45.fixed_field_violations(word)),
    )


def sub_mask(z: ZeroColumnMask, index: int, width: int) -> int:
    """Sub-mask `index` (`width` bits): alternating runs starting with value fs_i, the first
    sc_i bits of the pattern dropped."""
    if not z.non_zero_mask:
        return 0
    runs = {1: z.skip_span + 1, 0: z.use_span + 1}
    skip = z.start_counts[index]
    value = z.first_spans[index]
    mask, position = 0, -skip
    while position < width:
        end = position + runs[value]
        if value:
            lo, hi = max(position, 0), min(end, width)
            if hi > lo:
                mask |= ((1 << (hi - lo)) - 1) << lo
        position, value = end, 1 - value
    return mask


def sub_masks(z: ZeroColumnMask, m: int, n: int) -> list[int]:
    """The sub-masks for an M x N MMA: 1, 2 or 4 of N/k bits each (Table 45 breakup)."""
    count = SUB_MASKS_PER_M[m]
    return [sub_mask(z, i, n // count) for i in range(count)]


def generate_mask(z: ZeroColumnMask, m: int, n: int) -> int:
    """The N-bit mask: sub-mask i covers columns [i*N/k, (i+1)*N/k - 1]."""
    parts = sub_masks(z, m, n)
    width = n // len(parts)
    mask = 0
    for i, part in enumerate(parts):
        mask |= part << (i * width)
    return mask


def explain(word: int, m: int | None = None, n: int | None = None) -> list[tuple[str, str, str, str]]:
    """Rows (bits, field, raw value, meaning); with M and N, the generated sub-masks too."""
    rows = []
    for field in TABLE_45.fields:
        raw = field.get(word)
        text = field.meaning
        if field.fixed is not None and raw != field.fixed:
            text += f"  <-- must be {field.fixed}"
        rows.append((field.bits, field.name, str(raw), text))
    if m is not None and n is not None:
        z = decode(word)
        parts = sub_masks(z, m, n)
        width = n // len(parts)
        for i, part in enumerate(parts):
            lo = i * width
            rows.append(("", f"mask{i}", f"0b{part:0{width}b}", f"columns {lo}..{lo + width - 1} (1 = zero)"))
        rows.append(("", "column shift", str(z.column_shift), f"B columns {z.column_shift}..{z.column_shift + n - 1} are used"))
    return rows
