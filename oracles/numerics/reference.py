"""Straightforward pure-Python references, one inner product at a time.

These exist to check the vectorised model and to time it against something obvious:

* :func:`exact_reference` - the exact profile with :class:`fractions.Fraction`: decode
  every value to a rational, add them all exactly, round once to nearest even.
* :func:`datapath_reference` - any :class:`~tcgen05_conformance.oracles.numerics.profiles.Datapath`, written
  as loops over Fractions: group the products, truncate each term toward zero to a
  multiple of ``2**(emax - align_frac_bits)``, add, round.

Neither shares code with the vectorised kernels beyond the format *records* (bias, field
widths); decoding and rounding are re-derived here from the format definitions.
"""

from __future__ import annotations

import math
from fractions import Fraction

from tcgen05_conformance.core.formats import FloatFormat, IntFormat, get_format

from .profiles import Datapath, get_profile

NAN = "nan"


def decode_value(bits: int, fmt: FloatFormat):
    """Value of one raw encoding: a Fraction, +/-math.inf, or NAN (string).

    Also returns the exponent field value used for alignment (unbiased, emin for
    subnormals), or None for zero/specials.
    """
    code = (int(bits) >> fmt.field_shift) & (
        (1 << (int(fmt.signed) + fmt.exp_bits + fmt.frac_bits)) - 1
    )
    frac = code & ((1 << fmt.frac_bits) - 1)
    efield = (code >> fmt.frac_bits) & ((1 << fmt.exp_bits) - 1)
    negative = fmt.signed and (code >> (fmt.exp_bits + fmt.frac_bits)) & 1
    top = (1 << fmt.exp_bits) - 1
    if fmt.specials == "e8m0":
        if efield == top:
            return NAN, None
        return Fraction(2) ** (efield - fmt.bias), efield - fmt.bias
    if fmt.specials == "ieee" and efield == top:
        if frac:
            return NAN, None
        return (-math.inf if negative else math.inf), None
    if fmt.specials == "fn" and efield == top and frac == top_frac(fmt):
        return NAN, None
    if efield == 0:
        exp = 1 - fmt.bias
        mag = Fraction(frac, 1 << fmt.frac_bits) * Fraction(2) ** exp
    else:
        exp = efield - fmt.bias
        mag = (1 + Fraction(frac, 1 << fmt.frac_bits)) * Fraction(2) ** exp
    if mag == 0:
        return (Fraction(0), "-0" if negative else "+0"), None
    return (-mag if negative else mag), exp


def top_frac(fmt: FloatFormat) -> int:
    return (1 << fmt.frac_bits) - 1


def round_fraction(
    x: Fraction, precision: int, emin: int, emax: int, max_sig: Fraction, mode: str
) -> tuple[Fraction, bool]:
    """Round a rational to ``precision`` significant bits with exponents in [emin, emax].

    Returns (value, overflowed); on overflow the value is the largest finite magnitude
    ``max_sig * 2**emax`` with the sign of x.
    """
    if x == 0:
        return Fraction(0), False
    mag = abs(x)
    e = math.floor(math.log2(mag.numerator) - math.log2(mag.denominator))
    # fix floating-point error of the logarithm estimate
    while Fraction(2) ** e > mag:
        e -= 1
    while Fraction(2) ** (e + 1) <= mag:
        e += 1
    ulp = Fraction(2) ** (max(e, emin) - (precision - 1))
    n = mag / ulp
    q = math.floor(n)
    rest = n - q
    if mode == "rne" and (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and q % 2 == 1)):
        q += 1
    elif mode not in ("rne", "rz"):
        raise ValueError(mode)
    r = q * ulp
    limit = max_sig * Fraction(2) ** emax
    over = r > limit
    if over:
        r = limit
    return (-r if x < 0 else r), over


def encode_value(v, fmt: FloatFormat) -> int:
    """Raw encoding of a representable value (Fraction), +/-inf, NAN, or a signed zero."""
    sign_shift = fmt.exp_bits + fmt.frac_bits
    if v == NAN:
        return fmt.canonical_nan
    if isinstance(v, float) and math.isinf(v):
        return (
            ((1 << fmt.exp_bits) - 1) << fmt.frac_bits | ((v < 0) << sign_shift)
        ) << fmt.field_shift
    if isinstance(v, tuple):  # signed zero
        return ((v[1] == "-0") << sign_shift) << fmt.field_shift
    neg = v < 0
    mag = abs(v)
    emin = 1 - fmt.bias
    if mag < Fraction(2) ** emin:
        frac = mag / Fraction(2) ** (emin - fmt.frac_bits)
        assert frac.denominator == 1
        return ((neg << sign_shift) | int(frac)) << fmt.field_shift
    e = emin
    while Fraction(2) ** (e + 1) <= mag:
        e += 1
    frac = (mag / Fraction(2) ** e - 1) * (1 << fmt.frac_bits)
    assert frac.denominator == 1
    return ((neg << sign_shift) | ((e + fmt.bias) << fmt.frac_bits) | int(frac)) << fmt.field_shift


