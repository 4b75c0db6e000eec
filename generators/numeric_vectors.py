"""Discriminating inner-product vectors: raw operands that tell tensor-core datapaths apart.

Random vectors, like the recorded ones, pin a datapath's parameters down only
statistically.  Each family here is built so that one feature of the datapath decides the
result, in the spirit of the feature tests of Fasi, Higham, Mikaitis and Pranesh,
"Numerical behavior of NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330 (2021), and of
Khattak and Mikaitis, arXiv:2512.07004 (2025).  Notation: a product's *exponent* ``v`` is
the exponent of the leading bit of ``|a|`` plus that of ``|b|`` (so ``|a*b|`` lies in
[2**v, 2**(v+2))); ``T`` is a row's top product exponent; ``p`` the accumulator's precision
(24 for f32, 11 for f16); a *tie* is half an accumulator ulp at 2**T.

==============  =======================================================================
family          floating-point construction
==============  =======================================================================
uniform_bits    every code equally likely (NaN, Inf, zeros, subnormals at their rates)
random_finite   finite values within 2**+-4 and 5% zeros, c likewise (like the recorded
                vectors; the distribution of ``tcgen05_conformance.oracles.numerics.sampling.random_bits``)
alignment       half the rows: D = 2**T (or 2**T + ulp plus a tie), then a ladder of
                powers of two from 2**(T-d), d = 20 .. 23, whose sum above a cut
                alternates between negative and zero binade by binade, so each alignment
                width within the ladder gives another result than its neighbours (RZ
                sees it with D, RNE with the tie); the other half: a dominant product
                at T, a tie term on half the rows, 1 .. K-2 products at T-21 .. T-29
                (of the other sign on 2/3 of the rows without a tie), c zero, at
                T-21 .. T-29 or a power of two at T+1 .. T+3
carry           products of one sign with the two top fraction bits set at T .. T-2,
                c zero, of the sum's size or 20-30 binades below: the sum, about K/2
                times the largest product, carries log2(K)-1 bits out of its top
rounding        D (A's significand times a power of two) at T, plus, in units of a tie
                (2**(T-p)): just above a tie, just below the grid point one ulp up, a
                tie above an odd value (RZ and RNE differ on these three), a tie above
                D, just below a tie, exactly one ulp up; "just" is 2**-j of a tie, j = 1
                on 3/4 of the rows, else 2 .. 16.  Half the rows hold these terms in
                one product or in c (no grouping can part them), the others in one
                product each or, each on 1/3 of the rows, in c (the stage adding c)
normalisation   a product and its negation with A's significand 1 .. 2**(f//2) units in
                the last place apart (f: A's fraction bits), products at T-f .. T-f-20,
                c likewise or zero: the leading bits cancel, the result is renormalised
subnormal       (1/3 each) operands spread over [emin-f, emin+2]; products aimed at the
                accumulator's subnormal range; products cancelling exactly or all zero;
                c subnormal (1/2), the smallest normal (1/4) or zero
cancellation    pairs (x*y, -x*y) at T .. T-3, 0-2 products at T-12 .. T-32, c zero, at
                T-16 .. T-40 or a power of two at T-20 .. T-30: a small exact tail far
                below the largest product
overflow        products with the two top fraction bits set, log2(K)+3 binades up to the
                accumulator's top (where the inputs reach), of one sign, random signs,
                or half of each sign (intermediate overflow); c zero, +-the largest
                finite value, or near it with the products' sign
special         NaN or +-Inf operands, 0*Inf, +Inf with -Inf, Inf or NaN c, Inf c against
                an opposite Inf product, all-+0 or all--0 products with a signed zero c,
                x*y - x*y with a signed zero c (each where the formats have the value,
                else through c)
==============  =======================================================================

Integer kinds (s8/u8 -> s32) have no alignment, rounding or special values; their
families are the analogues that stress an exact 32-bit adder:

==============  =======================================================================
family          integer construction
==============  =======================================================================
uniform_bits    every code; c any int32
random_finite   operands in [-15, 15] (u8: [0, 15]); c in [-2**15, 2**15]
alignment       one extreme product, the others in [-3, 3]; c +-2**20 .. 2**30: small
                terms beside a large one
carry           extreme products of one sign (e.g. 255*255 or -128*127) and c of that
                sign: carries through every bit of the products
rounding        c puts the exact sum on, or 1-2 away from, 2**31-1 or -2**31 (the wrap /
                saturation boundary)
normalisation   c cancels the products' sum up to a remainder in [-16, 16]
subnormal       operands in {-1, 0, 1}, c in [-2, 2] (the smallest magnitudes)
cancellation    pairs (x*y, -x*y) (negating the signed operand), 0-2 more products,
                c in [-16, 16]; u8 x u8 (no negative products): as normalisation
overflow        extreme products of one sign and c within reach of the int32 limit: the
                exact sum leaves the int32 range (wraps or saturates)
special         operands among the extremes, 0 and +-1; c among INT_MIN, INT_MAX, 0, +-1
==============  =======================================================================

Roles are built in fixed columns and then placed at random positions along K (one random
permutation per block of rows, at most 256 blocks), so every role meets every fused group.
Everything is vectorised over whole batches, from bulk random words
(``BitGenerator.random_raw``): about 1.2 million vectors per second for f16 K=16.

Only number formats (``tcgen05_conformance.core.formats``) are needed to draw them; how often each
family exposes a one-parameter change of a datapath is measured through the numeric model by
``tcgen05_conformance.numerics.catch_rates`` (``tcgen05-conformance numerics catch-rates`` prints
the tables in docs/numerics.md).

Why one module of 900 lines: the families share the row arithmetic (top exponents, ties,
ladders, the scale draws) and the table above; split, each family would import most of the
others' helpers, and the catch-rate measurement walks them as one registry (`FAMILIES`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from tcgen05_conformance.core.formats import FloatFormat, IntFormat, get_format, storage_dtype

FAMILIES: tuple[str, ...] = (
    "uniform_bits",
    "random_finite",
    "alignment",
    "carry",
    "rounding",
    "normalisation",
    "subnormal",
    "cancellation",
    "overflow",
    "special",
)

#: Formats that may be mixed as (A, B) in one instruction (PTX kind::f8f6f4, kind::i8).
_NARROW = frozenset({"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"})
_INTS = frozenset({"s8", "u8"})
#: Exponent spread and zero rate of random_finite (the recorded inputs lie within 2**+-4).
_SPREAD, _ZEROS = 4, 0.05
#: Most distinct placements of the roles along K per call.
_PLACEMENT_BLOCKS = 256


# ------------------------------------------------------------------------------ randomness


class _Rand:
    """Uniform draws from bulk random words of one Generator's bit generator.

    ``Generator.integers`` costs ~30 ns per int64; slicing ``random_raw`` words costs
    ~2 ns per element, which is what makes 10**7 vectors per format affordable.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def words(self, dtype, shape) -> np.ndarray:
        """Uniform random words of an unsigned integer dtype."""
        dt = np.dtype(dtype)
        size = math.prod(shape)
        raw = self.rng.bit_generator.random_raw(-(-size * dt.itemsize // 8))
        return raw.view(dt)[:size].reshape(shape)

    def below(self, m, shape, bound: int = 1 << 10) -> np.ndarray:
        """Integers in [0, m) (int16) for 1 <= m <= bound <= 2**10 (m an int or an array).

        Each value has probability within 9.4% of 1/m (bound <= 32: 8 random bits) or
        within 2% (16 random bits).
        """
        if bound <= 32:
            u = self.words(np.uint8, shape).astype(np.uint16)
            return ((u * np.asarray(m, np.uint16)) >> 8).view(np.int16)
        u = self.words(np.uint16, shape).astype(np.uint32)
        return ((u * np.asarray(m, np.uint32)) >> 16).astype(np.int16)

    def between(self, lo: int, hi: int, shape) -> np.ndarray:
        """Integers in [lo, hi] (int16)."""
        return np.int16(lo) + self.below(hi - lo + 1, shape, hi - lo + 1)

    def chance(self, p: float, shape) -> np.ndarray:
        return self.words(np.uint8, shape) < round(p * 256)

    def choice(self, weights, shape) -> np.ndarray:
        """Category indices drawn with the given relative weights."""
        edges = np.cumsum(weights, dtype=np.float64)
        edges = np.round(edges[:-1] / edges[-1] * 65536)
        return np.searchsorted(edges, self.words(np.uint16, shape), side="right")


# ------------------------------------------------------------------------------ encoding


def _lo(f: FloatFormat) -> int:
    """Exponent of the smallest subnormal."""
    return f.emin - f.frac_bits


def _sign_mask(f: FloatFormat) -> int:
    return 1 << (f.exp_bits + f.frac_bits + f.field_shift)


def _frac_mask(f: FloatFormat) -> int:
    return ((1 << f.frac_bits) - 1) << f.field_shift


def _codes(f: FloatFormat, w: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Codes whose leading bit has exponent ``e`` (in [emin - fb, emax]), taking the sign
    and the fraction bits from the random words ``w`` (container dtype).

    Below ``emin`` the significand 1.fraction is shifted into a subnormal (low bits
    dropped).  The E4M3 NaN pattern S.1111.111 becomes the largest finite value.
    """
    dt = storage_dtype(f)
    e = np.asarray(e, np.int16)
    if e.size == 0 or (e.min() >= f.emin and (f.specials != "fn" or e.max() < f.emax)):
        shift = dt.type(f.frac_bits + f.field_shift)
        return (w & dt.type(_sign_mask(f) | _frac_mask(f))) | ((e + np.int16(f.bias)).astype(dt) << shift)
    table = _code_table(f.name)
    it = np.uint16 if table.size <= 1 << 16 else np.int32
    frac = ((w & dt.type(_frac_mask(f))) >> dt.type(f.field_shift)).astype(it)
    return table.take(((e - np.int16(_lo(f))).astype(it) << it(f.frac_bits)) | frac) | (w & dt.type(_sign_mask(f)))


@lru_cache(maxsize=None)
def _splits(name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    """For each product exponent v from the smallest reachable up: the smallest exponent of a
    and the number of exponents of a that reach v with b in range (int16, uint16), using
    normal operands only wherever they reach v."""
    fa, fb = get_format(name_a), get_format(name_b)
    v = np.arange(_lo(fa) + _lo(fb), fa.emax + fb.emax + 1)
    normal = v >= fa.emin + fb.emin
    lo = np.maximum(v - fb.emax, np.where(normal, fa.emin, _lo(fa)))
    hi = np.minimum(v - np.where(normal, fb.emin, _lo(fb)), fa.emax)
    return lo.astype(np.int16), (hi - lo + 1).astype(np.uint16)


@lru_cache(maxsize=None)
def _code_table(name: str) -> np.ndarray:
    """Unsigned codes of (1 + frac / 2**fb) * 2**e at index ((e - (emin - fb)) << fb) | frac."""
    f = get_format(name)
    e = np.repeat(np.arange(_lo(f), f.emax + 1), 1 << f.frac_bits)
    frac = np.tile(np.arange(1 << f.frac_bits), f.emax - _lo(f) + 1)
    return _value(f, 0, e, frac)


def _value(f: FloatFormat, sign, e, low) -> np.ndarray:
    """Codes of +-(1 + low / 2**fb) * 2**e, ``e`` clipped to [emin - fb, emax] (any dtype)."""
    fb = f.frac_bits
    e = np.clip(np.asarray(e, np.int64), _lo(f), f.emax)
    low = np.asarray(low, np.int64)
    sub = e < f.emin
    frac = np.where(sub, ((1 << fb) | low) >> np.where(sub, f.emin - e, 0), low)
    efield = np.where(sub, 0, e + f.bias)
    if f.specials == "fn":
        frac = np.where((e == f.emax) & (frac == (1 << fb) - 1), frac - 1, frac)
    code = ((efield << fb) | frac) << f.field_shift
    return (code | np.asarray(sign, np.int64) * _sign_mask(f)).astype(storage_dtype(f))


def _zero(f: FloatFormat, sign) -> np.ndarray:
    return (np.asarray(sign, np.int64) * _sign_mask(f)).astype(storage_dtype(f))


def _inf(f: FloatFormat, sign) -> np.ndarray:
    top = ((1 << f.exp_bits) - 1) << (f.frac_bits + f.field_shift)
    return (top | np.asarray(sign, np.int64) * _sign_mask(f)).astype(storage_dtype(f))


def _nan(f: FloatFormat, sign, payload) -> np.ndarray:
    """A NaN of ``f`` with a nonzero fraction taken from ``payload`` (E4M3: S.1111.111)."""
    mask = (1 << f.frac_bits) - 1
    frac = mask if f.specials == "fn" else np.maximum(np.asarray(payload, np.int64) & mask, 1)
    return (_inf(f, sign).astype(np.int64) | (frac << f.field_shift)).astype(storage_dtype(f))


# ------------------------------------------------------------------------------ one call


@dataclass(frozen=True)
class _Job:
    """One call: resolved formats, shape and the random source; helpers build operands."""

    fa: FloatFormat | IntFormat
    fb: FloatFormat | IntFormat
    fc: FloatFormat | IntFormat
    k: int
    n: int
    r: _Rand

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.k)

    @property
    def col(self) -> np.ndarray:
        """Column (role) index, for per-row role masks."""
        return np.arange(self.k, dtype=np.int16)

    @property
    def log2k(self) -> int:
        return max(self.k - 1, 1).bit_length()

    def sub(self, n: int) -> "_Job":
        return dataclasses.replace(self, n=n)

    def words(self, f, shape=None) -> np.ndarray:
        return self.r.words(storage_dtype(f), shape or self.shape)

    def signs(self, shape=None) -> np.ndarray:
        return self.r.words(np.uint8, shape or self.shape) & np.uint8(1)

    def top(self, below: int, above: int) -> np.ndarray:
        """Row exponents T, shape (n, 1), with normal products down to T-below and room for
        2**above above T in the accumulator.  Where the formats cannot span that (FP6, FP4,
        narrow accumulators), T is the highest allowed value and lower terms get clipped."""
        fa, fb, fc = self.fa, self.fb, self.fc
        lo = max(fa.emin + fb.emin, fc.emin) + below
        hi = min(fa.emax + fb.emax, fc.emax - above)
        if lo > hi:
            return np.full((self.n, 1), hi, np.int16)
        return self.r.between(lo, hi, (self.n, 1))

    def pair(self, v, wa, wb, sign=None) -> tuple[np.ndarray, np.ndarray]:
        """Operands a, b with product exponent ``v`` (clipped to what the formats reach).

        ``v`` is split uniformly between the operands, with normal operands wherever they
        reach it.  Signs and fraction bits come from the random words ``wa``, ``wb``; if
        ``sign`` is given (0/1, broadcastable) b's sign is set so that the product has it.
        """
        fa, fb = self.fa, self.fb
        v_lo, v_hi = _lo(fa) + _lo(fb), fa.emax + fb.emax
        v = np.clip(np.asarray(v, np.int16), v_lo, v_hi)
        first, count = _splits(fa.name, fb.name)
        index = (v - np.int16(v_lo)).view(np.uint16)
        ea = first.take(index) + self.r.below(count.take(index), v.shape, fa.emax - _lo(fa) + 1)
        a, b = _codes(fa, wa, ea), _codes(fb, wb, v - ea)
        if sign is not None:
            sa = (a >> np.uint8(fa.exp_bits + fa.frac_bits + fa.field_shift)) & 1
            sb = (sa ^ np.asarray(sign, np.uint8)).astype(b.dtype) << (fb.exp_bits + fb.frac_bits + fb.field_shift)
            b = (b & b.dtype.type(_sign_mask(fb) - 1)) | sb
        return a, b

    def zeros_where(self, a: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """a with +-0 (the word's sign kept) wherever ``keep`` is False."""
        return np.where(keep, a, a & a.dtype.type(_sign_mask(self.fa)))

    def acc(self, sign, e, low_bits: int | None = None) -> np.ndarray:
        """c = +-2**e times a random significand with ``low_bits`` fraction bits (all by default)."""
        fc = self.fc
        nb = fc.frac_bits if low_bits is None else min(low_bits, fc.frac_bits)
        low = self.r.words(np.uint32, (self.n,)).astype(np.int64) >> (32 - nb) << (fc.frac_bits - nb)
        return _value(fc, np.ravel(sign), np.ravel(e), low)

    def acc_zero(self) -> np.ndarray:
        return _zero(self.fc, self.signs((self.n,)))

    def pick_c(self, weights, *options: np.ndarray) -> np.ndarray:
        """Per row, one of the candidate c arrays, drawn with the given weights."""
        return np.choose(self.r.choice(weights, (self.n,)), options)


def _by_variant(job: _Job, weights, builders) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows split at random between constructions (each built on its own rows only)."""
    choice = job.r.choice(weights, (job.n,))
    out = [np.empty(job.shape, storage_dtype(job.fa)), np.empty(job.shape, storage_dtype(job.fb)),
           np.empty(job.n, storage_dtype(job.fc))]
    for i, build in enumerate(builders):
        rows = np.flatnonzero(choice == i)
        for x, part in zip(out, build(job.sub(rows.size))):
            x[rows] = part
    return tuple(out)


def _place(job: _Job, a: np.ndarray, b: np.ndarray) -> None:
    """Permute the K positions in place, one random permutation per block of rows."""
    blocks = min(job.n, _PLACEMENT_BLOCKS)
    if job.k < 2 or blocks == 0:
        return
    perms = job.r.rng.permuted(np.tile(np.arange(job.k), (blocks, 1)), axis=1)
    edges = np.linspace(0, job.n, blocks + 1).astype(np.int64)
    columns = perms[np.repeat(np.arange(blocks), np.diff(edges))]  # each row's block's permutation
    a[:] = np.take_along_axis(a, columns, axis=1)
    b[:] = np.take_along_axis(b, columns, axis=1)


# ------------------------------------------------------------------------------ float families


def _moderate(job: _Job, f: FloatFormat, shape) -> np.ndarray:
    """The distribution of ``random_bits(fmt, shape, rng, spread=4)`` (finite, exponent field
    bias +-4 clipped, 5% zeros), drawn from bulk words: that function's int64 draws take
    ~1 s per 10**7 codes."""
    dt = storage_dtype(f)
    top = (1 << f.exp_bits) - 1 - (1 if f.specials == "ieee" else 0)
    efield = np.clip(np.int16(f.bias) + job.r.between(-_SPREAD, _SPREAD, shape), 0, top).astype(dt)
    x = (job.words(f, shape) & dt.type(_sign_mask(f) | _frac_mask(f))) | (efield << dt.type(f.frac_bits + f.field_shift))
    if f.specials == "fn":
        nan = dt.type(_sign_mask(f) - 1)
        x = np.where(x & nan == nan, x - dt.type(1), x)
    return np.where(job.r.chance(_ZEROS, shape), x & dt.type(_sign_mask(f)), x)


def _uniform_bits(job: _Job):
    """Every code of each format equally likely."""
    out = []
    for f, shape in ((job.fa, job.shape), (job.fb, job.shape), (job.fc, (job.n,))):
        mask = ((1 << (int(f.signed) + f.exp_bits + f.frac_bits)) - 1) << f.field_shift
        out.append(job.words(f, shape) & storage_dtype(f).type(mask))
    return tuple(out)


def _random_finite(job: _Job):
    """Moderate finite values for a, b and c (see :func:`_moderate`)."""
    return _moderate(job, job.fa, job.shape), _moderate(job, job.fb, job.shape), _moderate(job, job.fc, (job.n,))


def _ladder(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Levels and signs (1: against the dominant term) of the ladder in columns 3 .. k-1.

    Levels go down one binade each; their terms are -x, +x/2 +x/2, -x/4, +x/8 +x/8, ...
    (x = 2**(T-d)), so the sum of the levels above a cut alternates between negative and
    zero as the cut moves down one binade at a time.
    """
    i = np.arange(max(k - 3, 0))
    level = (i // 3) * 2 + (i % 3 != 0)
    return level.astype(np.int16), (i % 3 == 0).astype(np.uint8)


def _alignment(job: _Job):
    """A dominant term and small ones below it: how many bits survive alignment decides."""
    fa, fb, fc = job.fa, job.fb, job.fc
    p = fc.precision

    def ladder(j: _Job):
        """D = 2**T (for RZ: D, or less) or D = 2**T + ulp plus a tie (for RNE: up to even,
        or down), then a ladder from 2**(T-d): under the rounding its D suits, every
        alignment width F within the ladder (d <= F <= d + its last level) gives another
        result than F - 1 and F + 1.  d is 20 .. 23 and at least 26 minus the ladder's
        depth, so that short ladders (small K) still reach a width of 26."""
        n, k, r = j.n, j.k, j.r
        level, against = _ladder(k)
        last = int(level[-1]) if level.size else 0
        T = j.top(24 + last, 2)
        odd_tie = r.chance(0.5, (n, 1))
        d = r.between(min(23, max(20, 26 - last)), 23, (n, 1))
        v = np.concatenate([T, T - p + 1, T - p, T - d - level], axis=1)[:, :k]
        s_dom = j.signs((n, 1))
        sign = np.concatenate([s_dom, s_dom, s_dom, s_dom ^ against], axis=1)[:, :k]
        wa, wb = j.words(fa) & storage_dtype(fa).type(_sign_mask(fa)), j.words(fb) & storage_dtype(fb).type(_sign_mask(fb))
        a, b = j.pair(v, wa, wb, sign)
        a[:, 1:3] = np.where(odd_tie, a[:, 1:3], a[:, 1:3] & a.dtype.type(_sign_mask(fa)))
        return a, b, j.acc_zero()

    def scatter(j: _Job):
        """A dominant product (a power of two 3/4 of the time) at T, on half the rows a tie
        term, then 1 .. K-2 products at T-21 .. T-29: of the other sign on 2/3 of the rows
        without a tie (the truncated sum then decides RZ), else of random signs; c zero,
        tiny, or a power of two above T (then the term aligning everything)."""
        n, k, r = j.n, j.k, j.r
        T = j.top(32, 4)
        c_kind = r.choice([2, 1, 1], (n,))
        up = np.where(c_kind == 2, r.between(1, 3, (n,)), 0).astype(np.int16)[:, None]
        tie = r.chance(0.5, (n, 1))
        s_dom = j.signs((n, 1))
        sign = np.where(~tie & r.chance(2 / 3, (n, 1)), 1 - s_dom, j.signs())
        v = T - r.between(21, 29, j.shape)
        v[:, :1] = T
        sign[:, :1] = s_dom
        wa, wb = j.words(fa), j.words(fb)
        wa[:, :1] &= np.where(r.chance(0.75, (n, 1)), _sign_mask(fa), _sign_mask(fa) | _frac_mask(fa)).astype(wa.dtype)
        wb[:, :1] &= wb.dtype.type(_sign_mask(fb))
        if k > 1:
            v[:, 1:2] = np.where(tie, T + up - p, v[:, 1:2])
            sign[:, 1:2] = np.where(tie, s_dom, sign[:, 1:2])
            wa[:, 1:2] = np.where(tie, wa[:, 1:2] & wa.dtype.type(_sign_mask(fa)), wa[:, 1:2])
            wb[:, 1:2] = np.where(tie, wb[:, 1:2] & wb.dtype.type(_sign_mask(fb)), wb[:, 1:2])
        a, b = j.pair(v, wa, wb, sign)
        a = j.zeros_where(a, j.col <= r.between(1, max(k - 2, 1), (n, 1)) + tie)
        c = np.choose(
            c_kind,
            (j.acc_zero(), j.acc(j.signs((n,)), T - r.between(21, 29, (n, 1))), _value(fc, s_dom[:, 0], (T + up)[:, 0], 0)),
        )
        return a, b, c

    return _by_variant(job, [1, 1], [ladder, scatter])


def _carry(job: _Job):
    """Products of one sign with significands near 2 whose sum carries out of the top."""
    n, r, fa, fb, fc = job.n, job.r, job.fa, job.fb, job.fc
    T = job.top(2, job.log2k + 6)
    s = job.signs((n, 1))
    near_max = lambda f, w: w | w.dtype.type(_frac_mask(f) & ~(_frac_mask(f) >> 2))  # noqa: E731
    a, b = job.pair(T - r.below(3, job.shape, 3), near_max(fa, job.words(fa)), near_max(fb, job.words(fb)), s)
    high = ((1 << fc.frac_bits) - 1) & ~(((1 << fc.frac_bits) - 1) >> 2)
    low = high | (r.words(np.uint32, (n,)).astype(np.int64) & (((1 << fc.frac_bits) - 1) >> 2))
    c = job.pick_c(
        [1, 1, 1],
        job.acc_zero(),
        _value(fc, s[:, 0], (T + job.log2k + r.below(3, (n, 1), 3))[:, 0], low),
        _value(fc, s[:, 0], (T - r.between(20, 30, (n, 1)))[:, 0], low),
    )
    return a, b, c


#: Rounding family cases: (ulp terms, tie terms, offset direction), offset +1 = away from
#: the dominant term D, -1 = towards it, 0 = none; relative weight.  RZ and RNE differ on
#: the first three (the offset survives alignment) and agree on the others.
_ROUNDING_CASES = (
    ((0, 1, +1), 4),  # just above a tie
    ((1, 0, -1), 4),  # just below a grid point one ulp above D
    ((1, 1, 0), 3),  # a tie above an odd value: to even goes up
    ((0, 1, 0), 1),  # a tie above D (even): to even goes down
    ((0, 1, -1), 1),  # just below a tie
    ((1, 0, 0), 1),  # exactly on a grid point
)


def _split_units(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|u| = 2**lead * (1 + rest / 2**lead) for nonzero integers: (lead, rest)."""
    mag = np.abs(u)
    lead = np.frexp(mag.astype(np.float64))[1].astype(np.int64) - 1
    return lead, mag - (np.int64(1) << np.maximum(lead, 0))


def _at(f: FloatFormat, lead: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """Fraction field holding ``rest`` (an integer below 2**lead) under a leading bit at ``lead``."""
    shift = f.frac_bits - lead
    return np.where(shift >= 0, rest << np.maximum(shift, 0), rest >> np.maximum(-shift, 0))


def _rounding(job: _Job):
    """Exact sums on, just above or just below a rounding boundary (:data:`_ROUNDING_CASES`)."""
    n, k, r, fa, fb, fc = job.n, job.k, job.r, job.fa, job.fb, job.fc
    p = fc.precision
    T = job.top(p + 18, 2)[:, 0]
    cases = np.array([case for case, _ in _ROUNDING_CASES], np.int64)[r.choice([w for _, w in _ROUNDING_CASES], (n,))]
    # in units of 2**-j of a tie (2**(T-p)): the ulp term 2**(j+1), the tie 2**j, the offset 1;
    # j = 1 on 3/4 of the rows (the offset survives any alignment wider than p), else 2 .. 16
    j = np.where(r.chance(0.75, (n,)), 1, r.between(2, 16, (n,))).astype(np.int64)
    units = np.stack([cases[:, 0] << (j + 1), cases[:, 1] << j, cases[:, 2]], axis=1)
    # half the rows combine the terms into one (a product or c: no grouping can part them),
    # where A's significand holds their sum; otherwise each term is a product or, on 1/3 of
    # the rows, sits in c
    total = units.sum(axis=1)
    combined = r.chance(0.5, (n,)) & (_split_units(total)[0] < fa.precision)
    in_c = np.where(combined[:, None], r.chance(1 / 3, (n, 1)), r.chance(1 / 3, (n, 3))) & (units != 0)
    c_units = (units * in_c).sum(axis=1)
    if (wide := ~combined & (np.abs(c_units) >= 1 << p)).any():  # keep c exact: the offset leaves it
        in_c[:, 2] &= ~wide
        c_units = (units * in_c).sum(axis=1)
    s_dom = job.signs((n,))
    lead, rest = _split_units(c_units)
    c = np.where(c_units == 0, job.acc_zero(), _value(fc, s_dom ^ (c_units < 0), T - p - j + lead, _at(fc, lead, rest)))
    # columns 0 .. 3: D (a's significand times a power of two), then the terms not in c
    prod = np.where(in_c, 0, units)
    prod = np.where(combined[:, None], np.stack([prod.sum(axis=1), 0 * j, 0 * j], axis=1), prod)
    lead, rest = _split_units(prod)
    v = np.concatenate([T[:, None], (T - p - j)[:, None] + lead], axis=1)
    sign = np.concatenate([s_dom[:, None], s_dom[:, None] ^ (prod < 0)], axis=1)
    wa, wb = job.words(fa, (n, 4)), job.words(fb, (n, 4))
    wa[:, 1:] = (wa[:, 1:] & wa.dtype.type(_sign_mask(fa))) | (_at(fa, lead, rest) << fa.field_shift).astype(wa.dtype)
    wb &= wb.dtype.type(_sign_mask(fb))
    a4, b4 = job.pair(v, wa, wb, sign)
    a4[:, 1:] = np.where(prod != 0, a4[:, 1:], a4[:, 1:] & a4.dtype.type(_sign_mask(fa)))
    a = job.words(fa) & storage_dtype(fa).type(_sign_mask(fa))  # +-0 elsewhere ...
    b = _codes(fb, job.words(fb), np.zeros(job.shape, np.int16))  # ... times +-1.x
    m = min(k, 4)
    a[:, :m], b[:, :m] = a4[:, :m], b4[:, :m]
    return a, b, c


def _normalisation(job: _Job):
    """Two products cancelling in their leading bits, so the result is renormalised."""
    n, k, r, fa, fb = job.n, job.k, job.r, job.fa, job.fb
    f = fa.frac_bits
    T = job.top(f + 22, job.log2k + 4)
    v = T - f - r.below(21, job.shape)
    v[:, :2] = T
    a, b = job.pair(v, job.words(fa), job.words(fb))
    if k > 1:
        # column 1: a0 with its fraction moved by j units, negated: a0*b0 + a1*b0 = +-j ulp(a0)*b0
        unit = 1 << fa.field_shift
        frac = (a[:, 0] & a.dtype.type(_frac_mask(fa))).astype(np.int64)
        j = (1 + r.below(1 << (f // 2), (n,))).astype(np.int64) * unit
        moved = np.where(frac >= j, frac - j, frac + j)
        a[:, 1] = ((a[:, 0].astype(np.int64) ^ frac ^ moved) ^ _sign_mask(fa)).astype(a.dtype)
        b[:, 1] = b[:, 0]
    a = job.zeros_where(a, job.col < 2 + r.below(k, (n, 1), k))
    c = job.pick_c([1, 2], job.acc_zero(), job.acc(job.signs((n,)), T - f - r.below(21, (n, 1))))
    return a, b, c


def _negate_pairs(job: _Job, a: np.ndarray, b: np.ndarray, m) -> tuple[np.ndarray, np.ndarray]:
    """Columns 2i+1 := -(column 2i) for i < m (per row), negating a or b at random."""
    half = job.k // 2
    if half == 0:
        return a, b
    ea, eb, oa, ob = a[:, 0 : 2 * half : 2], b[:, 0 : 2 * half : 2], a[:, 1::2][:, :half], b[:, 1::2][:, :half]
    flip = job.r.chance(0.5, (job.n, half))
    na = np.where(flip, ea ^ a.dtype.type(_sign_mask(job.fa)), ea)
    nb = np.where(flip, eb, eb ^ b.dtype.type(_sign_mask(job.fb)))
    paired = np.arange(half, dtype=np.int16) < m
    oa[...] = np.where(paired, na, oa)
    ob[...] = np.where(paired, nb, ob)
    return a, b


def _cancellation(job: _Job):
    """Pairs cancelling exactly, leaving a small tail and c far below the largest product."""
    n, k, r = job.n, job.k, job.r
    T = job.top(45, job.log2k + 4)
    col = job.col
    m = r.between(1, max(k // 2, 1), (n, 1)) if k >= 2 else np.zeros((n, 1), np.int16)
    tails = r.below(3, (n, 1), 3)
    v = np.where(col < 2 * m, T - r.below(4, job.shape, 4), T - r.between(12, 32, job.shape))
    a, b = job.pair(v, job.words(job.fa), job.words(job.fb))
    a, b = _negate_pairs(job, a, b, m)
    a = job.zeros_where(a, col < 2 * m + tails)
    c = job.pick_c(
        [1, 2, 1],
        job.acc_zero(),
        job.acc(job.signs((n,)), T - r.between(16, 40, (n, 1))),
        job.acc(job.signs((n,)), T - r.between(20, 30, (n, 1)), 0),
    )
    return a, b, c


def _subnormal(job: _Job):
    """Subnormal operands, results in the accumulator's subnormal range, subnormal c."""
    fa, fb, fc = job.fa, job.fb, job.fc

    def c_small(j: _Job) -> np.ndarray:
        sub = _value(fc, j.signs((j.n,)), fc.emin - 1 - j.r.below(fc.frac_bits, (j.n,)), j.r.words(np.uint32, (j.n,)) >> (32 - fc.frac_bits))
        return j.pick_c([2, 1, 1], sub, _value(fc, j.signs((j.n,)), np.full(j.n, fc.emin), 0), j.acc_zero())

    def inputs(j: _Job):  # operands over [emin - fb, emin + 2]: mostly subnormal
        ea = j.r.between(_lo(fa), fa.emin + 2, j.shape)
        eb = j.r.between(_lo(fb), fb.emin + 2, j.shape)
        return _codes(fa, j.words(fa), ea), _codes(fb, j.words(fb), eb), c_small(j)

    def outputs(j: _Job):  # products in the accumulator's subnormal range, as far as reachable
        a, b = j.pair(fc.emin - 2 - j.r.below(fc.precision, j.shape), j.words(fa), j.words(fb))
        return a, b, c_small(j)

    def cancelled(j: _Job):  # moderate products cancelling exactly, or all zero: the result is c
        a, b = j.pair(np.zeros(j.shape, np.int16) + j.r.between(-4, 4, (j.n, 1)), j.words(fa), j.words(fb))
        a, b = _negate_pairs(j, a, b, j.k // 2)
        pairs = np.where(j.r.chance(0.5, (j.n, 1)), 2 * (j.k // 2), 0)
        return j.zeros_where(a, j.col < pairs), b, c_small(j)

    return _by_variant(job, [1, 1, 1], [inputs, outputs, cancelled])


def _overflow(job: _Job):
    """Products and sums at and past the accumulator's largest finite value."""
    n, k, r, fa, fb, fc = job.n, job.k, job.r, job.fa, job.fb, job.fc
    t_max = min(fa.emax + fb.emax, fc.emax + 1)
    T = np.int16(t_max) - r.below(job.log2k + 2, (n, 1), job.log2k + 2)
    s = job.signs((n, 1))
    pattern = r.choice([1, 1, 1], (n, 1))  # one sign, random signs, half and half
    sign = np.where(pattern == 0, s, np.where(pattern == 1, job.signs(), s ^ (job.col >= k // 2)))
    near_max = lambda f, w: w | w.dtype.type(_frac_mask(f) & ~(_frac_mask(f) >> 2))  # noqa: E731
    a, b = job.pair(T - r.below(2, job.shape, 2), near_max(fa, job.words(fa)), near_max(fb, job.words(fb)), sign)
    c_max = _value(fc, job.signs((n,)), np.full(n, fc.emax), (1 << fc.frac_bits) - 1)
    c = job.pick_c([1, 1, 1], job.acc_zero(), c_max, job.acc(s[:, 0], fc.emax - r.below(3, (n, 1), 3)))
    return a, b, c


def _special(job: _Job):
    """Random finite rows with one special placement each (NaN, Inf, 0*Inf, Inf-Inf, signed zeros)."""
    n, k, r, fa, fb, fc = job.n, job.k, job.r, job.fa, job.fb, job.fc
    a, b, c = _random_finite(job)
    inf_a, inf_b = fa.specials == "ieee", fb.specials == "ieee"
    scenarios = ["c_inf", "c_nan", "zeros"] + (["cancel_to_zero"] if k >= 2 else [])
    scenarios += ["nan_a"] if fa.specials in ("ieee", "fn") else []
    scenarios += ["nan_b"] if fb.specials in ("ieee", "fn") else []
    if inf_a or inf_b:
        scenarios += ["inf", "inf_times_zero", "c_inf_vs_inf"] + (["inf_minus_inf"] if k >= 2 else [])
    scen = r.below(len(scenarios), (n,), len(scenarios))
    one_a, one_b = _value(fa, 0, 0, 0), _value(fb, 0, 0, 0)
    # the operand side that holds infinities, and the other side
    x, fx, y, fy, one_y = (a, fa, b, fb, one_b) if inf_a else (b, fb, a, fa, one_a)
    for i, name in enumerate(scenarios):
        rows = np.flatnonzero(scen == i)
        m = rows.size
        sg = job.signs((m,))
        if name == "c_inf":
            c[rows] = _inf(fc, sg)
        elif name == "c_nan":
            c[rows] = _nan(fc, sg, r.words(np.uint32, (m,)))
        elif name == "zeros":  # products all +0 or all -0, c +-0 (mostly the same): the sign of a zero sum
            b_sign = (b[rows] >> np.uint8(fb.exp_bits + fb.frac_bits + fb.field_shift)) & 1
            z = job.signs((m,))
            a[rows] = _zero(fa, b_sign ^ z[:, None])
            c[rows] = _zero(fc, np.where(r.chance(0.75, (m,)), z, sg))
        elif name == "cancel_to_zero":  # 1*y - 1*y with c = +-0
            a[rows] = _zero(fa, job.signs((m, k)))
            a[rows, 0], a[rows, 1] = one_a, one_a ^ a.dtype.type(_sign_mask(fa))
            b[rows, 0] = b[rows, 1] = np.where(b[rows, 0] & b.dtype.type(_sign_mask(fb) - 1), b[rows, 0], one_b)
            c[rows] = _zero(fc, sg)
        elif name in ("nan_a", "nan_b"):
            z, fz = (a, fa) if name == "nan_a" else (b, fb)
            z[rows, 0] = _nan(fz, sg, r.words(np.uint16, (m,)))
        else:  # an infinite operand on the side that has Inf, times 1 (or 0)
            x[rows, 0], y[rows, 0] = _inf(fx, sg), one_y
            if name == "inf_times_zero":
                y[rows, 0] = _zero(fy, job.signs((m,)))
            elif name == "inf_minus_inf":
                x[rows, 1], y[rows, 1] = _inf(fx, 1 - sg), one_y
            elif name == "c_inf_vs_inf":
                c[rows] = _inf(fc, 1 - sg)
    return a, b, c


_FLOAT_FAMILIES = {
    "uniform_bits": _uniform_bits,
    "random_finite": _random_finite,
    "alignment": _alignment,
    "carry": _carry,
    "rounding": _rounding,
    "normalisation": _normalisation,
    "subnormal": _subnormal,
    "cancellation": _cancellation,
    "overflow": _overflow,
    "special": _special,
}


# ------------------------------------------------------------------------------ integer families


def _ints(job: _Job, f: IntFormat, lo: int, hi: int) -> np.ndarray:
    """Uniform integers in [lo, hi] (clipped to the format), in its storage dtype, shape (n, k)."""
    lo, hi = max(lo, f.lo), min(hi, f.hi)
    if (lo, hi) == (f.lo, f.hi):
        return job.r.words(np.uint8, job.shape).view(storage_dtype(f))
    return (np.int16(lo) + job.r.below(hi - lo + 1, job.shape)).astype(storage_dtype(f))


def _extremes(job: _Job, negative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Extreme operands (-128, 127 or 255) whose products are negative where ``negative``
    (per row, (n, 1)) and a signed operand allows it; u8 x u8 products are positive."""
    fa, fb = job.fa, job.fb
    neg = np.broadcast_to(negative, job.shape)
    pos = np.zeros(job.shape, bool)
    neg_a, neg_b = (neg, pos) if fa.signed else (pos, neg)
    pick = lambda f, m: np.where(m, f.lo, f.hi).astype(storage_dtype(f)) if f.signed else np.full(job.shape, f.hi, storage_dtype(f))  # noqa: E731
    return pick(fa, neg_a), pick(fb, neg_b)


def _int32(x) -> np.ndarray:
    return np.clip(x, -(1 << 31), (1 << 31) - 1).astype(np.int32)


def _int_family(name: str, job: _Job):
    """The integer analogue of a family (module docstring, second table)."""
    n, k, r, fa, fb = job.n, job.k, job.r, job.fa, job.fb
    signed = fa.signed or fb.signed

    def c_in(lo: int, hi: int) -> np.ndarray:
        return _int32(lo + (r.words(np.uint32, (n,)).astype(np.int64) * (hi - lo + 1) >> 32))

    def dot(a, b) -> np.ndarray:
        return (a.astype(np.int32) * b.astype(np.int32)).sum(axis=1, dtype=np.int64)

    if name == "uniform_bits":
        return _ints(job, fa, fa.lo, fa.hi), _ints(job, fb, fb.lo, fb.hi), r.words(np.uint32, (n,)).view(np.int32)
    if name == "random_finite":
        return _ints(job, fa, -15, 15), _ints(job, fb, -15, 15), c_in(-(1 << 15), 1 << 15)
    if name == "subnormal":
        return _ints(job, fa, -1, 1), _ints(job, fb, -1, 1), c_in(-2, 2)
    if name == "special":
        va, vb = (np.array([f.lo, f.hi, 0, max(f.lo, -1), 1]).astype(storage_dtype(f)) for f in (fa, fb))
        c = np.array([-(1 << 31), (1 << 31) - 1, 0, -1, 1], np.int32)
        return va[r.below(5, job.shape, 5)], vb[r.below(5, job.shape, 5)], c[r.below(5, (n,), 5)]
    if name == "alignment":
        a, b = _ints(job, fa, -3, 3), _ints(job, fb, -3, 3)
        big_a, big_b = _extremes(job, job.signs((n, 1)) == 1)
        a[:, 0], b[:, 0] = big_a[:, 0], big_b[:, 0]
        big_c = (1 << r.between(20, 30, (n,)).astype(np.int64)) + r.words(np.uint8, (n,))
        return a, b, _int32(np.where(job.signs((n,)) == 1, -big_c, big_c))
    if name in ("carry", "overflow"):
        s = (job.signs((n, 1)) == 1) & signed
        a, b = _extremes(job, s)
        if name == "carry":
            big_c = (1 << 24) | (r.words(np.uint32, (n,)) >> 8).astype(np.int64)
            return a, b, _int32(np.where(s[:, 0], -big_c, big_c))
        S = dot(a, b)  # overflow: c within reach of the limit in the products' direction
        return a, b, _int32(np.where(S >= 0, (1 << 31) - 1, -(1 << 31)) - S // (2 + r.below(4, (n,), 4)))
    if name == "cancellation" and signed:
        a, b = _ints(job, fa, -127, fa.hi), _ints(job, fb, -127, fb.hi)
        m = r.between(1, max(k // 2, 1), (n, 1)) if k >= 2 else np.zeros((n, 1), np.int16)
        half = k // 2
        z, w = (a, b) if fa.signed else (b, a)  # negate the signed operand
        if half:
            paired = np.arange(half, dtype=np.int16) < m
            z[:, 1::2][:, :half] = np.where(paired, -z[:, 0 : 2 * half : 2], z[:, 1::2][:, :half])
            w[:, 1::2][:, :half] = np.where(paired, w[:, 0 : 2 * half : 2], w[:, 1::2][:, :half])
        a = np.where(job.col < 2 * m + r.below(3, (n, 1), 3), a, 0).astype(a.dtype)
        return a, b, c_in(-16, 16)
    # rounding, normalisation, and cancellation of u8 x u8 (no negative products): through c
    a, b = _ints(job, fa, fa.lo, fa.hi), _ints(job, fb, fb.lo, fb.hi)
    S = dot(a, b)
    if name == "rounding":  # the exact sum on, or 1 .. 2 away from, INT32_MAX or INT32_MIN
        return a, b, _int32(np.where(S >= 0, (1 << 31) - 1, -(1 << 31)) + r.between(-2, 2, (n,)) - S)
    return a, b, _int32(-S + r.between(-16, 16, (n,)))


# ------------------------------------------------------------------------------ public API


def _formats(in_fmt: str | tuple[str, str], acc_fmt: str):
    """Resolve and check an (input, accumulator) combination; ValueError says which rule."""
    names = tuple(in_fmt) if isinstance(in_fmt, (tuple, list)) else (in_fmt, in_fmt)
    if len(names) != 2:
        raise ValueError(f"in_fmt must be a format or an (A, B) pair, not {in_fmt!r}")
    fa, fb = (get_format(x) for x in names)
    fc = get_format(acc_fmt)
    if fa.name != fb.name and not ({fa.name, fb.name} <= _NARROW or {fa.name, fb.name} <= _INTS):
        raise ValueError(f"mixed inputs must both be fp8/fp6/fp4 or both s8/u8, not {fa.name} x {fb.name}")
    if isinstance(fa, IntFormat):
        if fa.name not in _INTS or fc.name != "s32":
            raise ValueError(f"integer inputs are s8/u8 accumulating into s32, not {fa.name} -> {fc.name}")
    elif fc.name not in ("f32", "f16") or fa.name in ("f32", "ue8m0", "ue4m3"):
        raise ValueError(f"floating-point inputs are f16/bf16/tf32/fp8/fp6/fp4 accumulating into f32 or f16, not {fa.name} -> {fc.name}")
    return fa, fb, fc


def draw_vectors(
    family: str, in_fmt: str | tuple[str, str], acc_fmt: str, k: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` inner-product vectors of one family: raw encodings a (n, k), b (n, k), c (n,).

    The dtypes are those :func:`tcgen05_conformance.oracles.numerics.inner_product` takes (uint8 for the
    8/6/4-bit floats, uint16 f16/bf16, uint32 tf32 containers, int8/uint8 s8/u8; c uint32
    f32, uint16 f16, int32 s32).  ``in_fmt`` may be an (A, B) pair of fp8/fp6/fp4 formats
    or of s8/u8.  The same ``rng`` state gives the same vectors.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown vector family {family!r}; known: {FAMILIES}")
    if k < 1 or n < 0:
        raise ValueError(f"need k >= 1 and n >= 0, got k={k}, n={n}")
    fa, fb, fc = _formats(in_fmt, acc_fmt)
    job = _Job(fa, fb, fc, int(k), int(n), _Rand(rng))
    build = _FLOAT_FAMILIES[family] if isinstance(fa, FloatFormat) else (lambda j: _int_family(family, j))
    a, b, c = build(job)
    a, b = np.ascontiguousarray(a, storage_dtype(fa)), np.ascontiguousarray(b, storage_dtype(fb))
    _place(job, a, b)
    return a, b, np.ascontiguousarray(c, storage_dtype(fc))


#: Families of block-scale rows (`draw_scales`).
SCALE_FAMILIES: tuple[str, ...] = ("unit", "near", "block_gap", "wide", "special")


def draw_scales(scale_fmt: str, n: int, blocks: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of A and B block scales (raw ``scale_fmt`` codes, uint8, shape (n, blocks)),
    one fifth per family of `SCALE_FAMILIES`, in order:

    * ``unit``: every scale 1 (the unscaled datapath shows through);
    * ``near``: scales 2**-4 .. 2**4 (ue4m3: any significand), products of nearby blocks meet;
    * ``block_gap``: every block at 1 but one, whose A and B scales together make 2**-g,
      g = 16 .. 44 (the ladder that tells per-product alignment from per-block sub-sums: a
      small value in the scaled-down block survives only within the alignment width);
    * ``wide``: any finite scale code, on both sides (overflow and underflow of the scaled terms);
    * ``special``: zero scales (ue4m3 code 0), subnormal ue4m3, codes with the sign bit set
      (ue4m3 reads 7 bits), the smallest ue8m0 (2**-127) and, on 1 row in 16, a NaN scale.
    """
    fmt = get_format(scale_fmt)
    if fmt.name not in ("ue8m0", "ue4m3"):
        raise ValueError(f"block scales are ue8m0 or ue4m3, not {scale_fmt}")
    if blocks < 1 or n < 0:
        raise ValueError(f"need blocks >= 1 and n >= 0, got blocks={blocks}, n={n}")
    r = _Rand(rng)
    shape = (n, blocks)
    one = 127 if fmt.name == "ue8m0" else 0x38
    unit_exp = 1 if fmt.name == "ue8m0" else 8  # code step of one binade
    family = np.repeat(np.arange(len(SCALE_FAMILIES)), [n // 5 + (j < n % 5) for j in range(5)])[:, None]
    gap = r.between(16, 44, (n, 1)).astype(np.int32)
    which = r.below(blocks, (n, 1), 256).astype(np.int32)
    out = []
    for side in range(2):
        codes = np.full(shape, one, np.int32)
        near = one + unit_exp * r.between(-4, 4, shape).astype(np.int32)
        if fmt.name == "ue4m3":
            near = near + r.between(0, 7, shape)
        codes = np.where(family == 1, near, codes)
        half = gap // 2 if side == 0 else gap - gap // 2
        lowered = one - unit_exp * half
        if fmt.name == "ue4m3":  # the ue4m3 range ends at 2**-9 (subnormal): spread the gap over both sides
            lowered = np.maximum(lowered, 1)
        codes = np.where((family == 2) & (np.arange(blocks) == which), lowered, codes)
        wide = r.between(0, 254, shape).astype(np.int32) if fmt.name == "ue8m0" else r.between(0, 0x7E, shape)
        codes = np.where(family == 3, wide, codes)
        if fmt.name == "ue8m0":
            special = np.where(r.chance(0.5, shape), 0, one)
        else:
            special = np.choose(r.below(4, shape, 4), [0, r.between(1, 7, shape), one | 0x80, r.between(0x80, 0xFE, shape)])
        special = np.where(r.chance(1 / 16, (n, 1)) & (np.arange(blocks) == 0), 0xFF if fmt.name == "ue8m0" else 0x7F,
                           special)
        codes = np.where(family == 4, special, codes)
        out.append(np.ascontiguousarray(codes, np.uint8))
    return out[0], out[1]


def mix(
    in_fmt: str | tuple[str, str],
    acc_fmt: str,
    k: int,
    n: int,
    rng: np.random.Generator,
    families: tuple[str, ...] = FAMILIES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``n`` vectors spread evenly over ``families``, in that order, in contiguous blocks.

    Returns (a, b, c, labels); ``labels`` (uint8, shape (n,)) indexes ``families``: row i
    was drawn from ``families[labels[i]]``.  Family j gets ``n // F`` rows, plus one if
    ``j < n % F`` (F = len(families)).
    """
    if not 1 <= len(families) <= 255:
        raise ValueError("families must name 1 to 255 families")
    counts = [n // len(families) + (j < n % len(families)) for j in range(len(families))]
    parts = [draw_vectors(f, in_fmt, acc_fmt, k, m, rng) for f, m in zip(families, counts)]
    labels = np.repeat(np.arange(len(families), dtype=np.uint8), counts)
    return (*(np.concatenate([p[i] for p in parts]) for i in range(3)), labels)


def vectors(
    in_fmt: str | tuple[str, str],
    acc_fmt: str,
    k: int,
    families: tuple[str, ...] = FAMILIES,
    max_n: int = 32,
) -> st.SearchStrategy[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Hypothesis strategy of (family, a, b, c): 1 .. max_n vectors of one family, drawn
    from a seed (so shrinking goes towards the first family, one vector and seed 0)."""
    _formats(in_fmt, acc_fmt)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise ValueError(f"unknown vector families {unknown}; known: {FAMILIES}")

    def build(family: str, n: int, seed: int):
        return (family, *draw_vectors(family, in_fmt, acc_fmt, k, n, np.random.default_rng(seed)))

    return st.builds(build, st.sampled_from(tuple(families)), st.integers(1, max_n), st.integers(0, 2**32 - 1))
