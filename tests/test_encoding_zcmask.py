"""The zero-column mask descriptor (PTX ISA 9.7.16.4.3, Table 45) and the mask it generates.

Table 45 bit positions: sc0..sc3 in bits 0-7, 8-15, 16-23, 24-31; fs0..fs3 in bits 32..35;
reserved 36-38; non-zero mask 39; skip span 40-47; use span 48-55; column shift 56-61;
(62-63 are not described: reserved).

The four worked examples under Table 45 print sub-masks as "0b ... 111 0000 111 0000": the
right end is bit 0, and the leading "..." means the pattern continues towards higher bits.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import zcmask
from tcgen05_conformance.core.encoding.bitfields import EncodingError
from tcgen05_conformance.core.encoding.zcmask import ZeroColumnMask

FAST = settings(max_examples=50, deadline=None)
RESERVED_BITS = (36, 37, 38, 62, 63)
RESERVED_MASK = sum(1 << b for b in RESERVED_BITS)


def table45_word(sc, fs, nzm, skip, use, shift) -> int:
    w = sc[0] | sc[1] << 8 | sc[2] << 16 | sc[3] << 24
    w |= fs[0] << 32 | fs[1] << 33 | fs[2] << 34 | fs[3] << 35
    w |= nzm << 39 | skip << 40 | use << 48 | shift << 56
    return w


def printed(s: str) -> tuple[int, int]:
    """A mask as printed in the spec, "0b ... 111 0000 111": (value, number of printed bits)."""
    digits = s.replace("0b", "").replace("…", "").replace("...", "").replace(" ", "")
    assert set(digits) <= {"0", "1"}
    return int(digits, 2), len(digits)


def continued(s: str, width: int, period: int) -> int:
    """The printed low bits continued upwards with the pattern's period (the leading "...")."""
    value, count = printed(s)
    lsb_first = [(value >> i) & 1 for i in range(count)]
    while len(lsb_first) < width:
        lsb_first.append(lsb_first[len(lsb_first) - period])
    return sum(b << i for i, b in enumerate(lsb_first[:width]))


def low(x: int, n: int) -> int:
    return x & ((1 << n) - 1)


# --- Word layout --------------------------------------------------------------------------


def test_hand_built_word_equals_encode():
    z = ZeroColumnMask((1, 2, 3, 4), (1, 0, 1, 1), True, 5, 6, 7)
    expected = (
        1 | 2 << 8 | 3 << 16 | 4 << 24
        | 1 << 32 | 0 << 33 | 1 << 34 | 1 << 35
        | 1 << 39 | 5 << 40 | 6 << 48 | 7 << 56
    )
    assert expected == 0x0706_058D_0403_0201
    assert zcmask.encode(z) == expected
    assert zcmask.decode(expected) == z


fields = st.builds(
    ZeroColumnMask,
    start_counts=st.tuples(*[st.integers(0, 255)] * 4),
    first_spans=st.tuples(*[st.integers(0, 1)] * 4),
    non_zero_mask=st.booleans(),
    skip_span=st.integers(0, 255),
    use_span=st.integers(0, 255),
    column_shift=st.integers(0, 63),
)


@FAST
@given(fields)
def test_encode_matches_table_45_positions_and_round_trips(z):
    word = zcmask.encode(z)
    assert word == table45_word(z.start_counts, z.first_spans, int(z.non_zero_mask),
                                z.skip_span, z.use_span, z.column_shift)
    assert zcmask.decode(word) == z


@FAST
@given(st.integers(0, (1 << 64) - 1))
def test_encode_inverts_decode_for_valid_words(word):
    valid = word & ~RESERVED_MASK
    z = zcmask.decode(valid)
    assert z.fixed_field_errors == ()
    assert zcmask.encode(z) == valid


@pytest.mark.parametrize("bit", RESERVED_BITS)
def test_reserved_bits_are_reported(bit):
    z = zcmask.decode(1 << bit)
    assert z.fixed_field_errors
    rows = zcmask.explain(1 << bit)
    assert any("<-- must be" in r[3] for r in rows)


