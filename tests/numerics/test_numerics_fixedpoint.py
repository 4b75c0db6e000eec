"""Integer kernels against Fraction arithmetic: rounding, aligned sums, the two-term add."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.oracles.numerics.fixedpoint import bit_length, fused_sum, round_scaled
from tcgen05_conformance.oracles.numerics.model import _Acc, _add_two
from tcgen05_conformance.oracles.numerics.reference import round_fraction


def _value(sign, q, aexp, precision) -> Fraction:
    v = Fraction(int(q)) * Fraction(2) ** (int(aexp) - (precision - 1))
    return -v if sign else v


@settings(deadline=None)
@given(
    S=st.lists(st.integers(-(2**60), 2**60), min_size=1, max_size=20),
    t=st.integers(-200, 100),
    precision=st.sampled_from([11, 14, 24]),
    mode=st.sampled_from(["rne", "rz"]),
)
def test_round_scaled_matches_fraction_rounding(S, t, precision, mode):
    emin, emax = (-14, 15) if precision == 11 else (-126, 127)
    arr = np.array(S, dtype=np.int64)
    r = round_scaled(arr, np.full(len(S), t), precision, emin, emax, (1 << precision) - 1, mode)
    for i, s in enumerate(S):
        want, over = round_fraction(
            Fraction(s) * Fraction(2) ** t,
            precision,
            emin,
            emax,
            Fraction((1 << precision) - 1, 1 << (precision - 1)),
            mode,
        )
        assert bool(r.overflow[i]) == over
        assert _value(r.sign[i], r.q[i], r.aexp[i], precision) == want
        assert bool(r.inexact[i]) == (over or want != Fraction(s) * Fraction(2) ** t)


def test_bit_length_exact_near_powers_of_two():
    xs = [0, 1, 2, 3, 2**53 - 1, 2**53, 2**53 + 1, 2**62 - 1, 2**62, 2**63 - 1]
    got = bit_length(np.array(xs, dtype=np.int64))
    assert got.tolist() == [x.bit_length() for x in xs]


@settings(deadline=None)
@given(
    terms=st.lists(
        st.tuples(st.integers(0, 2**24 - 1), st.integers(0, 1), st.integers(-300, 300)),
        min_size=1,
        max_size=12,
    ),
    frac_bits=st.sampled_from([None, 5, 25, 40]),
)
def test_fused_sum_truncates_each_term_toward_zero(terms, frac_bits):
    mant = np.array([[m for m, _, _ in terms]], dtype=np.int64)
    sign = np.array([[s for _, s, _ in terms]], dtype=np.int64)
    aexp = np.array([[e if m else -(1 << 20) for m, _, e in terms]], dtype=np.int64)
    lsb = aexp - 23
    S, t = fused_sum(mant, sign, aexp, lsb, frac_bits, width_hint=1)
    got = Fraction(int(S[0])) * Fraction(2) ** int(t[0])
    nz = [e for m, _, e in terms if m]
    want = Fraction(0)
    for m, s, e in terms:
        v = Fraction(m) * Fraction(2) ** (e - 23)
        if frac_bits is not None and nz:
            grid = Fraction(2) ** (max(nz) - frac_bits)
            v = int(v / grid) * grid
        want += -v if s else v
    assert got == want


@settings(deadline=None)
@given(
    x=st.tuples(st.integers(0, 2**23), st.integers(0, 1), st.integers(-140, 127)),
    y=st.tuples(st.integers(0, 2**23), st.integers(0, 1), st.integers(-140, 127)),
    mode=st.sampled_from(["rne", "rz"]),
)
def test_two_term_add_with_sticky_is_correctly_rounded(x, y, mode):
    def acc(t):
        m, s, e = t
        m = m | (1 << 23) if m else 0
        return _Acc(np.array([s]), np.array([m]), np.array([e if m else -(1 << 20)]), 23)

    S, t = _add_two(acc(x), acc(y), 24 + 3)
    r = round_scaled(S, t, 24, -126, 127, 2**24 - 1, mode)
    exact = sum(
        (-1) ** s * Fraction(m | (1 << 23) if m else 0) * Fraction(2) ** (e - 23)
        for m, s, e in (x, y)
    )
    want, over = round_fraction(exact, 24, -126, 127, Fraction(2**24 - 1, 2**23), mode)
    assert bool(r.overflow[0]) == over
    assert _value(r.sign[0], r.q[0], r.aexp[0], 24) == want
