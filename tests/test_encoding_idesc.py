"""The tcgen05.mma instruction descriptor (PTX ISA 9.7.16.4.2): Table 42 (.kind::tf32, f16,
f8f6f4, i8), Table 43 (.kind::mxf8f6f4), Table 44 (.kind::mxf4, mxf4nvf4).

Expected words are built here with explicit shifts from the tables' bit positions; type codes
are copied from the tables' "Values" columns.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import idesc
from tcgen05_conformance.core.encoding.bitfields import EncodingError
from tcgen05_conformance.core.encoding.idesc import InstrDescriptor
from tcgen05_conformance.core.isa import mma

FAST = settings(max_examples=40, deadline=None)

# --- Spec facts, copied from Tables 42-44 -----------------------------------------------------

F8F6F4 = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
SPEC_AB_CODES = {
    "tf32": {"tf32": 2},
    "f16": {"f16": 0, "bf16": 1},
    "f8f6f4": F8F6F4,
    "i8": {"u8": 0, "s8": 1},
    "mxf8f6f4": F8F6F4,
    "mxf4": {"e2m1": 1},
    "mxf4nvf4": {"e2m1": 1},
}
SPEC_D_CODES = {"f16": 0, "f32": 1, "s32": 2}
SPEC_SCALE_CODES = {"ue8m0": 1, "ue4m3": 0}
TABLE_42_KINDS = ("tf32", "f16", "f8f6f4", "i8")
TABLE_44_KINDS = ("mxf4", "mxf4nvf4")


def bits(*positions: int) -> int:
    mask = 0
    for p in positions:
        mask |= 1 << p
    return mask


# Reserved bits (value 0) of each table.
RESERVED = {
    "table42": bits(6, 23, 29),
    "table43": bits(0, 1, 3, 6, 24, 25, 26, 31),
    "table44": bits(0, 1, 3, 6, 12, 24, 25, 26),
}
TABLE_OF_KIND = {
    **{k: "table42" for k in TABLE_42_KINDS},
    "mxf8f6f4": "table43",
    **{k: "table44" for k in TABLE_44_KINDS},
}


def test_type_code_tables_match_the_spec():
    assert mma.AB_TYPE_CODES == SPEC_AB_CODES
    assert mma.D_TYPE_CODES == SPEC_D_CODES
    assert mma.SCALE_TYPE_CODES == SPEC_SCALE_CODES
    assert set(idesc.LAYOUT_OF_KIND) == set(SPEC_AB_CODES)


@pytest.mark.parametrize("kind", sorted(TABLE_OF_KIND))
def test_layouts_cover_32_bits_exactly_once(kind):
    covered = []
    for f in idesc.LAYOUT_OF_KIND[kind].fields:
        covered += range(f.lo, f.lo + f.width)
    assert sorted(covered) == list(range(32))


# --- Hand-built words, one or more per kind ---------------------------------------------------

HAND_BUILT = [
    pytest.param(
        "f16",
        InstrDescriptor(m=128, n=256, atype="bf16", btype="bf16", dtype="f32",
                        transpose_b=True, negate_a=True),
        (1 << 4)            # dtype F32 = 1, bits 4-5
        | (1 << 7)          # atype BF16 = 1, bits 7-9
        | (1 << 10)         # btype BF16 = 1, bits 10-12
        | (1 << 13)         # negate A, bit 13
        | (1 << 16)         # transpose B, bit 16
        | ((256 >> 3) << 17)  # N >> 3, bits 17-22
        | ((128 >> 4) << 24),  # M >> 4, bits 24-28
        id="f16-m128-n256-f32-bf16-transB-negA",
    ),
    pytest.param(
        "f16",
        InstrDescriptor(m=64, n=8, atype="f16", btype="f16", dtype="f16", negate_b=True,
                        transpose_a=True),
        (0 << 4) | (0 << 7) | (0 << 10) | (1 << 14) | (1 << 15) | ((8 >> 3) << 17)
        | ((64 >> 4) << 24),
        id="f16-m64-n8-f16-negB-transA",
    ),
    pytest.param(
        "tf32",
        InstrDescriptor(m=64, n=8, atype="tf32", btype="tf32", dtype="f32", sparse=True,
                        sparse_selector=2),
        (2 << 0)            # sparsity selector, bits 0-1
        | (1 << 2)          # sparse, bit 2
        | (1 << 4)          # F32
        | (2 << 7) | (2 << 10)  # TF32 = 2
        | ((8 >> 3) << 17) | ((64 >> 4) << 24),
        id="tf32-sparse-sel2-m64-n8",
    ),
    pytest.param(
        "f8f6f4",
        InstrDescriptor(m=128, n=64, atype="e2m1", btype="e3m2", dtype="f16", transpose_a=True),
        (0 << 4) | (5 << 7) | (4 << 10) | (1 << 15) | ((64 >> 3) << 17) | ((128 >> 4) << 24),
        id="f8f6f4-e2m1xe3m2-f16-transA",
    ),
    pytest.param(
        "f8f6f4",
        InstrDescriptor(m=256, n=256, atype="e4m3", btype="e5m2", dtype="f32", negate_a=True,
                        negate_b=True),
        (1 << 4) | (0 << 7) | (1 << 10) | (1 << 13) | (1 << 14) | ((256 >> 3) << 17)
        | ((256 >> 4) << 24),
        id="f8f6f4-m256-n256-e4m3xe5m2",
    ),
    pytest.param(
        "i8",
        InstrDescriptor(m=64, n=48, atype="s8", btype="u8", dtype="s32", saturate=True,
                        max_shift=3),
        (1 << 3)            # saturate, bit 3
        | (2 << 4)          # S32 = 2
        | (1 << 7)          # signed 8b = 1
        | (0 << 10)         # unsigned 8b = 0
        | ((48 >> 3) << 17) | ((64 >> 4) << 24)
        | (3 << 30),        # maximum shift of 32 = 3, bits 30-31
        id="i8-s8xu8-sat-maxshift32",
    ),
    pytest.param(
        "mxf8f6f4",
        InstrDescriptor(m=256, n=128, atype="e4m3", btype="e5m2", dtype="f32",
                        scale_type="ue8m0", sfa_id=3, sfb_id=1, negate_b=True),
        (1 << 4)            # SFB ID, bits 4-5
        | (0 << 7) | (1 << 10) | (1 << 14)
        | ((128 >> 3) << 17)
        | (1 << 23)         # UE8M0 = 1
        | ((256 >> 7) << 27)  # M >> 7, bits 27-28
        | (3 << 29),        # SFA ID, bits 29-30
        id="mxf8f6f4-m256-sfa3-sfb1",
    ),
    pytest.param(
        "mxf8f6f4",
        InstrDescriptor(m=128, n=8, atype="e2m3", btype="e2m1", dtype="f32",
                        scale_type="ue8m0", sparse=True, transpose_a=True, transpose_b=True),
        (1 << 2) | (3 << 7) | (5 << 10) | (1 << 15) | (1 << 16) | ((8 >> 3) << 17) | (1 << 23)
        | ((128 >> 7) << 27),
        id="mxf8f6f4-sparse-m128-n8-transposed",
    ),
    pytest.param(
        "mxf4",
        InstrDescriptor(m=128, n=8, atype="e2m1", btype="e2m1", dtype="f32",
                        scale_type="ue8m0", sfa_id=2, sfb_id=2, sparse=True),
        (1 << 2) | (2 << 4) | (1 << 7) | (1 << 10) | ((8 >> 3) << 17) | (1 << 23)
        | ((128 >> 7) << 27) | (2 << 29),
        id="mxf4-sparse-sf2",
    ),
    pytest.param(
        "mxf4nvf4",
        InstrDescriptor(m=256, n=256, atype="e2m1", btype="e2m1", dtype="f32",
                        scale_type="ue4m3", k96=True, negate_a=True),
        (1 << 7) | (1 << 10) | (1 << 13) | ((256 >> 3) << 17) | (0 << 23)  # UE4M3 = 0
        | ((256 >> 7) << 27)
        | (1 << 31),        # K dimension: dense K=96 = 1
        id="mxf4nvf4-k96-ue4m3",
    ),
    pytest.param(
        "mxf4nvf4",
        InstrDescriptor(m=128, n=136, atype="e2m1", btype="e2m1", dtype="f32",
                        scale_type="ue8m0", negate_b=True),
        (1 << 7) | (1 << 10) | (1 << 14) | ((136 >> 3) << 17) | (1 << 23) | ((128 >> 7) << 27),
        id="mxf4nvf4-n136-ue8m0",
    ),
]


@pytest.mark.parametrize("kind, descriptor, word", HAND_BUILT)
def test_hand_built_word_equals_encode(kind, descriptor, word):
    assert idesc.encode(kind, descriptor) == word


@pytest.mark.parametrize("kind, descriptor, word", HAND_BUILT)
def test_decode_of_hand_built_word(kind, descriptor, word):
    assert idesc.decode(kind, word) == descriptor


def test_first_hand_built_word_literal():
    # f16, M=128, N=256, F32 D, BF16 A/B, transpose B, negate A: computed by hand.
    # bits: 4, 7, 10, 13, 16, N>>3 = 32 -> bit 22, M>>4 = 8 -> bit 27.
    expected = 0x10 | 0x80 | 0x400 | 0x2000 | 0x10000 | 0x400000 | 0x8000000
    assert expected == 0x0841_2490
    d = InstrDescriptor(m=128, n=256, atype="bf16", btype="bf16", dtype="f32",
                        transpose_b=True, negate_a=True)
    assert idesc.encode("f16", d) == expected


# --- Kind-dependent layouts ------------------------------------------------------------------


def test_m_field_positions_per_table():
    # Table 42: M >> 4 in bits 24-28. Tables 43/44: M >> 7 in bits 27-28.
    d42 = idesc.encode("f16", InstrDescriptor(m=64, n=8, atype="f16", btype="f16"))
    assert (d42 >> 24) & 0x1F == 64 >> 4
    d43 = idesc.encode("mxf8f6f4", InstrDescriptor(m=256, n=8, atype="e4m3", btype="e4m3",
                                                   scale_type="ue8m0"))
    assert (d43 >> 27) & 0b11 == 256 >> 7
    assert (d43 >> 24) & 0b111 == 0
    # M = 64 has no encoding in Table 43/44 (M >> 7 drops it).
    for kind in ("mxf8f6f4", "mxf4", "mxf4nvf4"):
        with pytest.raises(EncodingError):
            idesc.encode(kind, InstrDescriptor(m=64, n=8, atype="e2m1", btype="e2m1",
                                               scale_type="ue8m0"))


def test_same_bits_mean_different_things_per_kind():
    word = 1 << 4 | 1 << 29 | 1 << 31
    t42 = idesc.decode("f16", word)
    assert t42.dtype == "f32"              # bits 4-5: dtype
    assert t42.max_shift == 2              # bits 30-31
    assert t42.reserved_bits               # bit 29 reserved
    t43 = idesc.decode("mxf8f6f4", word)
    assert t43.sfb_id == 1 and t43.sfa_id == 1  # bits 4-5, 29-30
    assert t43.reserved_bits               # bit 31 reserved
    t44 = idesc.decode("mxf4", word)
    assert t44.sfb_id == 1 and t44.sfa_id == 1 and t44.k96
    assert not t44.reserved_bits
    # bit 12: btype MSB in Tables 42/43, reserved in Table 44.
    assert idesc.decode("f8f6f4", 5 << 10).btype == "e2m1"
    assert idesc.decode("mxf8f6f4", 5 << 10).btype == "e2m1"
    assert idesc.decode("mxf4", 1 << 12).reserved_bits
    # bit 23: reserved in Table 42, scale type in Tables 43/44.
    assert idesc.decode("i8", 1 << 23).reserved_bits
    assert idesc.decode("mxf4nvf4", 1 << 23).scale_type == "ue8m0"
    assert idesc.decode("mxf4nvf4", 0).scale_type == "ue4m3"


@pytest.mark.parametrize("kind", sorted(TABLE_OF_KIND))
def test_each_reserved_bit_is_reported(kind):
    mask = RESERVED[TABLE_OF_KIND[kind]]
    assert idesc.decode(kind, 0).reserved_bits == ()
    for bit in range(32):
        reported = bool(idesc.decode(kind, 1 << bit).reserved_bits)
        assert reported == bool(mask >> bit & 1), f"bit {bit}"


@pytest.mark.parametrize("kind", sorted(TABLE_OF_KIND))
def test_explain_marks_reserved_bits(kind):
    mask = RESERVED[TABLE_OF_KIND[kind]]
    word = mask & -mask  # lowest reserved bit
    rows = idesc.explain(kind, word)
    assert any("<-- must be" in text for _, _, _, text in rows)
    assert not any("<-- must be" in text for _, _, _, text in idesc.explain(kind, 0))


def test_explain_reports_m_and_n():
    word = idesc.encode("f16", InstrDescriptor(m=128, n=256, atype="bf16", btype="bf16"))
    texts = {name: text for _, name, _, text in idesc.explain("f16", word)}
    assert texts["m_shr4"] == "M = 128"
    assert texts["n_shr3"] == "N = 256"
    assert texts["atype"] == "A is bf16"


# --- Encoding errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, descriptor",
    [
        ("f16", InstrDescriptor(m=72, n=8, atype="f16", btype="f16")),      # M % 16
        ("f16", InstrDescriptor(m=64, n=12, atype="f16", btype="f16")),     # N % 8
        ("f16", InstrDescriptor(m=64, n=512, atype="f16", btype="f16")),    # N >> 3 = 64
        ("f16", InstrDescriptor(m=512, n=8, atype="f16", btype="f16")),     # M >> 4 = 32
        ("mxf4", InstrDescriptor(m=512, n=8, atype="e2m1", btype="e2m1")),  # M >> 7 = 4
        ("f16", InstrDescriptor(m=64, n=8, atype="e4m3", btype="f16")),     # no e4m3 code
        ("i8", InstrDescriptor(m=64, n=8, atype="s8", btype="s8", dtype="f64")),
        ("mxf4", InstrDescriptor(m=128, n=8, atype="e2m1", btype="e2m1", scale_type="ue16")),
        ("tf32", InstrDescriptor(m=64, n=8, atype="tf32", btype="tf32", sparse_selector=4)),
        ("i8", InstrDescriptor(m=64, n=8, atype="s8", btype="s8", dtype="s32", max_shift=4)),
        ("mxf8f6f4", InstrDescriptor(m=128, n=8, atype="e4m3", btype="e4m3", sfa_id=4)),
    ],
)
def test_unencodable_descriptors_raise(kind, descriptor):
    with pytest.raises(EncodingError):
        idesc.encode(kind, descriptor)


@pytest.mark.parametrize(
    "kind, descriptor",
    [
        pytest.param("mxf4", InstrDescriptor(m=128, n=8, atype="e2m1", btype="e2m1", dtype="f16",
                                             scale_type="ue8m0"), id="mxf4-dtype-f16"),
        pytest.param("mxf8f6f4", InstrDescriptor(m=128, n=8, atype="e4m3", btype="e4m3",
                                                 scale_type="ue8m0", max_shift=2),
                     id="mxf8f6f4-max-shift"),
        pytest.param("f16", InstrDescriptor(m=128, n=8, atype="f16", btype="f16", k96=True),
                     id="f16-k96"),
        pytest.param("f16", InstrDescriptor(m=128, n=8, atype="f16", btype="f16", sfa_id=2),
                     id="f16-sfa-id"),
    ],
)
def test_fields_without_bits_in_the_kinds_table_are_rejected(kind, descriptor):
    with pytest.raises(EncodingError):
        idesc.encode(kind, descriptor)


def test_unknown_kind_raises():
    d = InstrDescriptor(m=64, n=8, atype="f16", btype="f16")
    with pytest.raises(EncodingError):
        idesc.encode("f64", d)
    with pytest.raises(EncodingError):
        idesc.decode("f64", 0)


def test_decode_rejects_words_wider_than_32_bits():
    with pytest.raises(EncodingError):
        idesc.decode("f16", 1 << 32)


def test_unnamed_codes_decode_to_question_mark_and_re_encode():
    # Table 42 code 2 for f8f6f4 atype (between E5M2 = 1 and E2M3 = 3) has no name.
    word = 2 << 7 | 3 << 4  # dtype 3: no name either
    d = idesc.decode("f8f6f4", word)
    assert d.atype == "?2" and d.dtype == "?3"
    assert idesc.encode("f8f6f4", d) == word


# --- Hypothesis round trips --------------------------------------------------------------------


@st.composite
def descriptors(draw, kind):
    types = sorted(SPEC_AB_CODES[kind])
    common = dict(
        n=8 * draw(st.integers(0, 63)),
        atype=draw(st.sampled_from(types)),
        btype=draw(st.sampled_from(types)),
        sparse=draw(st.booleans()),
        negate_a=draw(st.booleans()),
        negate_b=draw(st.booleans()),
        transpose_a=draw(st.booleans()),
        transpose_b=draw(st.booleans()),
    )
    if kind in TABLE_42_KINDS:
        return InstrDescriptor(
            m=16 * draw(st.integers(0, 31)),
            dtype=draw(st.sampled_from(sorted(SPEC_D_CODES))),
            sparse_selector=draw(st.integers(0, 3)),
            saturate=draw(st.booleans()),
            max_shift=draw(st.integers(0, 3)),
            **common,
        )
    return InstrDescriptor(
        m=128 * draw(st.integers(0, 3)),
        dtype="f32",
        sfa_id=draw(st.integers(0, 3)),
        sfb_id=draw(st.integers(0, 3)),
        scale_type=draw(st.sampled_from(sorted(SPEC_SCALE_CODES))),
        k96=draw(st.booleans()) if kind in TABLE_44_KINDS else False,
        **common,
    )


def expected_word(kind: str, d: InstrDescriptor) -> int:
    """The word from the tables' bit positions, written independently of the codec."""
    ab = SPEC_AB_CODES[kind]
    w = int(d.sparse) << 2 | ab[d.atype] << 7 | ab[d.btype] << 10
    w |= int(d.negate_a) << 13 | int(d.negate_b) << 14
    w |= int(d.transpose_a) << 15 | int(d.transpose_b) << 16 | (d.n >> 3) << 17
    if kind in TABLE_42_KINDS:
        w |= d.sparse_selector | int(d.saturate) << 3 | SPEC_D_CODES[d.dtype] << 4
        w |= (d.m >> 4) << 24 | d.max_shift << 30
    else:
        w |= d.sfb_id << 4 | SPEC_SCALE_CODES[d.scale_type] << 23 | (d.m >> 7) << 27
        w |= d.sfa_id << 29 | int(d.k96) << 31
    return w


@pytest.mark.parametrize("kind", sorted(TABLE_OF_KIND))
@FAST
@given(data=st.data())
def test_encode_matches_table_and_decode_inverts(kind, data):
    d = data.draw(descriptors(kind))
    word = idesc.encode(kind, d)
    assert word == expected_word(kind, d)
    assert idesc.decode(kind, word) == d


@pytest.mark.parametrize("kind", sorted(TABLE_OF_KIND))
@FAST
@given(word=st.integers(0, 0xFFFF_FFFF))
def test_encode_inverts_decode_for_valid_words(kind, word):
    mask = RESERVED[TABLE_OF_KIND[kind]]
    valid = word & ~mask
    d = idesc.decode(kind, valid)
    assert d.reserved_bits == ()
    assert idesc.encode(kind, d) == valid
    if word != valid:
        assert idesc.decode(kind, word).reserved_bits
