"""Metamorphic relations every profile must satisfy.

* a.b == b.a (products are exact, so swapping the operands changes nothing);
* permuting products *within* a fused group changes nothing (a group's sum depends only on
  the set of its terms: alignment uses the group maximum, truncation is per term); the
  exact profile is one group, so any permutation;
* negating a and c negates d: nearest-even and toward-zero rounding (and sign-magnitude
  truncation) are symmetric about zero.  Rows whose result is NaN or an exact zero
  (always +0) are excluded.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.formats import FloatFormat
from tcgen05_conformance.oracles.numerics import PROFILES, get_format, inner_product
from tcgen05_conformance.oracles.numerics.model import _group_indices
from tcgen05_conformance.oracles.numerics.sampling import random_bits

CASES = [
    (name, fi, fo)
    for name, prof in PROFILES.items()
    if name != "exact"
    for (fi, fo) in prof.datapaths
] + [
    ("exact", fi, fo)
    for fi in ("f16", "bf16", "tf32", "e4m3", "e5m2", "e2m1")
    for fo in ("f32", "f16")
]


def _k(profile: str, fi: str, fo: str) -> int:
    if profile == "exact":
        return 24
    dp = PROFILES[profile].datapath(fi, fo)
    return 2 * dp.k_step  # two instruction steps, so chaining is exercised too


def _negate(bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    sign = 1 << (fmt.exp_bits + fmt.frac_bits + fmt.field_shift)
    return bits ^ bits.dtype.type(sign)


case = st.sampled_from(CASES)


@settings(deadline=None)
@given(case=case, spread=st.sampled_from([None, 2, 10]), seed=st.integers(0, 2**32 - 1))
def test_swap_operands(case, spread, seed):
    profile, fi, fo = case
    rng = np.random.default_rng(seed)
    k = _k(profile, fi, fo)
    a, b = (random_bits(fi, (64, k), rng, spread) for _ in range(2))
    c = random_bits(fo, (64,), rng, spread)
    assert np.array_equal(
        inner_product(a, b, c, fi, fo, profile), inner_product(b, a, c, fi, fo, profile)
    )


@settings(deadline=None)
@given(case=case, spread=st.sampled_from([None, 2, 10]), seed=st.integers(0, 2**32 - 1))
def test_permute_within_groups(case, spread, seed):
    profile, fi, fo = case
    rng = np.random.default_rng(seed)
    k = _k(profile, fi, fo)
    a, b = (random_bits(fi, (64, k), rng, spread) for _ in range(2))
    c = random_bits(fo, (64,), rng, spread)
    perm = np.arange(k)
    if profile == "exact":
        perm = rng.permutation(k)
    else:
        dp = PROFILES[profile].datapath(fi, fo)
        for step in range(0, k, dp.k_step):
            for g in _group_indices(dp.k_step, dp.split_ways, dp.split_stride):
                idx = g + step
                perm[idx] = rng.permutation(idx)
    ref = inner_product(a, b, c, fi, fo, profile)
    assert np.array_equal(ref, inner_product(a[:, perm], b[:, perm], c, fi, fo, profile))


@settings(deadline=None)
@given(case=case, spread=st.sampled_from([None, 2, 10]), seed=st.integers(0, 2**32 - 1))
def test_negation_symmetry(case, spread, seed):
    profile, fi, fo = case
    fin, facc = get_format(fi), get_format(fo)
    rng = np.random.default_rng(seed)
    k = _k(profile, fi, fo)
    a, b = (random_bits(fi, (64, k), rng, spread) for _ in range(2))
    c = random_bits(fo, (64,), rng, spread)
    d = inner_product(a, b, c, fi, fo, profile)
    dn = inner_product(_negate(a, fin), b, _negate(c, facc), fi, fo, profile)
    mag = (1 << (facc.exp_bits + facc.frac_bits)) - 1
    nan = (d & mag) > (((1 << facc.exp_bits) - 1) << facc.frac_bits)
    zero = (d & mag) == 0
    keep = ~nan & ~zero
    assert np.array_equal(dn[keep], _negate(d[keep], facc))


def test_group_order_matters_for_hardware_profiles():
    """Sanity for the relation above: moving a product to another group can change d."""
    rng = np.random.default_rng(3)
    a = random_bits("e4m3", (4000, 32), rng, 5)
    b = random_bits("e4m3", (4000, 32), rng, 5)
    c = np.zeros(4000, dtype=np.uint16)
    d = inner_product(a, b, c, "e4m3", "f16", "sm_100a.mma_sync")
    swap = np.arange(32)
    swap[[0, 2]] = [2, 0]  # k=0 is in group 0, k=2 in group 1 (k mod 4 in {2,3})
    assert not np.array_equal(d, inner_product(a[:, swap], b[:, swap], c, "e4m3", "f16", "sm_100a.mma_sync"))
