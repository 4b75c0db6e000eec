"""Grouped block-scaled accumulation (`Datapath.block_group`) against exact rational arithmetic.

The expected values come from an independent computation with `fractions.Fraction` written
here from the description of MMA-Sim's grouped model (its `MMA_GST_FDPA`: exact sub-sums of G
products, each times its block's scales and aligned at the scales' exponent alone, fused with c
at F alignment bits, one rounding toward zero to binary32), and from values MMA-Sim printed
for hand-made vectors (/tmp/mmasim-research/NOTES.md, section 4.5 and the hand-checked block of
its example output).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import (
    PARAMETERS,
    PROFILES,
    Datapath,
    Profile,
    profile_from_dict,
    scaled_kind,
)

E2M1 = {0: 0.0, 1: 0.5, 2: 1.0, 3: 1.5, 4: 2.0, 5: 3.0, 6: 4.0, 7: 6.0}  # OCP MX v1.0, FP4 E2M1
E_ZERO, F, G = -139, 35, 16


def fp4(code: int) -> Fraction:
    value = Fraction(E2M1[code & 7])
    return -value if code & 8 else value


def scale(code: int, fmt: str) -> tuple[Fraction, int]:
    """A scale's value and its exponent (normalised, clamped at the format's smallest normal)."""
    if fmt == "ue8m0":
        return Fraction(2) ** (code - 127), code - 127
    exponent, mantissa = (code >> 3) & 15, code & 7  # ue4m3: the sign bit is not read
    if exponent == 0:
        return Fraction(mantissa, 8) * Fraction(2) ** -6, -6
    return (1 + Fraction(mantissa, 8)) * Fraction(2) ** (exponent - 7), exponent - 7


def f32_value(bits: int) -> Fraction:
    return Fraction(struct.unpack("<f", struct.pack("<I", bits))[0])


def f32_rz(v: Fraction) -> int:
    """v rounded toward zero to binary32 (gradual underflow; +0 for zero; Inf on overflow)."""
    if v == 0:
        return 0
    sign = 0x80000000 if v < 0 else 0
    m = abs(v)
    e = math.floor(math.log2(m.numerator) - math.log2(m.denominator))
    while Fraction(2) ** e > m:
        e -= 1
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    kept = math.floor(m / quantum) * quantum
    if kept >= Fraction(2) ** 128:
        return sign | 0x7F800000
    return sign | struct.unpack("<I", struct.pack("<f", float(kept)))[0]


def grouped_reference(a, b, sa, sb, c_bits: int, fmt: str) -> int:
    """One block-scaled fp4 inner product, grouped: the independent computation."""
    k = len(a)
    block = k // len(sa)
    terms = []
    for g in range(k // G):
        products = [fp4(a[i]) * fp4(b[i]) for i in range(g * G, (g + 1) * G)]
        (va, ea), (vb, eb) = scale(sa[g * G // block], fmt), scale(sb[g * G // block], fmt)
        zero = all(p == 0 for p in products) or va * vb == 0
        terms.append((sum(products) * va * vb, E_ZERO if zero else ea + eb))
    c = f32_value(c_bits)
    if c == 0:
        terms.append((c, E_ZERO))
    else:
        e = max(math.floor(math.log2(abs(float(c)))), -126)
        terms.append((c, e))
    grid = Fraction(2) ** (max(e for _, e in terms) - F)
    return f32_rz(sum((math.trunc(v / grid) * grid for v, _ in terms), Fraction(0)))


def _grouped_profile() -> Profile:
    dp = Datapath(instruction="test", k_step=64, split_ways=1, split_stride=1, align_frac_bits=F,
                  align_floor=E_ZERO - F, group_precision=None, group_rounding="rz", c_entry="first_group",
                  final_rounding="rne", subnormal_inputs=True, subnormal_outputs=True, zero_sign="positive",
                  block_group=G, provenance={p: "test" for p in PARAMETERS})
    return Profile("grouped", "test", {("e2m1", "f32"): dp}, scaled_datapaths={("mxf4", "e2m1", "f32"): dp})


def _model(a, b, sa, sb, c_bits, fmt, profile) -> int:
    return int(inner_product(np.array([a], np.uint8), np.array([b], np.uint8), np.array([c_bits], np.uint32),
                             "e2m1", "f32", profile, a_scale=np.array([sa], np.uint8),
                             b_scale=np.array([sb], np.uint8), scale_fmt=fmt, kind="mxf4")[0])


FOUR, ONE, MINUS_ONE = 0x6, 0x2, 0xA
UE8_ONE, UE4_ONE = 127, 0x38


@pytest.mark.parametrize("c_bits, expected", [
    (0xB0800000, 0x437FFFFF),  # 256 - 2**-30: c survives, the grid is 2**(0 - 35)
    (0xAD800000, 0x43800000),  # 256 - 2**-36: c lies below the grid and is cut
])
def test_mmasim_printed_values(c_bits, expected):
    a = [FOUR] * 16 + [0] * 48
    sa = [UE4_ONE] * 4
    assert grouped_reference(a, a, sa, sa, c_bits, "ue4m3") == expected
    for profile in (_grouped_profile(), "sm_100a"):
        assert _model(a, a, sa, sa, c_bits, "ue4m3", profile) == expected


def test_a_cancelled_group_still_aligns_at_its_scale():
    """MMA-Sim's quirk (fdpa.py:262): 1 - 1 in a group scaled by 2**40 sums to 0 but keeps the
    exponent 40, so c = 1 + 2**-10 falls below the grid 2**5 and the result is +0; were the
    group all zeros, c would come through whole."""
    a = [ONE, MINUS_ONE] + [0] * 62
    b = [ONE, ONE] + [0] * 62
    sa = [UE8_ONE + 20, UE8_ONE]
    c = 0x3F802000  # 1 + 2**-10
    assert grouped_reference(a, b, sa, sa, c, "ue8m0") == 0
    assert _model(a, b, sa, sa, c, "ue8m0", "sm_100a") == 0
    zeros = [0] * 64
    assert grouped_reference(zeros, b, sa, sa, c, "ue8m0") == c
    assert _model(zeros, b, sa, sa, c, "ue8m0", "sm_100a") == c


@pytest.mark.parametrize("gap", [20, 26, 27, 28, 30, 40])
@pytest.mark.parametrize("small_block", [0, 1])
def test_block_gap_ladder(gap, small_block):
    """1.0 in one block at scale 1 and 0.25 (the smallest fp4 product) in the other at scale
    2**-gap: the small term survives while gap + 2 <= 35 bits, whichever block holds it; a
    per-product reading (the products' own exponents) would keep it at other gaps."""
    a = [0] * 64
    a[small_block * 32], a[(1 - small_block) * 32] = 0x1, ONE  # 0.5, 1.0
    b = list(a)
    sa = [UE8_ONE, UE8_ONE]
    sa[small_block] = UE8_ONE - gap // 2
    sb = list(sa)
    sb[small_block] = UE8_ONE - (gap - gap // 2)
    expected = grouped_reference(a, b, sa, sb, 0, "ue8m0")
    kept = Fraction(1) + Fraction(1, 4) * Fraction(2) ** -gap
    assert expected == f32_rz(kept if gap + 2 <= F else Fraction(1))
    assert _model(a, b, sa, sb, 0, "ue8m0", "sm_100a") == expected


@pytest.mark.parametrize("fmt, blocks", [("ue8m0", 2), ("ue8m0", 4), ("ue4m3", 4)])
def test_random_vectors_against_fractions(fmt, blocks):
    rng = np.random.default_rng(29 + blocks)
    n = 300
    a = rng.integers(0, 16, (n, 64), dtype=np.uint8)
    b = rng.integers(0, 16, (n, 64), dtype=np.uint8)
    a[rng.random((n, 64)) < 0.3] = 0
    if fmt == "ue8m0":
        sa = rng.integers(127 - 45, 127 + 45, (n, blocks), dtype=np.uint8)
        sb = rng.integers(127 - 45, 127 + 45, (n, blocks), dtype=np.uint8)
    else:
        sa = rng.integers(0, 0x7F, (n, blocks), dtype=np.uint8) | (rng.integers(0, 2, (n, blocks)) << 7).astype(np.uint8)
        sb = rng.integers(0, 0x7F, (n, blocks), dtype=np.uint8)
    c = np.where(rng.random(n) < 0.5, 0, rng.integers(0, 1 << 32, n, dtype=np.uint64)).astype(np.uint32)
    c[(c & 0x7F800000) == 0x7F800000] = 0  # finite c only
    got = inner_product(a, b, c, "e2m1", "f32", "sm_100a", a_scale=sa, b_scale=sb, scale_fmt=fmt, kind="mxf4nvf4")
    for i in range(n):
        want = grouped_reference(*(x[i].tolist() for x in (a, b, sa, sb)), int(c[i]), fmt)
        assert int(got[i]) == want, (i, hex(int(got[i])), hex(want))


def test_mxf8f6f4_scales_each_product():
    """kind::mxf8f6f4 (MMA-Sim's ST_FDPA): a product's alignment exponent includes its scales,
    and all 32 products and c are one group of 25 bits rounded toward zero. e4m3 1.0 x 1.0 and
    2**-6 x 2**-6, both at scale 2**30, and c = 96: the grid is 2**(30 - 25), both terms survive
    and the sum truncates to 2**30 + 2**18 (c added after the products with a round to nearest,
    as mma.sync does, would round up by 128)."""
    a = np.zeros((1, 32), np.uint8)
    a[0, 0], a[0, 1] = 0x38, 0x08  # 1.0, 2**-6
    s = np.array([[127 + 15]], np.uint8)
    c = np.array([0x42C00000], np.uint32)  # 96.0
    got = inner_product(a, a, c, "e4m3", "f32", "sm_100a", a_scale=s, b_scale=s, kind="mxf8f6f4")
    assert int(got[0]) == f32_rz(Fraction(2) ** 30 + Fraction(2) ** 18 + 96) == 0x4E800800
    recorded = inner_product(a, a, c, "e4m3", "f32", "sm_100a.mma_sync", a_scale=s, b_scale=s, kind="mxf8f6f4")
    assert int(recorded[0]) == 0x4E800801


def test_scaled_kind_from_formats_and_k():
    assert scaled_kind("e2m1", "e2m1", 64) == "mxf4"
    assert scaled_kind("e2m1", "e2m1", 96) == "mxf4"
    assert scaled_kind("e2m1", "e2m1", 32) == "mxf8f6f4"
    assert scaled_kind("e4m3", "e2m1", 64) == "mxf8f6f4"


def test_profile_files_carry_block_group_and_scaled_datapaths():
    data = PROFILES["sm_100a"].as_dict()
    assert data["scaled_datapaths"]["mxf4:e2m1->f32"]["block_group"]["value"] == 16
    back = profile_from_dict(data)
    assert back.scaled_datapaths == PROFILES["sm_100a"].scaled_datapaths
    old = PROFILES["sm_100a.mma_sync"].as_dict()  # a file written before block_group existed
    for dp in old["datapaths"].values():
        del dp["block_group"]
    assert all(dp.block_group is None for dp in profile_from_dict(old).datapaths.values())


def test_block_group_must_divide_the_step():
    with pytest.raises(ValueError, match="block_group"):
        Datapath(instruction="x", k_step=40, split_ways=1, split_stride=1, align_frac_bits=35, align_floor=None,
                 group_precision=None, group_rounding="rz", c_entry="first_group", final_rounding="rne",
                 subnormal_inputs=True, subnormal_outputs=True, zero_sign="positive", block_group=16,
                 provenance={p: "t" for p in PARAMETERS})


def test_agree_carries_block_scales_and_finds_the_per_product_reading_wrong():
    """`numerics agree` sends scaled vectors of every scaling the source runs: the model under
    sm_100a agrees with sm_100a on them, and differs from sm_100a.mma_sync (each product scaled in
    the mma.sync groups) on kind::mxf4 and kind::mxf8f6f4."""
    from tcgen05_conformance.numerics.infer import agreement
    from tcgen05_conformance.numerics.sources import ModelSource

    same = agreement(ModelSource("sm_100a"), "sm_100a", [], 300, 5, formats=["e2m1"])
    scaled = [p for p in same["discriminating"] if "kind" in p]
    assert {(p["kind"], p["scale_fmt"], p["block"]) for p in scaled} == {
        ("mxf8f6f4", "ue8m0", 32), ("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue4m3", 16)}
    assert same["mismatches"] == 0
    other = agreement(ModelSource("sm_100a"), "sm_100a.mma_sync", [], 300, 5, formats=["e2m1"])
    assert all(p["mismatches"] > 0 for p in other["discriminating"] if "kind" in p)


def test_infer_finds_the_grouped_reading_and_none_for_an_unknown_one():
    """`numerics infer`'s block-scale search: from the model under sm_100a it finds MMA-Sim's
    kind::mxf4 reading alone (sub-sums of 16, F = 35, floor 2^-174); a source summing sub-sums of 4
    (no reading infer searches) leaves nothing, which infer_profile reports as an error (exit
    status 1, an ERROR line)."""
    import dataclasses

    from tcgen05_conformance.numerics import infer as ni
    from tcgen05_conformance.numerics.sources import ModelSource, Scaling

    base = PROFILES["sm_100a"]
    unscaled = base.datapath("e2m1", "f32")
    scaling = Scaling("ue8m0", 32, 64)
    fits, evidence = ni.infer_block_scaling(ModelSource("sm_100a"), unscaled, "e2m1", "f32", scaling, 256, 3)
    assert [(d.block_group, d.align_frac_bits, d.align_floor) for d in fits] == [(16, 35, -174)]
    assert evidence["each_product_scaled_mismatches"] > 0
    odd = dataclasses.replace(base.scaled_datapaths[("mxf4", "e2m1", "f32")], block_group=4)
    source = ModelSource(dataclasses.replace(base, name="odd", scaled_datapaths={("mxf4", "e2m1", "f32"): odd}))
    fits, evidence = ni.infer_block_scaling(source, unscaled, "e2m1", "f32", scaling, 256, 3)
    assert fits == [] and evidence["reading"] == "none"