def _max_sig(fmt: FloatFormat, precision: int) -> Fraction:
    return Fraction((1 << precision) - 1, 1 << (precision - 1))


def _specials(values) -> object | None:
    """NaN / infinity rule shared with the model (see docs/numerics.md)."""
    if any(v == NAN for v in values):
        return NAN
    pos = any(isinstance(v, float) and v > 0 for v in values)
    neg = any(isinstance(v, float) and v < 0 for v in values)
    if pos and neg:
        return NAN
    if pos:
        return math.inf
    if neg:
        return -math.inf
    return None


def _flush(v, e, fmt: FloatFormat, flush: bool):
    """Subnormal input -> signed zero when the datapath flushes subnormals."""
    if flush and isinstance(v, Fraction) and v != 0 and abs(v) < Fraction(2) ** (1 - fmt.bias):
        return (Fraction(0), "-0" if v < 0 else "+0"), None
    return v, e


def _products(a_row, b_row, fa, fb, flush: bool = False):
    """Per k: (value or special, alignment exponent or None, negative-zero flag)."""
    out = []
    for x, y in zip(a_row, b_row):
        va, ea = _flush(*decode_value(x, fa), fa, flush)
        vb, eb = _flush(*decode_value(y, fb), fb, flush)
        if va == NAN or vb == NAN:
            out.append((NAN, None, False))
            continue
        za = isinstance(va, tuple)
        zb = isinstance(vb, tuple)
        if isinstance(va, float) or isinstance(vb, float):
            if za or zb:
                out.append((NAN, None, False))
            else:
                neg = (va < 0) != (vb < 0)
                out.append((-math.inf if neg else math.inf, None, False))
            continue
        if za or zb:
            neg_a = (va[1] == "-0") if za else va < 0
            neg_b = (vb[1] == "-0") if zb else vb < 0
            out.append((Fraction(0), None, neg_a != neg_b))
            continue
        out.append((va * vb, ea + eb, False))
    return out


def _zero_result(products, c_val) -> tuple:
    neg = all(p[2] for p in products) and isinstance(c_val, tuple) and c_val[1] == "-0"
    return (Fraction(0), "-0" if neg else "+0")


def exact_reference(a_row, b_row, c_bits: int, in_fmt, acc_fmt) -> int:
    """Exact profile for one inner product: Fraction sum, one RNE rounding to acc_fmt."""
    fa, fb = (
        get_format(f) for f in (in_fmt if isinstance(in_fmt, (tuple, list)) else (in_fmt, in_fmt))
    )
    facc = get_format(acc_fmt)
    if isinstance(facc, IntFormat):
        return _int_reference(a_row, b_row, c_bits, fa, fb, saturate=False)
    prods = _products(a_row, b_row, fa, fb)
    c_val, _ = decode_value(c_bits, facc)
    special = _specials([p[0] for p in prods] + [c_val])
    if special is not None:
        return encode_value(special, facc)
    total = sum((p[0] for p in prods), Fraction(0)) + (0 if isinstance(c_val, tuple) else c_val)
    if total == 0:
        return encode_value(_zero_result(prods, c_val), facc)
    r, over = round_fraction(
        total, facc.precision, 1 - facc.bias, facc.emax, _max_sig(facc, facc.precision), "rne"
    )
    if over:
        return encode_value(math.inf if total > 0 else -math.inf, facc)
    if r == 0:
        return encode_value((Fraction(0), "-0" if total < 0 else "+0"), facc)
    return encode_value(r, facc)


def _int_reference(a_row, b_row, c_bits, fa: IntFormat, fb: IntFormat, saturate: bool) -> int:
    def val(x, f):
        x = int(x) & 0xFF
        return x - 256 if f.signed and x >= 128 else x

    c = int(c_bits)
    c = c - (1 << 32) if c >= 1 << 31 else c
    total = sum(val(x, fa) * val(y, fb) for x, y in zip(a_row, b_row)) + c
    if saturate:
        return max(-(1 << 31), min((1 << 31) - 1, total))
    return (total + (1 << 31)) % (1 << 32) - (1 << 31)


