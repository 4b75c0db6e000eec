"""The exact profile against independent Fraction arithmetic.

Two independent oracles: (1) a rounding-free property check written here - the model's
result must be the representable number nearest to the exact Fraction sum (ties to even),
judged with numpy's own float32/float16 neighbours; (2) the loop-and-Fraction reference in
tcgen05_conformance.oracles.numerics.reference, which also covers NaN/Inf/signed-zero rules.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.oracles.numerics import get_format, inner_product, to_binary32
from tcgen05_conformance.oracles.numerics.reference import exact_reference
from tcgen05_conformance.oracles.numerics.sampling import random_bits

FLOAT_INPUTS = ["f16", "bf16", "tf32", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]
ACCS = ["f32", "f16"]


def _values(bits: np.ndarray, fmt: str) -> list[Fraction]:
    """Exact values via binary32 (every input format is a subset of binary32)."""
    return [Fraction(float(x)) for x in to_binary32(bits, fmt).view(np.float32).ravel()]


def _neighbours(r: np.floating) -> tuple[Fraction, Fraction]:
    lo = np.nextafter(r, r.dtype.type(-np.inf))
    hi = np.nextafter(r, r.dtype.type(np.inf))
    return Fraction(float(lo)), Fraction(float(hi))


def _exact_case(fmt: str, acc: str, k: int, spread, seed: int, rows: int):
    """Random operands (a, b, c) and the exact profile's d for them."""
    rng = np.random.default_rng(seed)
    a = random_bits(fmt, (rows, k), rng, spread)
    b = random_bits(fmt, (rows, k), rng, spread)
    c = random_bits(acc, (rows,), rng, spread)
    return a, b, c, inner_product(a, b, c, fmt, acc, "exact")


@settings(deadline=None)
@given(
    fmt=st.sampled_from(FLOAT_INPUTS),
    acc=st.sampled_from(ACCS),
    k=st.integers(1, 40),
    spread=st.sampled_from([2, 6, 20]),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_is_nearest_even_of_fraction_sum(fmt, acc, k, spread, seed):
    rows = 6
    a, b, c, d = _exact_case(fmt, acc, k, spread, seed, rows)
    np_t = np.float32 if acc == "f32" else np.float16
    results = d.view(np_t)
    for i in range(rows):
        exact = sum((x * y for x, y in zip(_values(a[i], fmt), _values(b[i], fmt))), Fraction(0))
        exact += _values(c[i : i + 1], acc)[0]
        r = results[i]
        if not np.isfinite(r):
            big = Fraction(float(np.finfo(np_t).max))
            half_ulp = Fraction(2) ** (int(np.finfo(np_t).maxexp) - int(np.finfo(np_t).nmant) - 2)
            assert abs(exact) >= big + half_ulp and (r > 0) == (exact > 0)
            continue
        rv = Fraction(float(r))
        lo, hi = _neighbours(r)
        err = abs(exact - rv)
        assert err <= abs(exact - lo) and err <= abs(exact - hi), (i, exact, rv)
        if err == abs(exact - lo) or err == abs(exact - hi):  # a tie: the even one wins
            assert int(d[i]) & 1 == 0 or exact == rv
        if rv == 0 and exact != 0:
            assert (int(d[i]) >> (d.dtype.itemsize * 8 - 1)) == (exact < 0)


@settings(deadline=None)
@given(
    fmt=st.sampled_from(FLOAT_INPUTS),
    acc=st.sampled_from(ACCS),
    k=st.integers(1, 34),
    spread=st.sampled_from([None, 3, 30]),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_matches_fraction_reference_including_specials(fmt, acc, k, spread, seed):
    rows = 4
    a, b, c, d = _exact_case(fmt, acc, k, spread, seed, rows)
    for i in range(rows):
        assert int(d[i]) == exact_reference(a[i], b[i], int(c[i]), fmt, acc), i


def test_exact_single_rounding_differs_from_recursive_float32():
    """1 + 2**-24 + 2**-26 rounds once to 1 + 2**-23; summing in float32 would give 1."""
    one, t12, t13 = 0x3C00, 0x0C00, 0x0800  # f16: 1, 2**-12, 2**-13
    a = np.array([[one, t12, t13]], dtype=np.uint16)
    c = np.array([0], dtype=np.uint32)
    d = inner_product(a, a, c, get_format("f16").name, "f32", "exact")
    assert int(d[0]) == 0x3F800001
    seq = np.float32(1) + np.float32(2.0**-24) + np.float32(2.0**-26)
    assert seq.view(np.uint32) == 0x3F800000


@pytest.mark.parametrize("fa,fb", [("e4m3", "e5m2"), ("e5m2", "e2m1")])
def test_exact_mixed_operand_formats(fa, fb):
    rng = np.random.default_rng(7)
    a = random_bits(fa, (20, 32), rng, 4)
    b = random_bits(fb, (20, 32), rng, 4)
    c = random_bits("f32", (20,), rng, 4)
    d = inner_product(a, b, c, (fa, fb), "f32", "exact")
    for i in range(20):
        assert int(d[i]) == exact_reference(a[i], b[i], int(c[i]), (fa, fb), "f32")
