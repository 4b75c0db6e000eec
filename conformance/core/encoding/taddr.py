"""Tensor Memory addresses: lane in bits 31-16, column in bits 15-0 (PTX ISA 9.7.16.1.1)."""

from __future__ import annotations

from tcgen05_conformance.core.encoding.bitfields import BitField, Layout
from tcgen05_conformance.core.isa.data_movement import TMEM_COLUMNS, TMEM_LANES

TMEM_ADDRESS = Layout(
    "Tensor Memory address",
    "PTX ISA 9.7.16.1.1",
    32,
    (
        BitField("column", 0, 16, "column index"),
        BitField("lane", 16, 16, "lane index"),
    ),
)


def encode(lane: int, column: int) -> int:
    return TMEM_ADDRESS.pack({"lane": lane, "column": column})


def decode(word: int) -> tuple[int, int]:
    """(lane, column) of a TMEM address."""
    f = TMEM_ADDRESS.unpack(word)
    return f["lane"], f["column"]


def explain(word: int) -> list[tuple[str, str, str, str]]:
    lane, column = decode(word)
    return [
        ("0-15", "column", str(column), "column index" + ("" if column < TMEM_COLUMNS else f"  <-- beyond {TMEM_COLUMNS} columns")),
        ("16-31", "lane", str(lane), "lane index" + ("" if lane < TMEM_LANES else f"  <-- beyond {TMEM_LANES} lanes")),
    ]