def datapath_reference(a_row, b_row, c_bits: int, in_fmt, acc_fmt, datapath: Datapath | str) -> int:
    """One inner product through a datapath (or a profile name), with Fractions and loops."""
    fa, fb = (
        get_format(f) for f in (in_fmt if isinstance(in_fmt, (tuple, list)) else (in_fmt, in_fmt))
    )
    facc = get_format(acc_fmt)
    if isinstance(datapath, str):
        datapath = get_profile(datapath).datapath(fa.name, facc.name)
    dp = datapath
    flush = not dp.subnormal_inputs
    prods = _products(a_row, b_row, fa, fb, flush)
    c_val, c_exp = _flush(*decode_value(c_bits, facc), facc, flush)
    special = _specials([p[0] for p in prods] + [c_val])
    if special == NAN:
        return encode_value(special, facc)
    K = len(prods)
    k_step = dp.k_step or K
    while len(prods) % k_step:
        prods.append((Fraction(0), None, True))
    p_g = dp.group_precision or facc.precision
    emin = 1 - facc.bias
    c_inf = isinstance(c_val, float)
    acc = (
        Fraction(0) if isinstance(c_val, tuple) or c_inf else c_val,
        None if isinstance(c_val, tuple) or c_inf else c_exp,
    )
    overflow_sign = None  # +1/-1: the first stage that overflowed before any infinite input
    inf_seen = nan_late = False

    def enter(values) -> None:
        # An infinite input entering after an overflowed stage of the other sign gives NaN.
        nonlocal inf_seen, nan_late
        infinities = [v for v in values if isinstance(v, float)]
        if infinities:
            sign = 1 if infinities[0] > 0 else -1
            nan_late |= overflow_sign is not None and not inf_seen and sign != overflow_sign
            inf_seen = True

    def finite(v):
        return Fraction(0) if isinstance(v, float) else v

    last_sum = None
    for step in range(0, len(prods), k_step):
        incoming = acc
        run = acc if dp.c_entry == "first_group" else (Fraction(0), None)
        for g in range(dp.split_ways):
            idx = [step + k for k in range(k_step) if (k // dp.split_stride) % dp.split_ways == g]
            enter(([c_val] if step == 0 and g == 0 and dp.c_entry == "first_group" else []) + [prods[k][0] for k in idx])
            terms = [(finite(prods[k][0]), prods[k][1]) for k in idx] + [run]
            s = _aligned_sum(terms, dp.align_frac_bits, dp.align_floor)
            r, over = round_fraction(
                s, p_g, emin, facc.emax, _max_sig(facc, p_g), dp.group_rounding
            )
            if over and not inf_seen and overflow_sign is None:
                overflow_sign = 1 if s > 0 else -1
            run = (r, _exp_field(r, emin))
            last_sum = s
        if dp.c_entry == "final_add":
            if step == 0:
                enter([c_val])
            s = run[0] + incoming[0]
            r, over = round_fraction(
                s,
                facc.precision,
                emin,
                facc.emax,
                _max_sig(facc, facc.precision),
                dp.final_rounding,
            )
            if over and not inf_seen and overflow_sign is None:
                overflow_sign = 1 if s > 0 else -1
            run = (r, _exp_field(r, emin))
            last_sum = s
        acc = run
    if nan_late:
        return encode_value(NAN, facc)
    if special is not None:
        return encode_value(special, facc)
    if overflow_sign is not None:  # an overflow is infinite whatever the rounding (H100)
        return encode_value(math.inf * overflow_sign, facc)
    value = acc[0]
    if value != 0 and not dp.subnormal_outputs and abs(value) < Fraction(2) ** emin:
        value = Fraction(0)
    if value == 0:
        if dp.zero_sign == "positive":
            return encode_value((Fraction(0), "+0"), facc)
        if last_sum == 0:
            return encode_value(_zero_result(prods[:K], c_val), facc)
        return encode_value((Fraction(0), "-0" if last_sum < 0 else "+0"), facc)
    return encode_value(value, facc)


def _exp_field(v: Fraction, emin: int) -> int | None:
    if v == 0:
        return None
    e = emin
    mag = abs(v)
    while Fraction(2) ** (e + 1) <= mag:
        e += 1
    return e


def _aligned_sum(terms, frac_bits: int | None, floor: int | None = None) -> Fraction:
    """Sum after truncating every term toward zero to a multiple of
    2**max(emax - frac_bits, floor)."""
    exps = [e for v, e in terms if v != 0 and e is not None]
    if not exps:
        return Fraction(0)
    if frac_bits is None:
        return sum((v for v, _ in terms), Fraction(0))
    grid = Fraction(2) ** max(max(exps) - frac_bits, -(10**9) if floor is None else floor)
    return sum((math.trunc(v / grid) * grid for v, _ in terms), Fraction(0))
