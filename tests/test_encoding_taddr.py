"""Tensor Memory addresses (PTX ISA 9.7.16.1.1): a 32-bit word, lane index in bits 31-16 and
column index in bits 15-0. TMEM is 128 lanes x 512 columns per CTA (9.7.16.1)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import taddr
from tcgen05_conformance.core.encoding.bitfields import EncodingError
from tcgen05_conformance.core.isa import data_movement as dm

FAST = settings(max_examples=50, deadline=None)
u16 = st.integers(min_value=0, max_value=0xFFFF)
u32 = st.integers(min_value=0, max_value=0xFFFF_FFFF)


@pytest.mark.parametrize(
    "lane, column, word",
    [
        (0, 0, 0x0000_0000),
        (0, 1, 0x0000_0001),
        (1, 0, 0x0001_0000),
        (32, 5, 0x0020_0005),
        (96, 0x1FF, 0x0060_01FF),
        (0xFFFF, 0xFFFF, 0xFFFF_FFFF),
    ],
)
def test_encode_places_lane_in_31_16_and_column_in_15_0(lane, column, word):
    assert taddr.encode(lane, column) == word
    assert taddr.decode(word) == (lane, column)


@FAST
@given(u16, u16)
def test_encode_matches_explicit_shift(lane, column):
    assert taddr.encode(lane, column) == (lane << 16) | column


@FAST
@given(u16, u16)
def test_decode_inverts_encode(lane, column):
    assert taddr.decode(taddr.encode(lane, column)) == (lane, column)


@FAST
@given(u32)
def test_encode_inverts_decode(word):
    assert taddr.encode(*taddr.decode(word)) == word
    lane, column = taddr.decode(word)
    assert lane == word >> 16
    assert column == word & 0xFFFF


@pytest.mark.parametrize("lane, column", [(0x1_0000, 0), (0, 0x1_0000), (-1, 0), (0, -1)])
def test_out_of_range_components_are_rejected(lane, column):
    with pytest.raises(EncodingError):
        taddr.encode(lane, column)


@pytest.mark.parametrize("word", [-1, 1 << 32])
def test_decode_rejects_words_wider_than_32_bits(word):
    with pytest.raises(EncodingError):
        taddr.decode(word)


def test_layout_is_two_disjoint_16_bit_fields_covering_32_bits():
    layout = taddr.TMEM_ADDRESS
    assert layout.word_bits == 32
    assert (layout.field("column").lo, layout.field("column").width) == (0, 16)
    assert (layout.field("lane").lo, layout.field("lane").width) == (16, 16)


def test_geometry_is_128_lanes_by_512_columns():
    # 9.7.16.1: "512 columns and 128 rows per CTA, with each cell being 32-bits in size".
    assert dm.TMEM_LANES == 128
    assert dm.TMEM_COLUMNS == 512


def test_explain_flags_addresses_outside_tmem():
    inside = dict((row[1], row) for row in taddr.explain(taddr.encode(127, 511)))
    assert "<--" not in inside["lane"][3] and "<--" not in inside["column"][3]
    assert inside["lane"][2] == "127" and inside["column"][2] == "511"
    outside = dict((row[1], row) for row in taddr.explain(taddr.encode(128, 512)))
    assert "<--" in outside["lane"][3]
    assert "<--" in outside["column"][3]
    assert outside["lane"][0] == "16-31" and outside["column"][0] == "0-15"
