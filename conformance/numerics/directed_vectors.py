"""The directed inner products of `numerics infer`: `Builder` writes vectors of exact powers of two
times short significands for one (input, accumulator) pair and K, and `pool_span` and
`significant_bits` measure a pool's reach. They sit apart from the stages because the block-scale,
widening and recorded searches build and measure vectors the same way."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, decode, get_format, storage_dtype
from tcgen05_conformance.numerics.hypotheses import Pool
from tcgen05_conformance.oracles.numerics.convert import NotRepresentable, from_binary32

class Builder:
    """Directed inner products for one (input, accumulator) pair and K: products are exact
    powers of two times short significands, each operand a normal number of the input format."""

    def __init__(self, in_fmt: str, acc_fmt: str, k: int):
        self.in_fmt, self.acc_fmt, self.k = in_fmt, acc_fmt, k
        self.fi: FloatFormat = get_format(in_fmt)
        self.fa: FloatFormat = get_format(acc_fmt)
        self.rows_a: list[np.ndarray] = []
        self.rows_b: list[np.ndarray] = []
        self.rows_c: list[int] = []
        self.zero = int(self.code(self.fi, 0.0))

    @staticmethod
    def code(fmt: FloatFormat, x: float) -> int | None:
        """The code of value x in fmt, or None when x is not exact in it (or in binary32)."""
        return _code(fmt.name, float(x).hex())  # keyed by the exact value: -0.0 == 0.0 as a float key

    @property
    def significands(self) -> list[float]:
        """Significands of the input format used as factors: 1, 1 + ulp, 1.5, 2 - ulp."""
        u = 2.0 ** -self.fi.frac_bits
        return sorted({1.0, 1.0 + u, 1.5, 2.0 - u})

    @property
    def product_exponents(self) -> tuple[int, int]:
        """Lowest and highest exponent of a power-of-two product of two normal inputs."""
        return 2 * self.fi.emin, 2 * self.fi.emax

    def product(self, e: int, sign: int = 1, sa: float = 1.0, sb: float = 1.0) -> tuple[int, int] | None:
        """Codes (a, b) with a * b = sign * sa * sb * 2**e, both normal, or None."""
        return _product(self.fi.name, e, sign, sa, sb)

    def subnormal_product(self, e: int, sign: int = 1) -> tuple[int, int] | None:
        """Codes (a, b) with a * b = sign * 2**e, a subnormal and b normal or subnormal (products
        below the normal inputs' range, down to the square of the smallest subnormal), or None."""
        fi = self.fi
        for ea in range(fi.emin - 1, fi.emin - fi.frac_bits - 1, -1):
            if fi.emin - fi.frac_bits <= e - ea <= fi.emax:
                a, b = _code(fi.name, (sign * 2.0 ** ea).hex()), _code(fi.name, (2.0 ** (e - ea)).hex())
                if a is not None and b is not None:
                    return a, b
        return None

    def add(self, terms: dict[int, tuple[int, int] | None], c: float = 0.0) -> bool:
        """One vector: products at positions, zeros elsewhere, c a value of the accumulator."""
        cc = self.code(self.fa, c)
        if cc is None or any(t is None for t in terms.values()):
            return False
        a = np.full(self.k, self.zero, dtype=np.int64)
        b = np.full(self.k, self.zero, dtype=np.int64)
        for pos, (ca, cb) in terms.items():
            a[pos], b[pos] = ca, cb
        self.rows_a.append(a)
        self.rows_b.append(b)
        self.rows_c.append(cc)
        return True

    def add_codes(self, a: np.ndarray, b: np.ndarray, c: int) -> None:
        self.rows_a.append(np.asarray(a, dtype=np.int64))
        self.rows_b.append(np.asarray(b, dtype=np.int64))
        self.rows_c.append(int(c))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The vectors added so far, in order: a, b (n, K) and c (n,) codes."""
        dt_in = storage_dtype(self.fi)
        dt_acc = np.dtype(storage_dtype(self.fa).str.replace("i", "u"))
        return (np.array(self.rows_a).astype(dt_in), np.array(self.rows_b).astype(dt_in),
                np.array(self.rows_c, dtype=np.uint64).astype(dt_acc))

    def pool(self, stage: str) -> Pool | None:
        """The vectors added so far, in a fixed shuffled order (so that the first rows, which
        every hypothesis meets first, mix every kind of vector of the stage)."""
        if not self.rows_c:
            return None
        a, b, c = self.arrays()
        order = np.random.default_rng(len(c)).permutation(len(c))
        return Pool(stage, a[order], b[order], c[order])


@lru_cache(maxsize=None)
def _code(fmt: str, hex_value: str) -> int | None:
    x = float.fromhex(hex_value)
    word = np.float32(x)
    if not math.isfinite(x) or float(word) != x:
        return None
    try:
        return int(from_binary32(np.array([word]).view(np.uint32), fmt)[0])
    except NotRepresentable:
        return None


@lru_cache(maxsize=None)
def _product(fmt: str, e: int, sign: int, sa: float, sb: float) -> tuple[int, int] | None:
    """Operand codes whose product is sign * sa * sb * 2**e, exponents split evenly where possible."""
    fi = get_format(fmt)
    lo, hi = fi.emin, fi.emax
    first = min(max(-(-e // 2), lo), hi)
    for ea in sorted(range(lo, hi + 1), key=lambda x: abs(x - first)):
        eb = e - ea
        if not lo <= eb <= hi:
            continue
        a, b = _code(fmt, (sign * sa * 2.0 ** ea).hex()), _code(fmt, (sb * 2.0 ** eb).hex())
        if a is not None and b is not None:
            return a, b
    return None


def significant_bits(codes: np.ndarray, acc_fmt: str) -> int:
    """The most significant bits (leading one to last one) among normal finite results."""
    fa = get_format(acc_fmt)
    d = decode(codes, fa)
    normal = (d.cls == 1) & (d.mant >= (1 << fa.frac_bits))
    if not normal.any():
        return 0
    mant = d.mant[normal].astype(np.int64)
    trailing = np.log2(mant & -mant).astype(int)
    return int((fa.precision - trailing).max())


def pool_span(pool: Pool, in_fmt: str, acc_fmt: str) -> tuple[int, int]:
    """(span, lowest bit): an alignment width of at least `span` never cuts a bit of any term or
    partial sum of the pool (every partial sum is a multiple of 2**lowest bit and lies below
    2**(highest exponent + log2 K + 3)); `lowest bit` bounds the finest grid the pool needs."""
    fi, fa = get_format(in_fmt), get_format(acc_fmt)
    da, db, dc = decode(pool.a, fi), decode(pool.b, fi), decode(pool.c, fa)
    nz = (da.mant != 0) & (db.mant != 0)
    pexp = np.where(nz, da.aexp + db.aexp, -(1 << 30))
    plsb = np.where(nz, da.aexp + db.aexp - 2 * fi.frac_bits, 1 << 30)
    cnz = dc.mant != 0
    top = max(int(pexp.max(initial=-(1 << 30))), int(np.where(cnz, dc.aexp, -(1 << 30)).max(initial=-(1 << 30))))
    low = min(int(plsb.min(initial=1 << 30)), int(np.where(cnz, dc.aexp - fa.frac_bits, 1 << 30).min(initial=1 << 30)))
    return top + int(math.log2(pool.a.shape[1])) + 4 - low, low
