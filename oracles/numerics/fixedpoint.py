"""Vectorised fixed-point kernels: fused aligned summation and rounding of scaled integers.

A *fused group* (the publishers' "block FMA") sums several exact terms at once:

1. each term is ``(-1)**sign * mant * 2**lsb`` with an alignment exponent ``aexp``
   (for a product: the sum of the operands' exponent fields);
2. the group's largest alignment exponent ``emax`` is found;
3. every term is truncated toward zero (sign-magnitude) to a multiple of
   ``2**max(emax - frac_bits, floor)``: only ``frac_bits`` bits below ``emax`` survive
   alignment, and none below ``2**floor``;
4. the truncated terms are added exactly (a wide fixed-point adder);
5. the sum is normalised and rounded once (:func:`round_scaled`).

``frac_bits=None`` means no truncation (exact sum).

Everything works on int64 arrays; rows whose exact sum would not fit in 62 bits are
recomputed with Python integers (numpy object arrays), so results are always exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_INT_LIMIT = 61  # bits of headroom we allow for int64 sums (sign bit and carries kept apart)
_LOWEST = np.iinfo(np.int64).min // 4  # an alignment exponent below every term's
_HIGHEST = np.iinfo(np.int64).max // 4


def clamp(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``x`` limited to [lo, hi]: np.clip's result at a quarter of its cost on the small arrays
    the model works on (np.clip's Python wrapper dominates there)."""
    return np.minimum(np.maximum(x, lo), hi)


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of nonnegative integers (int64 or object arrays); 0 for 0."""
    if x.dtype == object:
        return np.frompyfunc(int.bit_length, 1, 1)(x).astype(np.int64)
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    # float64 rounding can carry into the next power of two; undo that case exactly.
    over = (e > 0) & ((x >> clamp(e - 1, 0, 63)) == 0)
    return e - over


def shift(m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """m * 2**s truncated toward zero, for nonnegative m and signed per-element s."""
    if m.dtype == object:
        left = np.maximum(s, 0).astype(object)
        right = np.maximum(-s, 0).astype(object)
        return (m << left) >> right
    return (m << clamp(s, 0, 62)) >> clamp(-s, 0, 63)


def fused_sum(
    mant: np.ndarray,
    sign: np.ndarray,
    aexp: np.ndarray,
    lsb: np.ndarray,
    frac_bits: int | None,
    *,
    width_hint: int = 0,
    floor: int | None = None,
    present: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Aligned, truncated sum of the terms along the last axis.

    Arguments are arrays of shape (rows, terms): ``mant`` >= 0 (0 for zero terms, whose
    ``aexp`` must be very negative), ``sign`` 0/1, ``aexp`` alignment exponents and ``lsb``
    exponents of the mantissa's lowest bit.  ``width_hint`` bounds log2(|term| / 2**aexp)
    (2 for a product of two significands, more with scale factors).

    Returns ``(S, t)``: the signed integer sum per row (int64, or object for very wide
    exact rows) and the exponent ``t`` of its lowest bit, so that the group value is
    ``S * 2**t``.  ``floor`` (with ``frac_bits``) is the lowest grid exponent.  ``present``
    (same shape, bool) marks the terms whose ``aexp`` takes part in the alignment; default the
    nonzero terms (a block sub-sum that cancels to zero still aligns at its scale's exponent).
    """
    nonzero = mant != 0 if present is None else present
    emax = np.max(np.where(nonzero, aexp, _LOWEST), axis=-1)
    any_nz = nonzero.any(axis=-1)
    emax = np.where(any_nz, emax, 0)
    n = mant.shape[-1]
    carry = int(n).bit_length() + 1
    if frac_bits is None:
        t = np.min(np.where(nonzero, lsb, _HIGHEST), axis=-1)
        t = np.where(any_nz, t, 0)
        width = emax - t + width_hint + carry
    else:
        t = emax - frac_bits if floor is None else np.maximum(emax - frac_bits, floor)
        width = np.full(emax.shape, frac_bits + width_hint + carry + 1)
    wide = width > _INT_LIMIT
    s = lsb - t[..., None]
    if not wide.any():
        return _sum_int64(mant, sign, s), t
    S = np.empty(emax.shape, dtype=object)
    narrow = ~wide
    if narrow.any():
        S[narrow] = _sum_int64(mant[narrow], sign[narrow], s[narrow]).astype(object)
    S[wide] = _sum_object(mant[wide], sign[wide], s[wide])
    return S, t