@pytest.mark.parametrize("bit", [b for b in range(64) if b not in RESERVED_BITS])
def test_non_reserved_bits_are_not_reported(bit):
    assert zcmask.decode(1 << bit).fixed_field_errors == ()


def test_column_shift_field_is_bits_56_to_61():
    for shift in (1, 2, 16, 32, 63):
        word = zcmask.encode(ZeroColumnMask(column_shift=shift))
        assert (word >> 56) & 0x3F == shift
        assert word & ~(0x3F << 56) == 1 << 39  # only non_zero_mask besides the shift
    with pytest.raises(EncodingError):
        zcmask.encode(ZeroColumnMask(column_shift=64))


@pytest.mark.parametrize(
    "z",
    [
        ZeroColumnMask(start_counts=(256, 0, 0, 0)),
        ZeroColumnMask(first_spans=(0, 2, 0, 0)),
        ZeroColumnMask(skip_span=256),
        ZeroColumnMask(use_span=-1),
    ],
)
def test_fields_out_of_range_raise(z):
    with pytest.raises(EncodingError):
        zcmask.encode(z)


def test_decode_rejects_words_wider_than_64_bits():
    with pytest.raises(EncodingError):
        zcmask.decode(1 << 64)


# --- The four worked examples under Table 45 ------------------------------------------------


@pytest.mark.parametrize("n", [64, 128, 256])
def test_example_1_non_zero_mask_0_gives_mask_0(n):
    # M = 128; start count {0,0,0,0}, first span {0,0,0,0}, non-zero mask 0, skip span 4,
    # use span 3, shift 0 -> "Output zero-column mask: 0x0".
    word = table45_word((0, 0, 0, 0), (0, 0, 0, 0), 0, 4, 3, 0)
    z = zcmask.decode(word)
    assert not z.non_zero_mask and z.skip_span == 4 and z.use_span == 3
    assert zcmask.generate_mask(z, 128, n) == 0
    assert zcmask.sub_masks(z, 128, n) == [0]


@pytest.mark.parametrize("n", [16, 64, 128, 256])
def test_example_2_m128(n):
    # sc0 = 0, fs0 = 0, non-zero mask 1, skip span 2, use span 3, shift 0.
    word = table45_word((0, 0, 0, 0), (0, 0, 0, 0), 1, 2, 3, 0)
    mask0_text = "0b … 111 0000 111 0000"
    value, count = printed(mask0_text)
    (mask0,) = zcmask.sub_masks(zcmask.decode(word), 128, n)
    assert low(mask0, count) == value
    assert mask0 == continued(mask0_text, n, period=7)
    assert zcmask.generate_mask(zcmask.decode(word), 128, n) == mask0


@FAST
@given(st.tuples(*[st.integers(0, 255)] * 3), st.tuples(*[st.integers(0, 1)] * 3))
def test_example_2_dont_care_fields_do_not_matter_for_m128(sc123, fs123):
    # The example leaves sc1..sc3 and fs1..fs3 as "-": M = 128 uses only sc0 and fs0.
    word = table45_word((0, *sc123), (0, *fs123), 1, 2, 3, 0)
    (mask0,) = zcmask.sub_masks(zcmask.decode(word), 128, 64)
    assert mask0 == continued("0b … 111 0000 111 0000", 64, period=7)


@pytest.mark.parametrize("n", [64, 128, 256])
def test_example_3_m64(n):
    # sc {.., sc1, sc0} = {-, -, 0, 0}; fs {.., fs1, fs0} = {-, -, 0, 1}; non-zero mask 1,
    # skip span 2, use span 3, shift 0.
    word = table45_word((0, 0, 0, 0), (1, 0, 0, 0), 1, 2, 3, 0)
    expected = ["0b … 111 0000 111 0000 111", "0b … 0000 111 0000 111 0000"]
    z = zcmask.decode(word)
    masks = zcmask.sub_masks(z, 64, n)
    assert len(masks) == 2
    width = n // 2
    for mask, text in zip(masks, expected):
        value, count = printed(text)
        assert count <= width
        assert low(mask, count) == value
        assert mask == continued(text, width, period=7)
    # Coverage table: mask0 is columns [0, N/2-1], mask1 is [N/2, N-1].
    assert zcmask.generate_mask(z, 64, n) == masks[0] | masks[1] << width


