"""Subnormal binary32 results measured on the H100: the sm_90a profiles reproduce every sampled
bf16/tf32 -> f32 subnormal result of mma.sync and wgmma, and the samples tell the alignment grid
floor apart (expected values are the silicon's; reports/numerics-h100-f32-subnormal-floor/h100-subnormal-fit.json)."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

from tcgen05_conformance.numerics.measure import COMBINATIONS
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import ALIGN_FLOOR_F32, Profile, for_instruction, get_profile

SAMPLES = pathlib.Path(__file__).parents[2] / "reports" / "numerics-h100-f32-subnormal-floor" / "h100-subnormal-samples.npz"
MEASURED = [c for c in COMBINATIONS if c.id.endswith(("bf16.f32", "tf32.f32"))]


def _samples(combination):
    data = np.load(SAMPLES)
    return tuple(data[f"{combination.id}/{x}"] for x in ("a", "b", "c", "silicon"))


def _with_floor(combination, floor):
    base = get_profile(for_instruction("sm_90a", combination.family))
    dp = dataclasses.replace(base.datapath(combination.in_fmt, combination.acc), align_floor=floor)
    return Profile(name="sweep", description="align_floor variant", datapaths={(combination.in_fmt, combination.acc): dp})


@pytest.mark.parametrize("combination", MEASURED, ids=lambda c: c.id)
def test_profile_reproduces_silicon_subnormal_results(combination):
    a, b, c, silicon = _samples(combination)
    results = silicon.view(np.float32).astype(np.float64)
    assert ((results != 0) & (np.abs(results) < 2.0**-126)).sum() > 500  # the file holds what it claims
    got = inner_product(a, b, c, combination.in_fmt, combination.acc, combination.profile("sm_90a"))
    assert np.array_equal(got.view(np.uint32), silicon)


@pytest.mark.parametrize("floor", [None, ALIGN_FLOOR_F32 - 1])
def test_samples_reject_other_floors(floor):
    """Without the floor, or one bit lower, some silicon result is off (so the test above can fail)."""
    wrong = 0
    for combination in MEASURED:
        a, b, c, silicon = _samples(combination)
        got = inner_product(a, b, c, combination.in_fmt, combination.acc, _with_floor(combination, floor))
        wrong += int((got.view(np.uint32) != silicon).sum())
    assert wrong > 50


@pytest.mark.parametrize("combination", MEASURED, ids=lambda c: c.id)
def test_loop_reference_agrees_on_floored_sums(combination):
    """The Fraction reference (an independent implementation) gives the silicon's results too."""
    from tcgen05_conformance.oracles.numerics.reference import datapath_reference

    a, b, c, silicon = _samples(combination)
    dp = get_profile(combination.profile("sm_90a")).datapath(combination.in_fmt, combination.acc)
    for i in range(0, len(c), 7):
        assert datapath_reference(a[i], b[i], int(c[i]), combination.in_fmt, combination.acc, dp) == int(silicon[i]), i
