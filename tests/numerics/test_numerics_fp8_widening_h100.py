"""fp8 through warp-level MMA measured on the H100 (A-MMA-SP-MIXED-FP8): ptxas widens the
operands to f16 before the HMMA, and `sm_90a.mma_sync` models that (`widened_inputs`). The model
and the integer checker reproduce every kept sample of `numerics measure --mixed-fp8` and of the
same-type fp8 run beside it, mixed e4m3 x e5m2 included; without the widening some mixed results
are off (expected values are the silicon's: reports/numerics-h100-mixed-fp8/)."""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest

from tcgen05_conformance.numerics.measure import COMBINATIONS, MIXED_FP8
from tcgen05_conformance.oracles.numerics import checker, inner_product
from tcgen05_conformance.oracles.numerics.profiles import ProfileFileError, get_profile, profile_from_dict

FOLDER = pathlib.Path(__file__).parents[2] / "reports" / "numerics-h100-mixed-fp8"
FP8 = [c for c in COMBINATIONS if c.in_fmt in ("e4m3", "e5m2")] + list(MIXED_FP8)


def _samples(c):
    data = np.load(FOLDER / ("mixed.npz" if c.b_fmt else "same.npz"))
    return tuple(data[f"{c.id}/{x}"] for x in ("a", "b", "c", "silicon"))


@pytest.mark.parametrize("c", FP8, ids=lambda c: c.id)
def test_the_model_reproduces_the_h100s_fp8_results(c):
    a, b, cc, silicon = _samples(c)
    got = inner_product(a, b, cc, c.inputs, c.acc, c.profile("sm_90a"))
    assert np.array_equal(got.view(silicon.dtype), silicon)


@pytest.mark.parametrize("c", FP8, ids=lambda c: c.id)
def test_the_checker_reproduces_them_too(c, host):
    a, b, cc, silicon = _samples(c)
    params = checker.parameters(c.in_fmt, c.acc, c.k, c.profile("sm_90a"), b_fmt=c.b_fmt)
    assert np.array_equal(host.dot(params, a, b, cc), silicon.astype(np.uint32))


def test_without_the_widening_mixed_results_are_off():
    """The samples hold what the widening decides (so the tests above can fail)."""
    plain = dataclasses.replace(get_profile("sm_90a.mma_sync"), widened_inputs={}, widened_inputs_provenance="")
    wrong = 0
    for c in (x for x in MIXED_FP8 if x.family == "mma.sync"):
        a, b, cc, silicon = _samples(c)
        wrong += int((inner_product(a, b, cc, c.inputs, c.acc, plain).view(silicon.dtype) != silicon).sum())
    assert wrong > 1000


def test_the_fraction_reference_agrees_on_the_widened_operands():
    """The loop reference (an independent implementation) on the operands widened to f16 gives the
    silicon's results for mixed vectors the plain fp8 datapath gets wrong."""
    from tcgen05_conformance.core.formats import values
    from tcgen05_conformance.oracles.numerics.reference import datapath_reference

    c = next(x for x in MIXED_FP8 if x.id == "mma.sync.e4m3xe5m2.f32")
    a, b, cc, silicon = _samples(c)
    dp = get_profile("sm_90a.mma_sync").datapath("e4m3", "f32")
    a16, b16 = (values(x.astype(np.uint32), f).astype(np.float16).view(np.uint16) for x, f in ((a, "e4m3"), (b, "e5m2")))
    for i in range(0, len(cc), 97):
        assert datapath_reference(a16[i], b16[i], int(cc[i]), "f16", "f32", dp) == int(silicon[i]), i


def test_a_profile_file_keeps_its_widening_and_an_old_file_has_none():
    profile = get_profile("sm_90a.mma_sync")
    again = profile_from_dict(json.loads(json.dumps(profile.as_dict())))
    assert dict(again.widened_inputs) == {"e4m3": "f16", "e5m2": "f16"}
    assert again.widened_inputs_provenance == profile.widened_inputs_provenance
    old = {k: v for k, v in profile.as_dict().items() if k != "widened_inputs"}
    assert dict(profile_from_dict(old).widened_inputs) == {}
    bad = {**profile.as_dict(), "widened_inputs": {"value": {"e4m3": "f99"}, "provenance": "x"}}
    with pytest.raises(ProfileFileError, match=r"\$\.widened_inputs\.value\.e4m3"):
        profile_from_dict(bad)


def test_a_widening_that_loses_values_is_refused_by_the_model_and_the_checker():
    """f16 does not hold every bf16 value: a profile that claims so is refused, whoever reads it."""
    wrong = dataclasses.replace(get_profile("sm_90a.mma_sync"), widened_inputs={"bf16": "f16"},
                                widened_inputs_provenance="a test")
    a = np.zeros((1, 16), np.uint16)
    with pytest.raises(ValueError, match="bf16 does not widen exactly to f16"):
        inner_product(a, a, np.zeros(1, np.uint32), "bf16", "f32", wrong)
    with pytest.raises(ValueError, match="bf16 does not widen exactly to f16"):
        checker.parameters("bf16", "f32", 16, wrong)