@pytest.mark.parametrize("n", [64, 128, 256])
def test_example_4_m32(n):
    # sc {sc3, sc2, sc1, sc0} = {1, 2, 1, 0}; fs {fs3, fs2, fs1, fs0} = {0, 0, 1, 1};
    # non-zero mask 1, skip span 2, use span 3, shift 2.
    word = table45_word((0, 1, 2, 1), (1, 1, 0, 0), 1, 2, 3, 2)
    expected = [
        "0b … 0000 111 0000 111",
        "0b … 0000 111 0000 11",
        "0b … 111 0000 111 00",
        "0b … 111 0000 111 000",
    ]
    z = zcmask.decode(word)
    assert z.column_shift == 2
    masks = zcmask.sub_masks(z, 32, n)
    assert len(masks) == 4
    width = n // 4
    whole = 0
    for i, (mask, text) in enumerate(zip(masks, expected)):
        value, count = printed(text)
        assert count <= width
        assert low(mask, count) == value, f"mask{i}"
        assert mask == continued(text, width, period=7), f"mask{i}"
        whole |= mask << (i * width)
    # Coverage table for M = 32: mask i covers columns [i*N/4, (i+1)*N/4 - 1].
    assert zcmask.generate_mask(z, 32, n) == whole


def test_example_4_shift_uses_columns_2_to_129_for_n_128():
    # "If N = 128 then B Matrix with columns from 2 to 129 will be used ... due to the shift of 2."
    word = table45_word((0, 1, 2, 1), (1, 1, 0, 0), 1, 2, 3, 2)
    rows = {r[1]: r for r in zcmask.explain(word, 32, 128)}
    assert rows["column shift"][2] == "2"
    assert "2..129" in rows["column shift"][3]


# --- Generation properties -------------------------------------------------------------------


def reference_sub_mask(sc, fs, skip, use, width):
    """Runs as the worked examples show them: 1-runs of skip_span + 1 bits, 0-runs of
    use_span + 1 bits, starting with value fs; the first sc bits dropped."""
    bits, value = [], fs
    while len(bits) < sc + width:
        bits += [value] * ((skip if value else use) + 1)
        value ^= 1
    return sum(b << i for i, b in enumerate(bits[sc:sc + width]))


@FAST
@given(fields, st.sampled_from([(128, 1), (64, 2), (32, 4)]), st.sampled_from([64, 128, 256]))
def test_sub_masks_match_reference_and_tile_the_mask(z, m_count, n):
    m, count = m_count
    masks = zcmask.sub_masks(z, m, n)
    assert len(masks) == count
    width = n // count
    whole = 0
    for i, mask in enumerate(masks):
        expected = (
            reference_sub_mask(z.start_counts[i], z.first_spans[i], z.skip_span, z.use_span, width)
            if z.non_zero_mask else 0
        )
        assert mask == expected
        whole |= mask << (i * width)
    assert zcmask.generate_mask(z, m, n) == whole
    assert whole < 1 << n


@FAST
@given(fields, st.integers(0, 3), st.integers(0, 255), st.integers(0, 1))
def test_sub_mask_i_depends_only_on_sc_i_and_fs_i(z, j, sc_j, fs_j):
    sc = list(z.start_counts)
    fs = list(z.first_spans)
    sc[j], fs[j] = sc_j, fs_j
    other = ZeroColumnMask(tuple(sc), tuple(fs), z.non_zero_mask, z.skip_span, z.use_span,
                           z.column_shift)
    for i in range(4):
        if i != j:
            assert zcmask.sub_mask(z, i, 32) == zcmask.sub_mask(other, i, 32)


def test_sub_mask_counts_per_m():
    # "The zero-column mask is made up of one or more sub-mask depending on M".
    assert zcmask.SUB_MASKS_PER_M == {128: 1, 64: 2, 32: 4}