def _sum_int64(mant: np.ndarray, sign: np.ndarray, s: np.ndarray) -> np.ndarray:
    v = shift(mant, s)
    return np.where(sign != 0, -v, v).sum(axis=-1)


def _sum_object(mant: np.ndarray, sign: np.ndarray, s: np.ndarray) -> np.ndarray:
    v = shift(mant.astype(object), s)
    v = np.where(sign != 0, -v, v)
    return v.sum(axis=-1)


@dataclass(frozen=True)
class Rounded:
    """Rounded values: ``(-1)**sign * q * 2**(aexp - (precision - 1))``; flags per row."""

    sign: np.ndarray  # int8 0/1
    q: np.ndarray  # int64, < 2**precision; q < 2**(precision-1) only if subnormal/zero
    aexp: np.ndarray  # int64 exponent of the (hidden) leading bit position, >= emin
    overflow: np.ndarray  # bool: magnitude beyond the largest finite value
    inexact: np.ndarray  # bool: the rounded value differs from the input


def round_scaled(
    S: np.ndarray, t: np.ndarray, precision: int, emin: int, emax: int, max_mant: int, mode: str
) -> Rounded:
    """Round ``S * 2**t`` (signed integers) to ``precision`` bits, exponent range [emin, emax].

    ``mode``: ``"rne"`` (nearest, ties to even) or ``"rz"`` (toward zero).  Results below
    ``2**emin`` are subnormal (gradual underflow).  On overflow, ``overflow`` is set and the
    returned finite value is the largest finite (``max_mant`` at ``emax``): the caller
    chooses Inf (RNE) or saturation (RZ).
    """
    if S.dtype == object:
        return _round_object(S, t, precision, emin, emax, max_mant, mode)
    neg = S < 0
    absS = np.abs(S)
    L = bit_length(absS)
    e_res = np.maximum(t + L - 1, emin)
    sh = e_res - (precision - 1) - t
    pos = clamp(sh, 0, 63)
    kept = absS >> pos
    q = kept << clamp(-sh, 0, 62)
    rem = absS - (kept << pos)
    half = np.int64(1) << clamp(sh - 1, 0, 62)
    above = (sh > 0) & (rem > half)
    tie = (sh > 0) & (rem == half)
    if mode == "rne":
        q = q + (above | (tie & ((q & 1) == 1)))
    elif mode != "rz":
        raise ValueError(f"unsupported rounding mode {mode!r}")
    carry = q >> precision
    q = q >> carry
    e_res = e_res + carry
    overflow = (absS != 0) & ((e_res > emax) | ((e_res == emax) & (q > max_mant)))
    q = np.where(overflow, max_mant, q)
    e_res = np.where(overflow, emax, e_res)
    inexact = overflow | ((sh > 0) & (rem != 0))
    return Rounded(neg.astype(np.int8), q, e_res.astype(np.int64), overflow, inexact)


def _round_object(
    S: np.ndarray, t: np.ndarray, precision: int, emin: int, emax: int, max_mant: int, mode: str
) -> Rounded:
    """Python-integer fallback of :func:`round_scaled` for rows too wide for int64."""
    shape = S.shape
    out_q = np.zeros(shape, dtype=np.int64)
    out_e = np.zeros(shape, dtype=np.int64)
    out_s = np.zeros(shape, dtype=np.int8)
    out_o = np.zeros(shape, dtype=bool)
    out_x = np.zeros(shape, dtype=bool)
    for idx in np.ndindex(shape):
        v, tt = int(S[idx]), int(t[idx])
        a = abs(v)
        e_res = max(tt + a.bit_length() - 1, emin)
        sh = e_res - (precision - 1) - tt
        rem = 0
        if sh > 0:
            q, rem = a >> sh, a & ((1 << sh) - 1)
            half = 1 << (sh - 1)
            if mode == "rne" and (rem > half or (rem == half and q & 1)):
                q += 1
            elif mode not in ("rne", "rz"):
                raise ValueError(f"unsupported rounding mode {mode!r}")
        else:
            q = a << -sh
        if q >> precision:
            q >>= 1
            e_res += 1
        over = a != 0 and (e_res > emax or (e_res == emax and q > max_mant))
        if over:
            q, e_res = max_mant, emax
        out_q[idx], out_e[idx], out_s[idx], out_o[idx] = q, e_res, int(v < 0), over
        out_x[idx] = over or rem != 0
    return Rounded(out_s, out_q, out_e, out_o, out_x)
