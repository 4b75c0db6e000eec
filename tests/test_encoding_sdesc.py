"""The shared-memory matrix descriptor: tcgen05 form (PTX ISA 9.7.16.4.1, Tables 40 and 41) and
the sm_90 wgmma form (swizzle/layout type in bits 62-63: none 0, 128B 1, 64B 2, 32B 3).

Expected words are built in the tests with explicit shifts from Table 40's bit positions:
  0-13 start address, 16-29 leading dimension offset, 32-45 stride dimension offset (each
  matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4), 46-48 fixed 0b001, 49-51 base offset,
  52 leading-dimension mode, 53-60 fixed 0, 61-63 swizzle (0 none, 1 128B/32B atom, 2 128B,
  4 64B, 6 32B; 3, 5, 7 invalid).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import sdesc
from tcgen05_conformance.core.encoding.bitfields import EncodingError
from tcgen05_conformance.core.encoding.sdesc import SmemDescriptor

FAST = settings(max_examples=50, deadline=None)

# Table 40 swizzle codes, from the spec text.
TCGEN05_SWIZZLE_CODE = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
INVALID_TCGEN05_CODES = (3, 5, 7)
# sm_90 wgmma layout type (bits 62-63).
SM90_SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
# Table 41: where the repeating pattern of each swizzle mode starts.
PATTERN_BOUNDARY = {"128B": 1024, "128B_base32B": 1024, "64B": 512, "32B": 256}


def mde(x: int) -> int:
    """matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4 (Table 40)."""
    return (x & 0x3FFFF) >> 4


def table40_word(start, lbo, sbo, swizzle_code, base_offset=0, lbo_mode=0) -> int:
    return (
        mde(start)
        | mde(lbo) << 16
        | mde(sbo) << 32
        | 0b001 << 46
        | base_offset << 49
        | lbo_mode << 52
        | swizzle_code << 61
    )


def sm90_word(start, lbo, sbo, swizzle_code, base_offset=0) -> int:
    return mde(start) | mde(lbo) << 16 | mde(sbo) << 32 | base_offset << 49 | swizzle_code << 62


aligned = st.integers(min_value=0, max_value=(1 << 18) - 16).map(lambda x: x & ~0xF)
descriptors = st.builds(
    SmemDescriptor,
    start_address=aligned,
    leading_byte_offset=aligned,
    stride_byte_offset=aligned,
    swizzle=st.sampled_from(sorted(TCGEN05_SWIZZLE_CODE)),
    base_offset=st.integers(0, 7),
    lbo_absolute=st.booleans(),
)
sm90_descriptors = st.builds(
    SmemDescriptor,
    start_address=aligned,
    leading_byte_offset=aligned,
    stride_byte_offset=aligned,
    swizzle=st.sampled_from(sorted(SM90_SWIZZLE_CODE)),
    base_offset=st.integers(0, 7),
)


# --- Table 40 layout ------------------------------------------------------------------------


def test_hand_built_word_matches_encode():
    d = SmemDescriptor(0x1000, 0x80, 0x400, "128B")
    expected = (0x1000 >> 4) | (0x80 >> 4) << 16 | (0x400 >> 4) << 32 | 1 << 46 | 2 << 61
    assert sdesc.encode(d) == expected == 0x4000_4040_0008_0100
    assert sdesc.decode(expected) == d


def test_all_fields_at_table_40_positions():
    d = SmemDescriptor(0x3FFF0, 0x2A0, 0x12340, "32B", base_offset=5, lbo_absolute=True)
    word = sdesc.encode(d)
    assert word == table40_word(0x3FFF0, 0x2A0, 0x12340, 6, base_offset=5, lbo_mode=1)
    assert word & 0x3FFF == 0x3FFF
    assert (word >> 16) & 0x3FFF == 0x2A
    assert (word >> 32) & 0x3FFF == 0x1234
    assert (word >> 49) & 0x7 == 5
    assert (word >> 52) & 1 == 1
    assert (word >> 61) & 0x7 == 6


@FAST
@given(descriptors)
def test_encode_matches_explicit_shifts(d):
    code = TCGEN05_SWIZZLE_CODE[d.swizzle]
    assert sdesc.encode(d) == table40_word(
        d.start_address, d.leading_byte_offset, d.stride_byte_offset, code,
        d.base_offset, int(d.lbo_absolute),
    )


@FAST
@given(descriptors)
def test_fixed_constant_001_at_bits_46_48_and_zero_at_53_60(d):
    word = sdesc.encode(d)
    assert (word >> 46) & 0b111 == 0b001
    assert (word >> 53) & 0xFF == 0
    assert (word >> 14) & 0b11 == 0 and (word >> 30) & 0b11 == 0
    assert word < 1 << 64


@FAST
@given(descriptors)
def test_decode_inverts_encode(d):
    assert sdesc.decode(sdesc.encode(d)) == d


@FAST
@given(
    st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1),
    st.integers(0, 7), st.integers(0, 1), st.sampled_from(sorted(TCGEN05_SWIZZLE_CODE.values())),
)
def test_encode_inverts_decode_for_valid_words(sa, lbo, sbo, base, mode, swz):
    word = sa | lbo << 16 | sbo << 32 | 1 << 46 | base << 49 | mode << 52 | swz << 61
    d = sdesc.decode(word)
    assert d.fixed_field_errors == ()
    assert sdesc.encode(d) == word


@pytest.mark.parametrize("name, code", sorted(TCGEN05_SWIZZLE_CODE.items()))
def test_swizzle_codes(name, code):
    word = sdesc.encode(SmemDescriptor(0, 0, 0, name))
    assert word >> 61 == code
    assert word == 1 << 46 | code << 61
    assert sdesc.decode(word).swizzle == name


@pytest.mark.parametrize("code", INVALID_TCGEN05_CODES)
def test_invalid_swizzle_codes_decode_to_question_mark(code):
    word = 1 << 46 | code << 61
    d = sdesc.decode(word)
    assert d.swizzle == f"?{code}"
    swizzle_row = [row for row in sdesc.explain(word) if row[1] == "swizzle"]
    assert len(swizzle_row) == 1 and "invalid" in swizzle_row[0][3]
    assert swizzle_row[0][0] == "61-63" and swizzle_row[0][2] == str(code)


@pytest.mark.parametrize(
    "word",
    [
        0,  # bits 46-48 are 0, must be 0b001
        0b010 << 46,
        0b011 << 46,
        0b101 << 46,
        1 << 46 | 1 << 53,
        1 << 46 | 1 << 60,
        1 << 46 | 0xFF << 53,
        1 << 46 | 1 << 14,
        1 << 46 | 1 << 15,
        1 << 46 | 1 << 30,
        1 << 46 | 1 << 31,
    ],
)
def test_fixed_and_reserved_bit_violations_are_reported(word):
    d = sdesc.decode(word)
    assert d.fixed_field_errors
    marked = [row for row in sdesc.explain(word) if "<-- must be" in row[3]]
    assert marked


def test_valid_word_has_no_fixed_field_errors():
    assert sdesc.decode(1 << 46).fixed_field_errors == ()


@pytest.mark.parametrize(
    "d",
    [
        SmemDescriptor(0x1008, 0x10, 0x10),
        SmemDescriptor(0x1000, 0x8, 0x10),
        SmemDescriptor(0x1000, 0x10, 0x18),
        SmemDescriptor(0x1001, 0x10, 0x10),
        SmemDescriptor(0x1000, 0x10, 0x4),
    ],
)
@pytest.mark.parametrize("variant", ["tcgen05", "sm90"])
def test_unaligned_addresses_and_offsets_are_rejected(d, variant):
    # "The following must be 16-byte aligned: matrix start address, leading dimension byte
    # offset, stride dimension byte offset" (9.7.16.4.1).
    with pytest.raises(EncodingError):
        sdesc.encode(d, variant)


def test_unknown_swizzle_and_variant_are_rejected():
    with pytest.raises(EncodingError):
        sdesc.encode(SmemDescriptor(0, 0, 0, "16B"))
    with pytest.raises(EncodingError):
        sdesc.encode(SmemDescriptor(0, 0, 0), "sm80")
    with pytest.raises(EncodingError):
        sdesc.decode(0, "sm80")


@pytest.mark.parametrize("base_offset", [-1, 8])
def test_base_offset_must_fit_three_bits(base_offset):
    with pytest.raises(EncodingError):
        sdesc.encode(SmemDescriptor(0, 0, 0, "128B", base_offset=base_offset))


def test_decode_rejects_words_wider_than_64_bits():
    with pytest.raises(EncodingError):
        sdesc.decode(1 << 64)


def test_table_40_fields_cover_all_64_bits_once():
    covered = []
    for f in sdesc.TABLE_40.fields:
        covered += range(f.lo, f.lo + f.width)
    assert sorted(covered) == list(range(64))


# --- sm_90 wgmma variant --------------------------------------------------------------------


@pytest.mark.parametrize("name, code", sorted(SM90_SWIZZLE_CODE.items()))
def test_sm90_swizzle_codes_in_bits_62_63(name, code):
    d = SmemDescriptor(0x2000, 0x100, 0x200, name, base_offset=3)
    word = sdesc.encode(d, "sm90")
    assert word == sm90_word(0x2000, 0x100, 0x200, code, base_offset=3)
    assert word >> 62 == code
    assert (word >> 46) & 0b111 == 0  # no version field on sm_90
    assert (word >> 52) & 0x3FF == 0
    assert sdesc.decode(word, "sm90") == d


@FAST
@given(sm90_descriptors)
def test_sm90_round_trip(d):
    word = sdesc.encode(d, "sm90")
    assert word == sm90_word(
        d.start_address, d.leading_byte_offset, d.stride_byte_offset,
        SM90_SWIZZLE_CODE[d.swizzle], d.base_offset,
    )
    assert sdesc.decode(word, "sm90") == d


def test_sm90_has_no_128b_32b_atom_mode_and_no_absolute_lbo():
    with pytest.raises(EncodingError):
        sdesc.encode(SmemDescriptor(0, 0, 0, "128B_base32B"), "sm90")
    with pytest.raises(EncodingError):
        sdesc.encode(SmemDescriptor(0, 0, 0, "128B", lbo_absolute=True), "sm90")


@pytest.mark.parametrize("bit", [14, 15, 30, 31, 46, 47, 48, 52, 56, 61])
def test_sm90_reserved_bits_are_reported(bit):
    assert sdesc.decode(1 << bit, "sm90").fixed_field_errors
    assert sdesc.decode(0, "sm90").fixed_field_errors == ()


def test_same_descriptor_differs_between_variants():
    d = SmemDescriptor(0x400, 0x10, 0x400, "64B")
    assert sdesc.encode(d, "tcgen05") == table40_word(0x400, 0x10, 0x400, 4)
    assert sdesc.encode(d, "sm90") == sm90_word(0x400, 0x10, 0x400, 2)
    assert sdesc.encode(d, "tcgen05") != sdesc.encode(d, "sm90")


# --- Table 41: base offset ------------------------------------------------------------------


@pytest.mark.parametrize(
    "address, swizzle, expected",
    [
        (0x400, "128B", 0),
        (0x480, "128B", (0x480 >> 7) & 7),  # = 1
        (0x800, "128B", 0),
        (0x780, "128B", 7),
        (0x2400, "128B_base32B", 0),
        (0x2580, "128B_base32B", 3),
        (0x200, "64B", 0),
        (0x280, "64B", 5),
        (0x100, "32B", 0),
        (0x180, "32B", 3),
        (0x480, "none", 0),
    ],
)
def test_base_offset_for_table_41(address, swizzle, expected):
    assert sdesc.base_offset_for(address, swizzle) == expected


@FAST
@given(aligned, st.sampled_from(sorted(PATTERN_BOUNDARY)))
def test_base_offset_formula(address, swizzle):
    if address % PATTERN_BOUNDARY[swizzle] == 0:
        expected = 0
    else:
        expected = (address >> 0x7) & 0x7
    assert sdesc.base_offset_for(address, swizzle) == expected
