"""The vectorised inner-product model ``d = sum_k a_k * b_k + c`` driven by a profile.

Inputs are **raw encodings** of the input format (uint8 for the 8/6/4-bit formats, uint16
for f16/bf16, uint32 containers for tf32; int8/uint8 for s8/u8), shaped (batch, K); ``c``
is raw encodings of the accumulator format, shaped (batch,); the result is raw encodings
of the accumulator format (uint32 for f32, uint16 for f16, int32 for s32).

Products are exact.  The datapath of the profile decides how products and ``c`` are
grouped, aligned, truncated, added and rounded (see :mod:`tcgen05_conformance.oracles.numerics.profiles`).
Special values (assumptions, see docs/numerics.md): any NaN input, ``0 * Inf``, or
``+Inf`` meeting ``-Inf`` gives the canonical NaN; otherwise an infinite input gives that
infinity; a finite overflow gives Inf whatever the rounding (measured on H100); a zero
result is +0 in the hardware profiles (measured on H100) and follows IEEE 754 in ``exact``
(+0 unless every product and ``c`` are -0).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tcgen05_conformance.core.formats import (
    INF,
    NAN,
    ZERO_EXP,
    Decoded,
    FloatFormat,
    IntFormat,
    _decode_fields,
    code_bits,
    decode,
    encode_finite,
    get_format,
    inf_bits,
    storage_dtype,
    values,
)

from .fixedpoint import clamp, fused_sum, round_scaled, shift
from .profiles import SCALED_KINDS, Datapath, Profile, get_profile, scaled_kind

#: Rows processed per vectorised pass (keeps the working set in cache).
CHUNK_ROWS = 8192


@dataclass(frozen=True)
class _Acc:
    """Accumulator term per row: value (-1)**sign * mant * 2**(aexp - frac)."""

    sign: np.ndarray
    mant: np.ndarray
    aexp: np.ndarray
    frac: int


def _formats(in_fmt, acc_fmt):
    if isinstance(in_fmt, (tuple, list)):
        fa, fb = (get_format(f) for f in in_fmt)
    else:
        fa = fb = get_format(in_fmt)
    return fa, fb, get_format(acc_fmt)


def inner_product(
    a_bits: np.ndarray,
    b_bits: np.ndarray,
    c_bits: np.ndarray | int,
    in_fmt: str | tuple[str, str],
    acc_fmt: str,
    profile: str | Profile,
    *,
    a_scale: np.ndarray | None = None,
    b_scale: np.ndarray | None = None,
    scale_fmt: str = "ue8m0",
    kind: str | None = None,
    saturate: bool | None = None,
) -> np.ndarray:
    """Bit-accurate model of ``d = sum_k a[..., k] * b[..., k] + c`` for one profile.

    ``in_fmt`` names the input format, or a pair (A format, B format) for mixed inputs.
    ``a_scale``/``b_scale`` (optional, block-scaled kinds): raw ``scale_fmt`` encodings of
    shape (batch, K // block); each scale multiplies the products of its block exactly
    or, under a datapath with ``block_group``, the exact sub-sums of its products (see
    docs/numerics.md); ``kind`` names the block-scaled kind whose datapath the profile gives
    (default: `scaled_kind` of the formats and K).  ``saturate`` applies to integer
    kinds (default: the profile's ``int_overflow``).

    Returns raw encodings of ``acc_fmt`` with the batch shape of ``a_bits[..., 0]``.
    """
    prof = get_profile(profile)
    fa, fb, facc = _formats(in_fmt, acc_fmt)
    a = np.asarray(a_bits)
    b = np.asarray(b_bits)
    if a.shape != b.shape or a.ndim < 1:
        raise ValueError(f"a and b must have the same shape (..., K); got {a.shape} and {b.shape}")
    batch_shape, K = a.shape[:-1], a.shape[-1]
    a = a.reshape(-1, K)
    b = b.reshape(-1, K)
    rows = a.shape[0]
    c = np.broadcast_to(np.asarray(c_bits), batch_shape).reshape(rows)

    if isinstance(fa, IntFormat) or isinstance(fb, IntFormat):
        if not (isinstance(fa, IntFormat) and isinstance(fb, IntFormat) and facc.name == "s32"):
            raise ValueError("integer inputs need integer A and B and an s32 accumulator")
        sat = (prof.int_overflow == "saturate") if saturate is None else saturate
        return _int_dot(a, b, c, fa, fb, sat).reshape(batch_shape)
    if not isinstance(facc, FloatFormat) or facc.name not in ("f32", "f16"):
        raise ValueError(f"floating-point inputs accumulate into f32 or f16, not {facc.name}")
    if a_scale is not None:
        kind = kind or scaled_kind(fa.name, fb.name, K)
        if kind not in SCALED_KINDS:
            raise ValueError(f"unknown block-scaled kind {kind!r}; known: {', '.join(SCALED_KINDS)}")
    dp = datapath_of(prof, fa.name, fb.name, facc.name, kind=None if a_scale is None else kind)
    if fa.name in prof.widened_inputs:  # converted exactly before the datapath reads them
        a, fa = _widened(a, fa, widened_format(prof, fa.name))
    if fb.name in prof.widened_inputs:
        b, fb = _widened(b, fb, widened_format(prof, fb.name))
    scales = None
    if (a_scale is None) != (b_scale is None):
        raise ValueError("give both a_scale and b_scale, or neither")
    if a_scale is not None:
        scales = (
            np.asarray(a_scale).reshape(rows, -1),
            np.asarray(b_scale).reshape(rows, -1),
            get_format(scale_fmt),
        )
    out = np.empty(rows, dtype=storage_dtype(facc))
    for lo in range(0, rows, CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, rows)
        sc = None if scales is None else (scales[0][lo:hi], scales[1][lo:hi], scales[2])
        out[lo:hi] = _float_dot(a[lo:hi], b[lo:hi], c[lo:hi], fa, fb, facc, dp, sc)
    return out.reshape(batch_shape)


@lru_cache(maxsize=None)
def _widening_table(name: str, target: str) -> np.ndarray:
    """The `target` code of every `name` code, converted exactly (NaN to NaN, signs kept)."""
    fmt, wide = get_format(name), get_format(target)
    numpy_type = {"f16": np.float16, "f32": np.float32}.get(wide.name)
    if numpy_type is None or not isinstance(fmt, FloatFormat):
        raise ValueError(f"a profile widens {name} to {target}: only float inputs to f16 or f32 are modelled")
    v = values(np.arange(1 << code_bits(fmt), dtype=np.uint32), name)
    with np.errstate(invalid="ignore", over="ignore"):
        w = v.astype(numpy_type)
    same = (w.astype(np.float64) == v) | (np.isnan(v) & np.isnan(w))
    if not same.all():
        raise ValueError(f"{name} does not widen exactly to {target}")
    return w.view(storage_dtype(wide))


def widened_format(prof: Profile, name: str) -> str:
    """The format an operand of format `name` is read as under `prof` (`widened_inputs`; itself
    when not widened); ValueError when the profile widens it to a format that does not hold it."""
    target = prof.widened_inputs.get(name)
    if target is None:
        return name
    _widening_table(name, target)
    return target


def _widened(codes: np.ndarray, fmt: FloatFormat, target: str) -> tuple[np.ndarray, FloatFormat]:
    """Codes of `fmt` as codes of `target` (a profile's `widened_inputs`), and that format."""
    index = _codes(np.asarray(codes), fmt)
    return _widening_table(fmt.name, target)[index], get_format(target)


def datapath_of(prof: Profile, a_fmt: str, b_fmt: str, acc_fmt: str, kind: str | None = None) -> Datapath:
    """The datapath of float A x B -> acc under a profile: mixed fp8/fp6/fp4 operands share the
    narrow-float datapath, the A format's, and both operand formats must be supported. With a
    block-scaled `kind`, the profile's datapath of that kind for the A format when it has one."""
    if a_fmt != b_fmt:
        narrow = {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"}
        if not (a_fmt in narrow and b_fmt in narrow):
            raise ValueError(f"unsupported mixed input formats {a_fmt} x {b_fmt}")
        prof.datapath(b_fmt, acc_fmt)
    dp = prof.datapath(a_fmt, acc_fmt)
    if kind is not None:
        return prof.scaled_datapaths.get((kind, a_fmt, acc_fmt), dp)
    return dp


def _int_dot(a, b, c, fa: IntFormat, fb: IntFormat, saturate: bool) -> np.ndarray:
    """Exact integer dot product plus c, wrapped (two's complement) or saturated to s32."""
    # astype to the 8-bit type reinterprets raw codes (e.g. uint8 0xFF as s8 -1) by wrapping
    av = np.asarray(a).astype(np.int8 if fa.signed else np.uint8).astype(np.int32)
    bv = np.asarray(b).astype(np.int8 if fb.signed else np.uint8).astype(np.int32)
    total = np.einsum("ij,ij->i", av, bv, dtype=np.int64) + np.asarray(c).astype(np.int64)
    if saturate:
        total = clamp(total, -(1 << 31), (1 << 31) - 1)
    else:
        total = ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return total.astype(np.int32)


def _flush_subnormals(d: Decoded, fmt: FloatFormat) -> Decoded:
    sub = (d.mant > 0) & (d.mant < (1 << fmt.frac_bits))
    if not sub.any():
        return d
    cls = np.where(sub, 0, d.cls).astype(np.int8)
    return Decoded(d.sign, np.where(sub, 0, d.mant), np.where(sub, ZERO_EXP, d.aexp), cls)


def _float_dot(
    a,
    b,
    c,
    fa: FloatFormat,
    fb: FloatFormat,
    facc: FloatFormat,
    dp: Datapath,
    scales,
    *,
    fast: bool = True,
) -> np.ndarray:
    """Model one chunk of rows; rows without special values take the table-driven fast path."""
    if fast and scales is None and dp.align_frac_bits is not None and dp.subnormal_inputs:
        fp = _FastProducts.build(a, b, fa, fb, _k_order(a.shape[1], dp))
        if fp is not None:
            dc = decode(c, facc)
            slow = fp.special_rows | (dc.cls >= INF)
            if not slow.any():
                return _fast_dot(fp, a, b, dc, fa, fb, facc, dp)
            out = np.empty(a.shape[0], dtype=storage_dtype(facc))
            keep = ~slow
            if keep.any():
                out[keep] = _fast_dot(
                    fp.rows(keep), a[keep], b[keep], _take(dc, keep), fa, fb, facc, dp
                )
            out[slow] = _float_dot(a[slow], b[slow], c[slow], fa, fb, facc, dp, None, fast=False)
            return out
    return _generic_dot(a, b, c, fa, fb, facc, dp, scales)


def _take(d: Decoded, rows: np.ndarray) -> Decoded:
    return Decoded(d.sign[rows], d.mant[rows], d.aexp[rows], d.cls[rows])


# Exponent sentinels of the fast tables: zeros sink far below any finite exponent, specials
# float far above, so one row maximum finds both the alignment exponent and special rows.
_FAST_ZERO = -(1 << 12)
_FAST_SPECIAL = 1 << 16
_FAST_SPECIAL_ROW = 1 << 15


@lru_cache(maxsize=None)
def _fast_table(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(signed significand int32, exponent int32 with sentinels) per code, or None."""
    fmt = get_format(name)
    if code_bits(fmt) > 16 and fmt.field_shift == 0:
        return None
    n = 1 << code_bits(fmt)
    d = _decode_fields(np.arange(n, dtype=np.int64), fmt)
    m = np.where(d.sign == 1, -d.mant, d.mant).astype(np.int32)
    e = np.where(d.cls >= INF, _FAST_SPECIAL, np.where(d.mant == 0, _FAST_ZERO, d.aexp)).astype(
        np.int32
    )
    return m, e


@dataclass(frozen=True)
class _FastProducts:
    """Signed exact products and their alignment exponents, laid out (K, rows) as int32.

    The transposed layout makes the per-row reductions (maximum exponent, sum) run over
    contiguous memory, which is several times faster in numpy than reducing a short last axis.
    """

    pm: np.ndarray
    pe: np.ndarray
    pfrac: int
    special_rows: np.ndarray

    @staticmethod
    def build(
        a, b, fa: FloatFormat, fb: FloatFormat, order: np.ndarray | None
    ) -> "_FastProducts | None":
        """Products with K reordered by ``order`` (so every fused group is a contiguous slice)."""
        if fa.precision + fb.precision > 30:
            return None
        ta, tb = _fast_table(fa.name), _fast_table(fb.name)
        if ta is None or tb is None:
            return None
        if order is not None:
            if (order < 0).any():  # padding: code 0 is +0 in every input format
                a = np.concatenate([a, np.zeros((a.shape[0], 1), a.dtype)], axis=1)
                b = np.concatenate([b, np.zeros((b.shape[0], 1), b.dtype)], axis=1)
            a, b = a[:, order], b[:, order]
        ia, ib = _codes(a.T, fa), _codes(b.T, fb)
        # mode="wrap" skips numpy's bounds error path (indices are already masked in range)
        pm = np.take(ta[0], ia, mode="wrap") * np.take(tb[0], ib, mode="wrap")
        pe = np.take(ta[1], ia, mode="wrap") + np.take(tb[1], ib, mode="wrap")
        special = pe.max(axis=0) >= _FAST_SPECIAL_ROW
        return _FastProducts(pm, pe, fa.frac_bits + fb.frac_bits, special)

    def rows(self, keep: np.ndarray) -> "_FastProducts":
        return _FastProducts(
            self.pm[:, keep], self.pe[:, keep], self.pfrac, self.special_rows[keep]
        )


def _codes(bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Table indices of raw encodings (meaningful bits only), as a C-contiguous intp array (one
    pass from a transposed view; np.take converts any other index type on every call, and each
    index array serves two takes)."""
    x = bits
    if fmt.field_shift:
        x = x.astype(np.uint32) >> fmt.field_shift
    if x.dtype.itemsize * 8 > code_bits(fmt) or fmt.field_shift:
        x = x & x.dtype.type((1 << code_bits(fmt)) - 1)
    return np.ascontiguousarray(x, dtype=np.intp)


def _k_order(K: int, dp: Datapath) -> np.ndarray | None:
    """Order of the K products that makes each fused group contiguous (padding with -1)."""
    k_step = dp.k_step or K
    if dp.split_ways == 1 and K % k_step == 0:
        return None
    steps = -(-K // k_step)
    groups = _group_indices(k_step, dp.split_ways, dp.split_stride)
    order = np.concatenate([g + s * k_step for s in range(steps) for g in groups])
    return np.where(order < K, order, -1)


def _fast_dot(
    fp: _FastProducts, a, b, dc: Decoded, fa, fb, facc: FloatFormat, dp: Datapath
) -> np.ndarray:
    """Datapath chain on finite rows with int32 products (same semantics as _generic_dot)."""
    F = dp.align_frac_bits
    A = F - fp.pfrac  # left shift putting a product's lsb on the 2**t grid at d=0
    pm, pe = fp.pm, fp.pe  # K already padded and reordered by _k_order
    K, rows = pm.shape
    k_step = dp.k_step or K
    n = k_step // dp.split_ways
    slices = [slice(j * n, (j + 1) * n) for j in range(dp.split_ways)]
    wide = F + 2 > 30
    sign_shift = 63 if wide else 31

    def group_sum(cols, run: _Acc | None):
        gm, ge = pm[cols], pe[cols]
        emax = ge.max(axis=0)
        if run is not None:
            emax = np.maximum(emax, run.aexp.astype(np.int32))
        t = emax.astype(np.int64) - F
        d = emax - ge  # >= 0; numpy shifts past the width give 0 / -1
        if wide:
            gm, d = gm.astype(np.int64), d.astype(np.int64)
        if dp.align_floor is not None and (t < dp.align_floor).any():  # only sums near the subnormal range
            below = np.maximum(dp.align_floor - t, 0)  # the grid stops at 2**align_floor
            t, d = t + below, d + below.astype(d.dtype)
        if A >= 0:
            x = gm << A
        else:
            x, d = gm, d - A
        # x / 2**d truncated toward zero: shift the magnitude, put the sign back.
        sgn = (x >> sign_shift) | 1
        S = (sgn * ((x * sgn) >> d)).sum(axis=0, dtype=np.int64)
        if run is not None:
            S = S + _acc_on_grid(run, t)
        return S, t

    dc_acc = _Acc(
        dc.sign.astype(np.int64), dc.mant, np.where(dc.mant != 0, dc.aexp, ZERO_EXP), facc.frac_bits
    )
    out, _ = _chain(
        group_sum,
        slices,
        K,
        k_step,
        dc_acc,
        facc,
        dp,
        zero_sign=lambda rows_: _zero_sign(
            a[rows_], b[rows_], fa, fb, dc.sign[rows_], dc.mant[rows_]
        ),
    )
    return out


def _acc_on_grid(run: _Acc, t: np.ndarray) -> np.ndarray:
    """Signed accumulator term truncated toward zero onto the 2**t grid."""
    v = shift(run.mant, run.aexp - run.frac - t)
    return np.where(run.sign == 1, -v, v)


def _zero_sign(a, b, fa, fb, c_sign, c_mant) -> np.ndarray:
    """IEEE 754 sign of an exact zero sum: 1 only if every product and c are -0."""
    da, db = decode(a, fa), decode(b, fb)
    neg0 = (da.mant * db.mant == 0) & ((da.sign ^ db.sign) == 1)
    return (neg0.all(axis=1) & (c_mant == 0) & (c_sign == 1)).astype(np.int64)


def _chain(
    group_sum, groups, K, k_step, acc: _Acc, facc: FloatFormat, dp: Datapath, zero_sign, inf_entering=None
) -> tuple[np.ndarray, np.ndarray]:
    """Run the steps and groups of a datapath and encode the result (specials excluded), and
    flag the rows where an infinity from an overflowing stage later meets an infinite input of
    the other sign (NaN). `inf_entering(cols)` gives the sign of the infinite inputs entering a
    stage (-1: none; cols None: c)."""
    rows = acc.mant.shape[0]
    p_g = dp.group_precision or facc.precision
    max_g = (1 << p_g) - 1 if p_g < facc.precision else facc.max_mant
    inf_state = np.zeros(rows, dtype=np.int8)  # 0, or +1/-1 after an overflow to infinity
    inf_seen = np.zeros(rows, dtype=bool)  # an infinite input has entered
    nan_late = np.zeros(rows, dtype=bool)

    def enter(cols) -> None:
        nonlocal inf_seen, nan_late
        if inf_entering is None:
            return
        sign = inf_entering(cols)
        overflow_sign = np.where(inf_state < 0, 1, 0)
        nan_late |= (inf_state != 0) & ~inf_seen & (sign >= 0) & (sign != overflow_sign)
        inf_seen |= sign >= 0

    last_S = np.zeros(rows, dtype=np.int64)
    for step in range(0, K, k_step):
        incoming = acc
        run = acc if dp.c_entry == "first_group" else None
        for g, idx in enumerate(groups):
            cols = _offset(idx, step)
            if step == 0 and g == 0 and dp.c_entry == "first_group":
                enter(None)
            enter(cols)
            S, t = group_sum(cols, run)
            r = round_scaled(S, t, p_g, facc.emin, facc.emax, max_g, dp.group_rounding)
            inf_state = _note_overflow(inf_state, r, inf_seen)
            run = _Acc(r.sign.astype(np.int64), r.q, np.where(r.q != 0, r.aexp, ZERO_EXP), p_g - 1)
            last_S = S
        if dp.c_entry == "final_add":
            if step == 0:
                enter(None)
            S, t = _add_two(run, incoming, facc.precision + 3)
            r = round_scaled(
                S, t, facc.precision, facc.emin, facc.emax, facc.max_mant, dp.final_rounding
            )
            inf_state = _note_overflow(inf_state, r, inf_seen)
            run = _Acc(
                r.sign.astype(np.int64),
                r.q,
                np.where(r.q != 0, r.aexp, ZERO_EXP),
                facc.precision - 1,
            )
            last_S = S
        acc = run

    # Final encoding: widen the significand to the accumulator's precision.
    widen = facc.frac_bits - acc.frac
    q = acc.mant << widen if widen >= 0 else acc.mant >> -widen
    aexp = np.where(acc.mant != 0, acc.aexp, facc.emin)
    sign = acc.sign.astype(np.int64)
    if not dp.subnormal_outputs:
        q = np.where(q < (1 << facc.frac_bits), 0, q)
    exact_zero = _is_zero(last_S) & (q == 0)
    if dp.zero_sign == "positive":
        sign = np.where(q == 0, 0, sign)
    elif exact_zero.any():
        sign = sign.copy()
        sign[exact_zero] = zero_sign(exact_zero)
    out = encode_finite(sign, q, aexp, facc)
    if inf_state.any():
        out = np.where(inf_state != 0, inf_bits(facc, (inf_state < 0).astype(np.int64)), out)
    return out, nan_late


def _add_two(x: _Acc, y: _Acc, frac_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """S, t of x + y aligned to the larger exponent keeping ``frac_bits`` bits plus a sticky bit.

    With ``frac_bits >= precision + 2`` rounding S * 2**t once gives the correctly rounded
    sum (guard/round/sticky argument of IEEE 754 adders); used for a separate addition of c.
    """
    emax = np.maximum(x.aexp, y.aexp)
    t = emax - frac_bits
    S = np.zeros(emax.shape, dtype=np.int64)
    for term in (x, y):
        s = term.aexp - term.frac - t
        r = clamp(-s, 0, 63)
        v = shift(term.mant, s)
        v |= (term.mant & ((np.int64(1) << r) - 1)) != 0  # sticky: any bit shifted out
        S += np.where(term.sign == 1, -v, v)
    return S, t


def _offset(idx, step: int):
    if isinstance(idx, slice):
        return slice(idx.start + step, idx.stop + step)
    return idx + step


def _generic_dot(
    a, b, c, fa: FloatFormat, fb: FloatFormat, facc: FloatFormat, dp: Datapath, scales
) -> np.ndarray:
    """Reference vectorised path on decoded operands (any formats, scales, specials)."""
    rows, K = a.shape
    da, db = decode(a, fa), decode(b, fb)
    dc = decode(c, facc)
    if not dp.subnormal_inputs:
        da, db, dc = (
            _flush_subnormals(da, fa),
            _flush_subnormals(db, fb),
            _flush_subnormals(dc, facc),
        )

    # Exact products: sign, integer significand, alignment exponent (sum of exponent fields).
    psign = da.sign ^ db.sign
    pmant = da.mant * db.mant
    paexp = da.aexp + db.aexp
    pfrac = fa.frac_bits + fb.frac_bits
    width = 2
    special_in = (da.cls >= INF) | (db.cls >= INF)
    k_step = dp.k_step or K
    grouped = scales is not None and dp.block_group is not None
    present = None  # terms that align even when zero (the sub-sums of block_group); None: the nonzero ones
    if scales is not None:
        sa_bits, sb_bits, sfmt = scales
        block = K // sa_bits.shape[1]
        if block * sa_bits.shape[1] != K or sb_bits.shape != sa_bits.shape:
            raise ValueError("scale arrays must have shape (batch, K // block)")
        dsa, dsb = decode(sa_bits, sfmt), decode(sb_bits, sfmt)
        rep = lambda x: np.repeat(x, block, axis=1)  # noqa: E731
        special_in = special_in | rep(dsa.cls == NAN) | rep(dsb.cls == NAN)
    if grouped:
        pmant, psign, paexp, plsb, present, width = _block_sums(pmant, psign, paexp, pfrac, dsa, dsb, sfmt,
                                                                block, dp.block_group)
        k_step //= dp.block_group
    else:
        if scales is not None:
            pmant = pmant * rep(dsa.mant) * rep(dsb.mant)
            paexp = paexp + rep(dsa.aexp) + rep(dsb.aexp)
            psign = psign ^ rep(dsa.sign) ^ rep(dsb.sign)
            pfrac += 2 * sfmt.frac_bits
            width += 2
        plsb = paexp - pfrac

    # Row-wise special values from the inputs.
    any_special = bool(special_in.any()) or bool((dc.cls >= INF).any())
    if any_special:
        nan_row, inf_sign = _input_specials(da, db, dc, da.sign ^ db.sign, scales, K)

    # Pad the terms to a whole number of instruction steps.
    terms = pmant.shape[1]
    if terms % k_step:
        pad = k_step - terms % k_step
        pmant = np.pad(pmant, ((0, 0), (0, pad)))
        psign = np.pad(
            psign, ((0, 0), (0, pad)), constant_values=1
        )  # -0: neutral for the zero sign
        paexp = np.pad(paexp, ((0, 0), (0, pad)), constant_values=ZERO_EXP)
        plsb = np.pad(plsb, ((0, 0), (0, pad)), constant_values=ZERO_EXP)
        if present is not None:
            present = np.pad(present, ((0, 0), (0, pad)))
        terms += pad
    groups = _group_indices(k_step, dp.split_ways, dp.split_stride)

    def group_sum(cols, run):
        return _group_sum(pmant[:, cols], psign[:, cols], paexp[:, cols], plsb[:, cols],
                          None if present is None else present[:, cols], run, dp.align_frac_bits, width,
                          dp.align_floor)

    def zero_sign(sel):
        neg0 = ((pmant[sel] == 0) & (psign[sel] == 1)).all(axis=1)
        return (neg0 & (dc.mant[sel] == 0) & (dc.sign[sel] == 1)).astype(np.int64)

    acc = _Acc(
        dc.sign.astype(np.int64), dc.mant, np.where(dc.mant != 0, dc.aexp, ZERO_EXP), facc.frac_bits
    )
    inf_entering = None
    if any_special and not grouped:
        pinf = ((da.cls == INF) | (db.cls == INF)) & ~nan_row[:, None]
        pinf_sign = np.where(pinf, psign[:, : pinf.shape[1]], -1)  # psign is padded to whole steps
        if terms > pinf_sign.shape[1]:
            pinf_sign = np.pad(pinf_sign, ((0, 0), (0, terms - pinf_sign.shape[1])), constant_values=-1)
        c_inf_sign = np.where(dc.cls == INF, dc.sign, -1)

        def inf_entering(cols):
            # Measured on H100: an infinity from an overflowing stage (mma.sync fp8 -> f16
            # groups) meeting a later infinite input of the other sign gives NaN; inside one
            # fused group an infinite input simply wins.
            if cols is None:
                return c_inf_sign
            signs = pinf_sign[:, cols]
            return np.where((signs == 0).any(axis=1), 0, np.where((signs == 1).any(axis=1), 1, -1))

    out, nan_late = _chain(group_sum, groups, terms, k_step, acc, facc, dp, zero_sign, inf_entering)
    if any_special:
        out = np.where(inf_sign >= 0, inf_bits(facc, inf_sign.clip(0, 1)), out)
        out = np.where(nan_row | nan_late, storage_dtype(facc).type(facc.canonical_nan), out)
    return out


def _is_zero(S: np.ndarray) -> np.ndarray:
    if S.dtype == object:
        return np.array([int(x) == 0 for x in S], dtype=bool)
    return S == 0


def _group_indices(k_step: int, ways: int, stride: int) -> list[np.ndarray]:
    """Product indices of each fused group within one instruction step, in order."""
    k = np.arange(k_step)
    if ways == 1:
        return [k]
    return [k[(k // stride) % ways == g] for g in range(ways)]


def _group_sum(pmant, psign, paexp, plsb, present, acc: _Acc | None, frac_bits, width, floor):
    """Assemble the terms of one fused group (products or block sub-sums, plus the accumulator)
    and sum them."""
    ms, ss, es, ls = [pmant], [psign], [paexp], [plsb]
    ps = [pmant != 0 if present is None else present]
    if acc is not None:
        ms.append(acc.mant[:, None])
        ss.append(acc.sign[:, None])
        es.append(acc.aexp[:, None])
        ls.append(acc.aexp[:, None] - acc.frac)
        ps.append(acc.mant[:, None] != 0)
    cat = (lambda xs: xs[0]) if len(ms) == 1 else (lambda xs: np.concatenate(xs, axis=1))
    return fused_sum(cat(ms), cat(ss), cat(es), cat(ls), frac_bits, width_hint=width, floor=floor,
                     present=None if present is None else cat(ps))


def _block_sums(pmant, psign, paexp, pfrac: int, dsa: Decoded, dsb: Decoded, sfmt: FloatFormat, block: int,
                group: int):
    """The terms of a `block_group` datapath: each run of `group` consecutive products summed
    exactly, times its block's two scales, aligned at the scales' exponent alone (MMA-Sim's
    grouped block-scale model, docs/numerics.md). Returns (mant, sign, aexp, lsb, present,
    width): a sub-sum of products that cancel still aligns (present); one of zero products, or
    under a zero scale, does not. `width` bounds log2(|term| / 2**aexp)."""
    rows, K = pmant.shape
    if K % group or block % group:
        raise ValueError(f"a block_group of {group} products needs K ({K}) and the block ({block}) to be multiples of it")
    n = K // group
    shape = (rows * n, group)
    S, t = fused_sum(pmant.reshape(shape), psign.reshape(shape), paexp.reshape(shape),
                     (paexp - pfrac).reshape(shape), None)
    S, t = S.reshape(rows, n), t.reshape(rows, n)
    nonzero = (pmant != 0).reshape(rows, n, group).any(axis=2)
    which = np.arange(n) * group // block  # the block of each sub-sum
    sa_mant, sb_mant = dsa.mant[:, which], dsb.mant[:, which]
    scale_mant = sa_mant * sb_mant
    mant = np.abs(S) * scale_mant
    sign = (np.asarray(S < 0, dtype=np.int64) ^ dsa.sign[:, which] ^ dsb.sign[:, which]).astype(np.int8)
    present = nonzero & (scale_mant != 0)
    aexp = np.where(present, dsa.aexp[:, which] + dsb.aexp[:, which], ZERO_EXP)
    lsb = t + dsa.aexp[:, which] + dsb.aexp[:, which] - 2 * sfmt.frac_bits
    if mant.dtype != object and (mant != 0).any():
        width = int(np.max(np.where(mant != 0, np.frexp(mant.astype(np.float64))[1] + lsb - aexp, 0)))
    else:
        width = 64
    return mant, sign, aexp, lsb, present, max(width, 2)


def _note_overflow(state: np.ndarray, r, inf_seen: np.ndarray) -> np.ndarray:
    """Rows whose rounding overflowed go to infinity whatever the rounding: measured on H100
    (mma.sync and wgmma, bf16/tf32 -> f32 with truncated groups give Inf, not the largest
    finite value IEEE 754 RZ would give; reports/numerics-h100-silicon/h100-silicon.json)."""
    if not r.overflow.any():
        return state
    new = np.where(r.sign == 1, -1, 1).astype(np.int8)
    return np.where((state == 0) & ~inf_seen & r.overflow, new, state)


def _input_specials(da, db, dc, psign, scales, K):
    """Per row: NaN flag, and the sign of an infinite result (-1 if none)."""
    pnan = (da.cls == NAN) | (db.cls == NAN)
    pnan |= ((da.cls == INF) & (db.cls == 0)) | ((da.cls == 0) & (db.cls == INF))
    pinf = ((da.cls == INF) | (db.cls == INF)) & ~pnan
    if scales is not None:
        sa_bits, sb_bits, sfmt = scales
        block = K // sa_bits.shape[1]
        dsa, dsb = decode(sa_bits, sfmt), decode(sb_bits, sfmt)
        pnan |= np.repeat((dsa.cls == NAN) | (dsb.cls == NAN), block, axis=1)
    pos = (pinf & (psign == 0)).any(axis=1) | ((dc.cls == INF) & (dc.sign == 0))
    neg = (pinf & (psign == 1)).any(axis=1) | ((dc.cls == INF) & (dc.sign == 1))
    nan_row = pnan.any(axis=1) | (dc.cls == NAN) | (pos & neg)
    inf_sign = np.where(pos, 0, np.where(neg, 1, -1))
    return nan_row, inf_sign


__all__ = ["inner_product"]
