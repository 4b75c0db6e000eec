"""The vectorised datapaths against the loop/Fraction reference, and the profile data itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.oracles.numerics import PROFILES, Datapath, get_format, inner_product
from tcgen05_conformance.oracles.numerics.model import _float_dot
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS
from tcgen05_conformance.oracles.numerics.reference import datapath_reference
from tcgen05_conformance.oracles.numerics.sampling import random_bits

HW = [(name, fi, fo) for name in ("sm_90a", "sm_100a", "sm_100a.mma_sync") for (fi, fo) in PROFILES[name].datapaths]


@settings(deadline=None)
@given(
    case=st.sampled_from(HW),
    spread=st.sampled_from([None, 1, 4, 40]),
    steps=st.integers(1, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_vectorised_matches_loop_reference(case, spread, steps, seed):
    profile, fi, fo = case
    dp = PROFILES[profile].datapath(fi, fo)
    rng = np.random.default_rng(seed)
    k = dp.k_step * steps
    a, b = (random_bits(fi, (6, k), rng, spread) for _ in range(2))
    c = random_bits(fo, (6,), rng, spread)
    d = inner_product(a, b, c, fi, fo, profile)
    for i in range(6):
        assert int(d[i]) == datapath_reference(a[i], b[i], int(c[i]), fi, fo, dp), (
            i,
            hex(int(d[i])),
        )


VARIANTS = [
    dict(align_frac_bits=8),
    dict(align_frac_bits=40),
    dict(group_rounding="rne"),
    dict(c_entry="final_add"),
    dict(c_entry="first_group"),
    dict(group_precision=12),
    dict(split_ways=4, split_stride=1),
    dict(k_step=4),
    dict(subnormal_outputs=False),
    dict(subnormal_inputs=False),
]


@pytest.mark.parametrize(
    "variant", VARIANTS, ids=lambda v: ",".join(f"{k}={w}" for k, w in v.items())
)
@pytest.mark.parametrize("fi,fo", [("f16", "f32"), ("e5m2", "f16"), ("bf16", "f32")])
def test_datapath_variants_match_reference(variant, fi, fo):
    """Parameters the fitted profiles do not use are modelled consistently too."""
    base = PROFILES["sm_100a.mma_sync"].datapath(fi, fo)  # c added apart: a wider group precision is re-rounded
    dp = dataclasses.replace(base, **variant)
    fin, facc = get_format(fi), get_format(fo)
    rng = np.random.default_rng(11)
    for spread in (None, 3):
        a, b = (random_bits(fi, (400, 32), rng, spread) for _ in range(2))
        c = random_bits(fo, (400,), rng, spread)
        fast = _float_dot(a, b, c, fin, fin, facc, dp, None)
        generic = _float_dot(a, b, c, fin, fin, facc, dp, None, fast=False)
        assert np.array_equal(fast, generic)
        for i in range(8):
            assert int(fast[i]) == datapath_reference(a[i], b[i], int(c[i]), fi, fo, dp), (
                spread,
                i,
            )


@pytest.mark.parametrize("profile,fi,fo", HW)
def test_fast_path_equals_generic_path(profile, fi, fo):
    dp = PROFILES[profile].datapath(fi, fo)
    fin, facc = get_format(fi), get_format(fo)
    rng = np.random.default_rng(5)
    for spread in (None, 2, 12):
        a, b = (random_bits(fi, (3000, dp.k_step * 2), rng, spread) for _ in range(2))
        c = random_bits(fo, (3000,), rng, spread)
        fast = _float_dot(a, b, c, fin, fin, facc, dp, None)
        generic = _float_dot(a, b, c, fin, fin, facc, dp, None, fast=False)
        assert np.array_equal(fast, generic), spread


def test_every_parameter_has_provenance():
    for prof in PROFILES.values():
        dps = list(prof.datapaths.values()) + ([prof.default] if prof.default else [])
        assert dps
        for dp in dps:
            for p in PARAMETERS:
                assert isinstance(dp.provenance[p], str) and len(dp.provenance[p]) > 10, (
                    prof.name,
                    p,
                )
        assert prof.int_overflow_provenance
        assert prof.as_dict()["name"] == prof.name


def test_profiles_are_frozen_data():
    prof = PROFILES["sm_100a"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        prof.name = "x"  # type: ignore[misc]
    dp = prof.datapath("f16", "f32")
    with pytest.raises(dataclasses.FrozenInstanceError):
        dp.align_frac_bits = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        dp.provenance["k_step"] = "changed"  # type: ignore[index]
    with pytest.raises(ValueError, match="provenance"):
        Datapath(**{p: getattr(dp, p) for p in PARAMETERS}, provenance={"k_step": "x"})


def test_unsupported_combinations_raise():
    z = np.zeros((1, 32), dtype=np.uint8)
    with pytest.raises(ValueError, match="fp6/fp4"):
        inner_product(z, z, np.zeros(1, np.uint32), "e2m1", "f32", "sm_90a")
    with pytest.raises(ValueError, match="no datapath"):
        inner_product(
            z.astype(np.uint16),
            z.astype(np.uint16),
            np.zeros(1, np.uint16),
            "bf16",
            "f16",
            "sm_100a",
        )
    with pytest.raises(ValueError):
        inner_product(z, z, np.zeros(1, np.uint32), "e4m3", "s32", "sm_100a")


F16 = {
    "1": 0x3C00,
    "-1": 0xBC00,
    "inf": 0x7C00,
    "-inf": 0xFC00,
    "nan": 0x7E00,
    "0": 0,
    "-0": 0x8000,
    "max": 0x7BFF,
    "2": 0x4000,
}


@pytest.mark.parametrize("profile", ["exact", "sm_90a", "sm_100a"])
@pytest.mark.parametrize(
    "a,b,c,expected",
    [
        (["nan", "1"], ["1", "1"], 0, 0x7FFFFFFF),
        (["inf", "1"], ["0", "1"], 0, 0x7FFFFFFF),  # 0 * Inf
        (["inf", "-inf"], ["1", "1"], 0, 0x7FFFFFFF),  # Inf - Inf
        (["inf", "max"], ["1", "max"], 0, 0x7F800000),
        (["-inf", "1"], ["1", "1"], 0x7F7FFFFF, 0xFF800000),
        (["1", "1"], ["1", "1"], 0x7F800000, 0x7F800000),  # c = +Inf
        # every addend -0: IEEE 754 gives -0; H100 gives +0 (reports/numerics-h100-silicon/h100-silicon.json)
        (["-0", "0"], ["1", "-1"], 0x80000000, {"exact": 0x80000000, "hardware": 0x00000000}),
        (["-0", "0"], ["1", "1"], 0x80000000, 0x00000000),  # one +0 addend
        (["1", "-1"], ["1", "1"], 0x80000000, 0x00000000),  # exact cancellation: +0
    ],
)
def test_special_values_f16_to_f32(profile, a, b, c, expected):
    A = np.array([[F16[x] for x in a] + [F16["-0"]] * 14], dtype=np.uint16)  # padding: -0 products
    B = np.array([[F16[x] for x in b] + [F16["0"]] * 14], dtype=np.uint16)
    d = inner_product(A, B, np.array([c], dtype=np.uint32), "f16", "f32", profile)
    if isinstance(expected, dict):
        expected = expected["exact" if profile == "exact" else "hardware"]
    assert int(d[0]) == expected


def test_f16_output_overflow_is_infinity():
    A = np.array([[F16["max"], F16["max"]] + [0] * 14], dtype=np.uint16)
    B = np.array([[F16["2"], F16["1"]] + [0] * 14], dtype=np.uint16)
    for profile in ("exact", "sm_90a", "sm_100a"):
        d = inner_product(A, B, np.zeros(1, np.uint16), "f16", "f16", profile)
        assert int(d[0]) == 0x7C00, profile


def test_f32_truncating_group_overflows_to_infinity():
    """A truncating (RZ) group that overflows gives Inf, not IEEE RZ's largest finite value:
    measured on H100 (reports/numerics-h100-silicon/h100-silicon.json), assumed for B200."""
    A = np.zeros((1, 16), dtype=np.uint16)
    A[0, :2] = 0x5F80  # bf16 2**64; two products of 2**128 overflow binary32
    c = np.zeros(1, dtype=np.uint32)
    for profile in ("sm_90a", "sm_90a.mma_sync", "sm_100a", "exact"):
        assert int(inner_product(A, A, c, "bf16", "f32", profile)[0]) == 0x7F800000, profile
    negative = A | np.uint16(0x8000) * (A != 0)
    assert int(inner_product(negative, A, c, "bf16", "f32", "sm_90a")[0]) == 0xFF800000


def test_overflowed_group_meeting_opposite_infinity_is_nan():
    """mma.sync fp8 -> f16: group 0 overflows to +Inf, then c = -Inf is added: NaN (measured
    on H100); inside one fused group (wgmma fp8 -> f16) the infinite c simply wins."""
    e4m3_448 = 0x7E  # 448: 448 * 448 = 200704 > f16 max
    a = np.zeros((1, 32), dtype=np.uint8)
    a[0, 0] = e4m3_448  # k = 0: group 0 of the interleaved pair
    c = np.array([0xFC00], dtype=np.uint16)  # -Inf
    assert int(inner_product(a, a, c, "e4m3", "f16", "sm_90a.mma_sync")[0]) == 0x7FFF
    assert int(inner_product(a, a, c, "e4m3", "f16", "sm_90a")[0]) == 0xFC00




@pytest.mark.parametrize("fa,fb", [("s8", "s8"), ("u8", "u8"), ("s8", "u8")])
@pytest.mark.parametrize("saturate", [False, True])
def test_integer_kinds_are_exact(fa, fb, saturate):
    rng = np.random.default_rng(1)
    a = random_bits(fa, (200, 32), rng)
    b = random_bits(fb, (200, 32), rng)
    c = rng.integers(-(1 << 31), 1 << 31, 200).astype(np.int32)
    c[:50] = np.int32(2**31 - 1)
    c[50:100] = np.int32(-(2**31))
    d = inner_product(a, b, c, (fa, fb), "s32", "sm_100a", saturate=saturate)
    for i in range(200):
        total = sum(int(x) * int(y) for x, y in zip(a[i], b[i])) + int(c[i])
        want = max(-(2**31), min(2**31 - 1, total)) if saturate else (total + 2**31) % 2**32 - 2**31
        assert int(d[i]) == want


def test_block_scales_multiply_products_exactly():
    """ue8m0 scales 2**s on each 32-block: exact profile = Fraction sum rounded once."""
    from fractions import Fraction

    from tcgen05_conformance.oracles.numerics.reference import decode_value, encode_value, round_fraction

    rng = np.random.default_rng(2)
    a = random_bits("e2m1", (50, 64), rng, 1)
    b = random_bits("e2m1", (50, 64), rng, 1)
    sa = rng.integers(100, 150, (50, 2)).astype(np.uint8)
    sb = rng.integers(100, 150, (50, 2)).astype(np.uint8)
    c = random_bits("f32", (50,), rng, 3)
    d = inner_product(a, b, c, "e2m1", "f32", "exact", a_scale=sa, b_scale=sb, scale_fmt="ue8m0")
    f4, f32 = get_format("e2m1"), get_format("f32")

    def val(bits, fmt):
        v, _ = decode_value(bits, fmt)
        return Fraction(0) if isinstance(v, tuple) else v

    for i in range(50):
        total = val(c[i], f32) + sum(
            val(a[i, k], f4)
            * val(b[i, k], f4)
            * Fraction(2) ** (int(sa[i, k // 32]) + int(sb[i, k // 32]) - 254)
            for k in range(64)
        )
        if total == 0:
            continue
        r, over = round_fraction(total, 24, -126, 127, Fraction(2**24 - 1, 2**23), "rne")
        assert not over and int(d[i]) == encode_value(r, f32), i


def test_probes_separate_their_hypotheses():
    """Each probe separates two hypotheses or more; the block-gap ladder does as a whole (its low
    rungs agree under every reading, and the rung where each reading starts to cut tells them apart)."""
    from tcgen05_conformance.oracles.numerics.probes import PROBES, predictions

    ladder = {}
    for probe in PROBES:
        pred = predictions(probe)
        assert set(pred) == set(probe.hypotheses)
        if probe.name.startswith("mxf4-gap-"):
            for h, v in pred.items():
                ladder.setdefault(h, []).append(v)
        else:
            assert len(set(pred.values())) >= 2, probe.name
    readings = ("tcgen05", "recorded", "per-product")  # exact keeps every rung, as recorded does
    assert len({tuple(ladder[h]) for h in readings}) == len(readings)  # each reading cuts at its own rung
