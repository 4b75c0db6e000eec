"""Numeric profiles inferred from nothing: directed feature tests that read every parameter of
the inner-product model (`tcgen05_conformance.oracles.numerics.profiles.Datapath`) off a vector source.

The tests follow the feature tests of Fasi, Higham, Mikaitis and Pranesh ("Numerical behavior
of NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330, 2021) and Khattak and Mikaitis ("Accurate
models of NVIDIA tensor cores", arXiv:2512.07004, 2025): inner products built from exact powers
of two and short significands in which one feature of the datapath decides the result (how far
below the largest product a term survives alignment, whether a sum is truncated or rounded and
to how many bits, which products share a fused group, where c joins, what happens to subnormals,
the sign of zero). Each stage enumerates the values its parameters may still take (with the
parameters its vectors depend on), predicts the results under each with the numeric model, and
keeps the values that reproduce what the source returned; the vectors of a stage are built so
that parameters settled later cannot change them. Parameters no vector of the format can reach
(the alignment floor with fp16 products, say) are *open*: they take the value of a datapath of
the same source, instruction kind and accumulator that did settle them, else a neutral value,
and the report says so. At the end the whole inferred datapath must reproduce every directed
vector, and is checked against discriminating vectors (`tcgen05_conformance.generators.numeric_vectors`).

Recorded vectors cannot be chosen, so `infer_recorded` searches every datapath consistent with a
recorded folder instead and reports which parameters the data determines and which it leaves
open.

    tcgen05-conformance numerics infer --backend oracle --profile sm_90a --out sm_90a.inferred.json
    tcgen05-conformance numerics infer --backend hopper --out h100-wgmma.json       (on an H100)
    tcgen05-conformance numerics infer --backend recorded:B200 --json
    tcgen05-conformance numerics agree --backend sim:'python examples/numeric_simulators/khattak_mikaitis.py MODELS B200TC' \
        --profile sm_100a --recorded oracles/numerics/recordings/tensor-core-vectors/B200
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, decode, get_format, storage_dtype
from tcgen05_conformance.numerics.sources import Scaling, SimulatorSource, VectorSource, mixed_pairs_of
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.model import datapath_of
from tcgen05_conformance.oracles.numerics.convert import NotRepresentable, from_binary32
from tcgen05_conformance.generators.numeric_vectors import FAMILIES, draw_scales, mix
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS, Datapath, Profile

STRUCTURE = "structure"  # (k_step, split_ways, split_stride), searched together
SEARCHED = (STRUCTURE, "align_frac_bits", "group_precision", "group_rounding", "c_entry", "final_rounding",
            "subnormal_inputs", "subnormal_outputs", "align_floor", "zero_sign")
#: tcgen05 instruction kinds of the input formats (PTX ISA Table 39): datapaths of one kind and
#: accumulator lend each other the parameters their own formats cannot reach.
KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "e4m3": "f8f6f4", "e5m2": "f8f6f4", "e3m2": "f8f6f4",
        "e2m3": "f8f6f4", "e2m1": "f8f6f4"}
#: Neutral values of parameters nothing settles (the exact datapath's, IEEE's).
NEUTRAL = {"align_frac_bits": None, "group_precision": None, "group_rounding": "rne", "c_entry": "first_group",
           "final_rounding": "rne", "subnormal_inputs": True, "subnormal_outputs": True, "align_floor": None,
           "zero_sign": "ieee"}
F_MAX = 64  # alignment widths searched: 0 .. F_MAX and None (exact); wider ones act as None on every pool here
EARLY_ROWS = 48  # rows each hypothesis meets first; most hypotheses fail there
RECORDED_EARLY_ROWS = 6  # random recorded vectors each expose most parameters: few suffice to reject
CONFIRM_VECTORS = 4096  # discriminating vectors per datapath after inference


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def structures(k: int) -> list[tuple[int, int, int]]:
    """Every (k_step, split_ways, split_stride) that partitions K products differently: k_step a
    divisor of K, 1, 2, 4 or 8 ways dealt in runs of `stride` (a power of two, ways x stride <=
    k_step; stride 1 for one way), K itself standing for "all products in one step"."""
    seen: dict[tuple, tuple[int, int, int]] = {}
    for step in divisors(k):
        for ways in (w for w in (1, 2, 4, 8) if step % w == 0):
            strides = [1] if ways == 1 else [s for s in (1, 2, 4, 8, 16, 32) if ways * s <= step]
            for stride in strides:
                seen.setdefault(signature(k, step, ways, stride), (step, ways, stride))
    return list(seen.values())


def signature(k: int, step: int, ways: int, stride: int) -> tuple[tuple[int, int], ...]:
    """(step, group) of each product position: equal signatures compute alike."""
    return tuple((i // step, ((i % step) // stride) % ways) for i in range(k))


def groups_of(k: int, structure: tuple[int, int, int]) -> list[list[int]]:
    """Positions of each fused group, in the order the datapath adds them."""
    step, ways, stride = structure
    sig = signature(k, step, ways, stride)
    order = sorted(set(sig))
    return [[i for i in range(k) if sig[i] == g] for g in order]


# ----------------------------------------------------------------------------- hypotheses


def datapath(values: dict[str, Any], instruction: str = "hypothesis", provenance: dict | None = None) -> Datapath:
    """The datapath of a full assignment of SEARCHED parameters."""
    step, ways, stride = values[STRUCTURE]
    fields_ = {p: values[p] for p in SEARCHED if p != STRUCTURE}
    prov = provenance or {p: "hypothesis" for p in PARAMETERS}
    return Datapath(instruction=instruction, k_step=step, split_ways=ways, split_stride=stride, **fields_,
                    provenance=prov)


def _as_profile(dp: Datapath, in_fmt: str, acc_fmt: str) -> Profile:
    return Profile(name="hypothesis", description="inference hypothesis", datapaths={(in_fmt, acc_fmt): dp})


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.dtype(x.dtype.str.replace("i", "u"))) if x.dtype.kind == "i" else x


@dataclass
class Pool:
    """A batch of directed vectors, what the source returned for them, and what they test."""

    stage: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    observed: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.c)


@dataclass
class Outcome:
    """What inference found for one parameter: its allowed values, the stage and vectors that
    settled it, and how the final value was chosen when several remain."""

    allowed: list
    stage: str = ""
    vectors: int = 0
    chosen_by: str = "determined"  # "determined", "donor <in->acc>", "neutral"


# ----------------------------------------------------------------------------- vector building


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


# ----------------------------------------------------------------------------- the engine


@dataclass
class DatapathInference:
    """The inference of one datapath: the source's pair, K, per-parameter outcomes, pools sent."""

    in_fmt: str
    acc_fmt: str
    k: int
    source: VectorSource
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    pools: list[Pool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        fa = get_format(self.acc_fmt)
        # Each list starts with the value assumed while a parameter is unsettled (one fused group
        # of all K, exact alignment, IEEE behaviour): stages build their vectors so that it does
        # not matter, and put the neutral value first only so that hypotheses are well formed.
        self.outcomes = {
            STRUCTURE: Outcome(sorted(structures(self.k), key=lambda s: (s != (self.k, 1, 1), s))),
            "align_frac_bits": Outcome([None, *range(F_MAX + 1)]),
            "group_precision": Outcome([None, *range(2, fa.precision)]),
            "group_rounding": Outcome(["rne", "rz"]),
            "c_entry": Outcome(["first_group", "final_add"]),
            "final_rounding": Outcome(["rne", "rz"]),
            "subnormal_inputs": Outcome([True, False]),
            "subnormal_outputs": Outcome([True, False]),
            "align_floor": Outcome([None, *range(self.grid_low - 1, self.grid_low - 65, -1)]),
            "zero_sign": Outcome(["ieee", "positive"]),
        }

    @property
    def grid_low(self) -> int:
        """The finest alignment grid the stages before the floor stage use: the accumulator's
        subnormal unit, 2**(emin - (P - 1)), one bit further. A floor (the lowest grid an
        adder keeps) lies below it, or subnormal results could not be formed exactly, so floors
        are searched below it and cannot change the earlier stages."""
        fa = get_format(self.acc_fmt)
        return fa.emin - fa.precision

    def allowed(self, p: str) -> list:
        return self.outcomes[p].allowed

    def value(self, p: str):
        """The parameter's value when settled; else the first allowed (for building vectors)."""
        return self.allowed(p)[0]

    def settled(self, p: str) -> bool:
        """One value left, from this datapath's own vectors (not a donor's)."""
        return len(self.allowed(p)) == 1 and self.outcomes[p].chosen_by == "determined"

    def builder(self) -> Builder:
        return Builder(self.in_fmt, self.acc_fmt, self.k)

    def run(self, pool: Pool | None) -> Pool | None:
        """Send a pool to the source (once), keep it, and drop the group precisions its results
        rule out: where c is zero and every nonzero product lies in one instruction step (under
        every structure still allowed), the result is that step's last group rounding - p bits -
        passed on unchanged or truncated (an addition of c after the groups adds zero; a later
        step's group of zero products only truncates), so p is at least its significant bits."""
        if pool is None or not len(pool):
            return None
        pool.observed = _unsigned(self.source.evaluate(self.in_fmt, self.acc_fmt, pool.a, pool.b, pool.c))
        self.pools.append(pool)
        zero = Builder(self.in_fmt, self.acc_fmt, self.k).zero
        used = (pool.a != zero) & (pool.b != zero)
        first = np.where(used.any(axis=1), used.argmax(axis=1), 0)
        last = np.where(used.any(axis=1), self.k - 1 - used[:, ::-1].argmax(axis=1), 0)
        one_step = np.ones(len(pool), dtype=bool)
        for step, _, _ in self.allowed(STRUCTURE):
            one_step &= first // step == last // step
        bits = significant_bits(pool.observed[(pool.c == 0) & one_step], self.acc_fmt)
        outcome = self.outcomes["group_precision"]
        narrowed = [p for p in outcome.allowed if (p or get_format(self.acc_fmt).precision) >= bits]
        if narrowed != outcome.allowed:
            outcome.allowed = narrowed
            outcome.stage = outcome.stage or pool.stage
        return pool

    def predict(self, values: dict, pool: Pool, rows: slice = slice(None)) -> np.ndarray:
        dp = datapath(values)
        return _unsigned(inner_product(pool.a[rows], pool.b[rows], pool.c[rows], self.in_fmt, self.acc_fmt,
                                       _as_profile(dp, self.in_fmt, self.acc_fmt)))

    def eliminate(self, pool: Pool, params: Iterable[str], *, depends: Iterable[str] = (),
                  classes: dict[str, Callable[[Any], Any]] | None = None,
                  view: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        """Keep the values of `params` under which the model reproduces the source on every
        vector of the pool. Searched jointly with them: the parameters of `depends` not settled
        yet (the pool's results may depend on them); every other parameter sits at its first
        allowed value, which the pool's construction makes irrelevant. `classes` maps a
        parameter's values to a key equal for values that act alike on this pool (one
        representative per class is tried); `view` compares only a function of the results (a
        stage whose vectors decide only *whether* a result equals a value)."""
        search = list(params) + [d for d in depends if d not in params and len(self.allowed(d)) > 1]
        classes = classes or {}
        reps = []
        for p in search:
            key = classes.get(p, lambda v: v)
            groups: dict[Any, list] = {}
            for v in self.allowed(p):
                groups.setdefault(key(v), []).append(v)
            reps.append(list(groups.values()))
        see = view or (lambda x: x)
        base = {q: self.value(q) for q in SEARCHED}
        early = slice(0, min(EARLY_ROWS, len(pool)))
        observed_early, observed = see(pool.observed[early]), see(pool.observed)
        keep: list[set] = [set() for _ in search]
        for combo in itertools.product(*reps):
            values = {**base, **{p: members[0] for p, members in zip(search, combo)}}
            if not np.array_equal(see(self.predict(values, pool, early)), observed_early):
                continue
            if not np.array_equal(see(self.predict(values, pool)), observed):
                continue
            for i, members in enumerate(combo):
                keep[i].update(_hashable(m) for m in members)
        for p, kept in zip(search, keep):
            outcome = self.outcomes[p]
            after = [v for v in outcome.allowed if _hashable(v) in kept]
            if after != outcome.allowed:
                outcome.stage = f"{outcome.stage}, {pool.stage}" if outcome.stage else pool.stage
                outcome.vectors += len(pool)
            outcome.allowed = after
        empty = [p for p in search if not self.allowed(p)]
        if empty:
            raise Inconsistent(f"{self.in_fmt} -> {self.acc_fmt}: no value of {', '.join(search)} reproduces the "
                               f"{len(pool)} vectors of stage '{pool.stage}' (the source is outside the model's "
                               "parameter space, or an earlier stage settled a parameter wrongly)")


class Inconsistent(RuntimeError):
    """No datapath of the model reproduces a source's answers; the message says where."""


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def _f_classes(span: int) -> Callable[[Any], Any]:
    """Alignment widths of at least `span` act like exact alignment on a pool of that span."""
    return lambda f: "wide" if f is None or f >= span else f


def _f_cut(m: int) -> Callable[[Any], Any]:
    """On a pool whose only term below the top is one power of two m binades down, every width
    below m cuts it and every other keeps it: two classes."""
    return lambda f: "keeps" if f is None or f >= m else "cuts"


def _floor_classes(lowest_bit: int) -> Callable[[Any], Any]:
    """Floors at or below a pool's lowest bit cut nothing: they act like no floor."""
    return lambda fl: "none" if fl is None or fl <= lowest_bit else fl


# ----------------------------------------------------------------------------- stages


def home_exponent(inf: DatapathInference, span: int) -> tuple[int, int]:
    """(E, M): an exponent for the largest term and how far below it terms may go (at most
    `span`), so that every term is a product of normal inputs, results down to 2**(E - M) stay
    normal in the accumulator, and no grid goes below `grid_low`."""
    lo_p, hi_p = inf.builder().product_exponents
    fa = get_format(inf.acc_fmt)
    e_hi = min(fa.emax - 3, hi_p - 2)
    e_lo = max(fa.emin + span + 1, inf.grid_low + span, lo_p + span)
    e = min(max(0, e_lo), e_hi)
    return e, min(span, e - lo_p, e - inf.grid_low, e - fa.emin - 1)


#: Parameters that shape every result of the directed vectors (c, where it is nonzero, enters
#: them too): a stage searches those still unsettled together with its own.
CORE = (STRUCTURE, "align_frac_bits", "group_precision", "group_rounding")


def stage_structure(inf: DatapathInference) -> None:
    """Which products share a fused group and in what order groups and steps are added: B at i,
    -B at j and y = 2**-m B at l, m = P + 2, c = 0. y comes out unchanged only when no partial
    sum holding exactly one of +-B meets it (it is then absorbed, or leaves a rounding
    remainder 2**-p B or so, never y): when its group follows both, or (with a separate
    addition of c) its step precedes theirs; inside one fused group with both it survives iff
    the alignment keeps m bits. Whether the result equals y is therefore independent of the
    group precision and rounding; it is all the stage compares. Anchors i: the powers of two
    (and one less), j = i + 2^t, l: every position."""
    fa = get_format(inf.acc_fmt)
    m = fa.precision + 2
    e, m_max = home_exponent(inf, m)
    if m_max < m:
        inf.notes.append(f"structure: the input format's range ({m_max} binades below the top product) cannot "
                         f"isolate groups with a {inf.acc_fmt} accumulator (needs {m})")
        return
    k = inf.k
    b = inf.builder()
    big, neg, tiny = b.product(e, 1), b.product(e, -1), b.product(e - m, 1)
    anchors = sorted({0, k - 1, *(2 ** t for t in range(int(math.log2(k)) + 1) if 2 ** t < k),
                      *(2 ** t - 1 for t in range(1, int(math.log2(k)) + 1))})
    for i in anchors:
        for d in (2 ** t for t in range(int(math.log2(k)) + 1)):
            j = i + d
            if j >= k:
                continue
            for ell in range(k):
                if ell not in (i, j):
                    b.add({i: big, j: neg, ell: tiny})
    pool = inf.run(b.pool("structure"))
    y = Builder.code(fa, 2.0 ** (e - m))
    inf.eliminate(pool, [STRUCTURE, "c_entry"], depends=["align_frac_bits"],
                  classes={"align_frac_bits": _f_cut(m)}, view=lambda d: d == y)


def one_group(inf: DatapathInference, size: int) -> list[int] | None:
    """`size` positions that share one fused group under every structure still allowed, from the
    last such group: products there meet no later group, whose alignment would truncate their
    rounded sum once more (with an alignment width below the accumulator's precision, a group of
    zero products still cuts the accumulator to F + 1 bits)."""
    candidates = inf.allowed(STRUCTURE)
    for group in reversed(groups_of(inf.k, candidates[0])):
        if len(group) < size:
            continue
        chosen = group[:size]
        if all(any(set(chosen) <= set(g) for g in groups_of(inf.k, s)) for s in candidates):
            return chosen
    return None


def stage_pairs(inf: DatapathInference) -> None:
    """Alignment width, group precision and rounding from two products x and y = +-s 2**-m x
    (m = 0 .. M) in one fused group (the first two positions of the first group; c = 0):
    `x - tiny` shows truncation (RZ keeps x - ulp, RNE returns x), `x + tiny` the rounding
    point, significands up to (2 - ulp)^2 carries past the group precision."""
    fa = get_format(inf.acc_fmt)
    e, m_max = home_exponent(inf, 2 * fa.precision + 8)
    where = one_group(inf, 2) or [0, 1]
    b = inf.builder()
    sig = b.significands
    big = [(1.0, 1.0), (sig[-1], 1.0), (sig[-1], sig[-1])]
    for (sa, sb), s1, sign, m in itertools.product(big, sig, (1, -1), range(m_max + 1)):
        b.add({where[0]: b.product(e, 1, sa, sb), where[1]: b.product(e - m, sign, s1)})
    pool = inf.run(b.pool("pairs"))
    if pool is None:
        inf.notes.append("pairs: the input format cannot form the pair vectors")
        return
    span, _ = pool_span(pool, inf.in_fmt, inf.acc_fmt)
    inf.eliminate(pool, ["align_frac_bits", "group_precision", "group_rounding"], depends=[STRUCTURE, "c_entry"],
                  classes={"align_frac_bits": _f_classes(span)})


def stage_cancel(inf: DatapathInference) -> None:
    """The alignment width over the input format's whole range: B - B + y in one fused group
    keeps y = +-2**-m B exactly while m <= F and loses it beyond - one bit, whatever the
    rounding and precision; B is the largest power-of-two product, so m reaches furthest."""
    where = one_group(inf, 3)
    if where is None:
        inf.notes.append("cancel: no three positions share a fused group under every allowed structure")
        return
    b = inf.builder()
    lo_p, hi_p = b.product_exponents
    fa = get_format(inf.acc_fmt)
    e = hi_p
    i, j, ell = where
    for m in range(min(e - lo_p, e - inf.grid_low, F_MAX + 1) + 1):
        if fa.emin <= e - m <= fa.emax:  # y itself must be a normal result
            for sign in (1, -1):
                b.add({i: b.product(e, 1), j: b.product(e, -1), ell: b.product(e - m, sign)})
    pool = inf.run(b.pool("cancel"))
    if pool is None:
        return
    span, _ = pool_span(pool, inf.in_fmt, inf.acc_fmt)
    inf.eliminate(pool, ["align_frac_bits"], depends=[STRUCTURE], classes={"align_frac_bits": _f_classes(span)})


def stage_carry(inf: DatapathInference) -> None:
    """The group precision where the alignment width hides it from pairs: n equal products x
    carry log2(n) bits out of the top, and one more product 2**-m x (m <= F, kept by the
    alignment) widens the sum past p bits: truncated or rounded at the p-th bit."""
    f = inf.value("align_frac_bits")
    fa = get_format(inf.acc_fmt)
    group = next((g for g in reversed(groups_of(inf.k, inf.value(STRUCTURE))) if len(g) >= 3), None)
    if group is None:
        return
    e, m_max = home_exponent(inf, fa.precision + 4)
    b = inf.builder()
    top = min(f if f is not None else m_max, m_max)
    for n in sorted({2, 3, len(group) - 1}):
        if n >= len(group):
            continue
        for s0 in (1.0, 1.5):
            for m in range(max(0, top - 6), top + 1):
                for sign in (1, -1):
                    terms = {group[t]: b.product(e, 1, s0) for t in range(n)}
                    terms[group[n]] = b.product(e - m, sign)
                    b.add(terms)
    pool = inf.run(b.pool("carry"))
    if pool is not None:
        inf.eliminate(pool, ["group_precision", "group_rounding"], depends=CORE)


def stage_c(inf: DatapathInference) -> None:
    """Where c enters and how its addition rounds: x (and a partner y in x's group) with c from
    far above to far below them, c cancelling x exactly or nearly. c inside the first group is
    aligned and truncated with the products and rounded once with them; c added afterwards meets
    the group's rounded result in a correctly rounded addition."""
    where = one_group(inf, 2) or [0, 1]
    fa = get_format(inf.acc_fmt)
    e, m_max = home_exponent(inf, fa.precision + 4)
    b = inf.builder()
    sig = b.significands
    i, j = where
    p = fa.precision
    near = sorted({m for m in (0, 1, 2, p - 2, p - 1, p, p + 1, p + 2) if 0 <= m <= m_max})
    for s0 in (1.0, sig[-1]):
        x = b.product(e, 1, s0)
        for partner in [None, *((m, sg) for m in near for sg in (1, -1))]:
            terms = {i: x}
            value = s0 * 2.0 ** e
            if partner is not None:
                m, sg = partner
                terms[j] = b.product(e - m, sg)
                value += sg * 2.0 ** (e - m)
            for mc in range(-2, m_max + 1):
                for sc in (1.0, 1.5):
                    for sign in (1, -1):
                        b.add(terms, sign * sc * 2.0 ** (e - mc))
            b.add(terms, -s0 * 2.0 ** e)
            if partner is not None and Builder.code(fa, -value) is not None:
                b.add(terms, -value)
    pool = inf.run(b.pool("c"))
    inf.eliminate(pool, ["c_entry", "final_rounding"], depends=CORE)


def stage_subnormal_inputs(inf: DatapathInference) -> None:
    """Subnormal operands (the largest, the smallest, one between) times powers of two that put
    the product in the normal range of the accumulator, alone or beside a normal product; a
    subnormal c beside a product it survives. Flushed inputs give 0 or the other term."""
    fi, fa = get_format(inf.in_fmt), get_format(inf.acc_fmt)
    b = inf.builder()
    i, j = one_group(inf, 2) or [0, 1]
    units = sorted({1, (1 << fi.frac_bits) - 1, 1 << (fi.frac_bits - 1) if fi.frac_bits > 1 else 1})
    lo_acc = fa.emin + 2
    for t in (u * 2.0 ** (fi.emin - fi.frac_bits) for u in units):
        for eb in range(fi.emin, fi.emax + 1):
            a, bb = Builder.code(fi, t), Builder.code(fi, 2.0 ** eb)
            if t * 2.0 ** eb < 2.0 ** lo_acc or a is None or bb is None:
                continue
            b.add({i: (a, bb)})
            b.add({i: (bb, a)})
            b.add({i: (a, bb), j: b.product(int(math.floor(math.log2(t))) + eb + 3, -1)})
            break
    for mc in (1, fa.frac_bits // 2, fa.frac_bits):
        c = mc * 2.0 ** (fa.emin - fa.frac_bits)
        b.add({i: b.product(fa.emin + 4, 1)}, c)
        b.add({i: b.product(fa.emin + 4, 1)}, -c)
    pool = inf.run(b.pool("subnormal inputs"))
    if pool is not None:
        inf.eliminate(pool, ["subnormal_inputs"], depends=[*CORE, "c_entry", "final_rounding"])


def stage_subnormal_outputs(inf: DatapathInference) -> None:
    """Results in the accumulator's subnormal range: a tiny product alone, a subnormal c alone,
    a normal product nearly cancelled. Flushed results are zero."""
    fi, fa = get_format(inf.in_fmt), get_format(inf.acc_fmt)
    b = inf.builder()
    i, j = one_group(inf, 2) or [0, 1]
    lo_p, _ = b.product_exponents
    for d in (1, 3, fa.frac_bits - 1):
        e = fa.emin - d
        if e >= lo_p:
            b.add({i: b.product(e, 1)})
            b.add({i: b.product(e, -1)})
    for u in (1, 3, (1 << fa.frac_bits) - 1):
        b.add({}, u * 2.0 ** (fa.emin - fa.frac_bits))
        b.add({}, -u * 2.0 ** (fa.emin - fa.frac_bits))
    e = fa.emin + 1
    if e - 1 >= lo_p:
        b.add({i: b.product(e, 1), j: b.product(e - 1, -1, 2.0 - 2.0 ** -fi.frac_bits)})
    pool = inf.run(b.pool("subnormal outputs"))
    if pool is not None:
        inf.eliminate(pool, ["subnormal_outputs"],
                      depends=[*CORE, "c_entry", "final_rounding", "subnormal_inputs", "zero_sign"])


def stage_floor(inf: DatapathInference) -> None:
    """The lowest alignment grid: a tiny product B = 2**e (a subnormal result) and y = -2**(e-j)
    in one group. y survives truncation - pulling the truncated subnormal sum down one unit -
    only while e - j is on the grid max(e - F, floor); scanning e and j reads the floor. Where
    groups round to nearest, a term below the subnormal unit shows only at a tie (below); where
    subnormal results are flushed, only in the sign of a flushed zero (B - B - 2**(e-j))."""
    f = inf.value("align_frac_bits")
    where = one_group(inf, 2)
    tie = one_group(inf, 3)
    if f is None or where is None:
        inf.notes.append("floor: needs a finite alignment width and two positions in one group")
        return
    fa = get_format(inf.acc_fmt)
    b = inf.builder()
    lo_p, _ = b.product_exponents
    i, j = where
    for e in range(fa.emin - 1, fa.emin - fa.precision, -1):
        for d in range(1, f + 1):
            if e - d < lo_p:
                break
            if inf.value("subnormal_outputs"):
                for sign in (1, -1):
                    b.add({i: b.product(e, 1), j: b.product(e - d, sign)})
            elif tie is not None:  # flushed results: B - B - 2**(e-d) is -0 while the term is kept, 0 once dropped
                b.add({tie[0]: b.product(e, 1), tie[1]: b.product(e, -1), tie[2]: b.product(e - d, -1)})
    # Rounding to nearest hides a dropped term unless it decides a tie: one subnormal unit 2**u,
    # half a unit and -2**t (a subnormal operand's product, when subnormal inputs are kept) sum to
    # just below the tie while 2**t is on the grid max(u - F, floor), and to the tie (rounded to
    # the even 2**(u+1)) once the floor drops it.
    u = fa.emin - (fa.precision - 1)
    if tie is not None and inf.value("subnormal_inputs") and inf.value("subnormal_outputs"):
        lowest_sub = 2 * (get_format(inf.in_fmt).emin - get_format(inf.in_fmt).frac_bits)
        for t in range(u - 2, max(u - f, lowest_sub) - 1, -1):
            b.add({tie[0]: b.product(u, 1), tie[1]: b.product(u - 1, 1),
                   tie[2]: b.product(t, -1) or b.subnormal_product(t, -1)})
    pool = inf.run(b.pool("floor"))
    if pool is None:
        inf.notes.append("floor: the input format cannot form products below the accumulator's normal range")
        return
    _, lowest = pool_span(pool, inf.in_fmt, inf.acc_fmt)
    inf.eliminate(pool, ["align_floor"], depends=[*CORE, "subnormal_inputs", "subnormal_outputs", "zero_sign"],
                  classes={"align_floor": _floor_classes(lowest)})


def stage_zero(inf: DatapathInference) -> None:
    """The sign of zero: all products -0 with c = -0 (IEEE 754: -0), +0 or -0 c beside -0
    products, x - x with a -0 c."""
    fi, fa = get_format(inf.in_fmt), get_format(inf.acc_fmt)
    b = inf.builder()
    nz, pz = Builder.code(fi, -0.0), Builder.code(fi, 0.0)
    one = Builder.code(fi, 1.0)
    k = inf.k
    i, j = one_group(inf, 2) or [0, 1]
    for c in (-0.0, 0.0):
        b.add_codes(np.full(k, nz), np.full(k, one), Builder.code(fa, c))
        b.add_codes(np.full(k, pz), np.full(k, one), Builder.code(fa, c))
        b.add({i: b.product(0, 1), j: b.product(0, -1)}, c)
        b.add({i: b.product(0, -1), j: b.product(0, 1)}, c)
    pool = inf.run(b.pool("zero sign"))
    inf.eliminate(pool, ["zero_sign"], depends=[*CORE, "c_entry"])


STAGES: tuple[Callable[[DatapathInference], None], ...] = (
    stage_structure, stage_pairs, stage_cancel, stage_carry, stage_c, stage_zero, stage_subnormal_inputs,
    stage_subnormal_outputs, stage_floor,
)


def infer_datapath(source: VectorSource, in_fmt: str, acc_fmt: str,
                   donors: Iterable[DatapathInference] = ()) -> DatapathInference:
    """Run every stage for one pair; the outcomes hold each parameter's allowed values. When the
    format's range cannot isolate its fused groups, the structure a donor (same instruction kind
    and accumulator, `donors` in order of preference) settled is assumed for the later stages,
    which need positions known to share a group; the report says so."""
    inf = DatapathInference(in_fmt, acc_fmt, source.k(in_fmt, acc_fmt), source)
    for stage in STAGES:
        stage(inf)
        if stage is stage_structure and not inf.settled(STRUCTURE):
            adopt_structure(inf, donors)
        if inf.allowed("c_entry") == ["first_group"]:
            collapse_chained_structures(inf)
    return inf


def adopt_structure(inf: DatapathInference, donors: Iterable[DatapathInference]) -> None:
    """Narrow an unsettled structure to the first donor's settled one that it allows."""
    for d in donors:
        if d.k == inf.k and d.settled(STRUCTURE) and d.value(STRUCTURE) in inf.allowed(STRUCTURE):
            inf.outcomes[STRUCTURE].allowed = [d.value(STRUCTURE)]
            inf.outcomes[STRUCTURE].chosen_by = f"donor {d.in_fmt}->{d.acc_fmt}"
            inf.notes.append(f"structure: assumed as settled by {d.in_fmt}->{d.acc_fmt} for the later stages")
            return


def collapse_chained_structures(inf: DatapathInference) -> None:
    """With c in the first group, a step boundary acts exactly like a group boundary (the next
    step's first group takes the running result as one more aligned term, as any later group
    does), so structures with the same sequence of groups compute alike: keep one of each, the
    one with the fewest ways (then the shortest step)."""
    classes: dict[tuple, tuple[int, int, int]] = {}
    for s in sorted(inf.allowed(STRUCTURE), key=lambda s: (s[1], s[0], s[2])):
        classes.setdefault(tuple(map(tuple, groups_of(inf.k, s))), s)
    kept = set(classes.values())
    inf.outcomes[STRUCTURE].allowed = [s for s in inf.allowed(STRUCTURE) if s in kept]


# ----------------------------------------------------------------------------- filling open parameters

#: Input formats from the widest exponent range to the narrowest: a donor is taken in this order.
RANGE_ORDER = ("tf32", "bf16", "f16", "e5m2", "e4m3", "e3m2", "e2m3", "e2m1")


def _neutral(inf: DatapathInference, p: str):
    allowed = inf.allowed(p)
    if p == STRUCTURE:
        return (inf.k, 1, 1) if (inf.k, 1, 1) in allowed else allowed[0]
    return NEUTRAL[p] if NEUTRAL[p] in allowed else allowed[0]


def choose_one(inferences: dict[tuple[str, str], DatapathInference], pair: tuple[str, str]) -> dict[str, Any]:
    """One value per parameter of a datapath: the settled value; for an open one, the value a
    datapath of the same instruction kind and accumulator settled (widest input range first) when
    this datapath allows it, else the neutral value. The choice must reproduce every directed
    vector of the datapath; where the donors' values do not, the neutral values are tried."""
    in_fmt, acc_fmt = pair
    inf = inferences[pair]
    donors = [inferences[(f, acc_fmt)] for f in RANGE_ORDER
              if f != in_fmt and (f, acc_fmt) in inferences and KIND.get(f) == KIND.get(in_fmt)]
    picks: dict[str, Any] = {}
    by: dict[str, str] = {}
    for p in SEARCHED:
        if inf.settled(p):
            picks[p], by[p] = inf.value(p), inf.outcomes[p].chosen_by
            continue
        donor = next((d for d in donors if d.settled(p) and d.value(p) in inf.allowed(p)), None)
        if donor is not None:
            picks[p], by[p] = donor.value(p), f"donor {donor.in_fmt}->{donor.acc_fmt}"
        else:
            picks[p], by[p] = _neutral(inf, p), "neutral"
    if not _reproduces(inf, picks):
        single = {p: len(inf.allowed(p)) == 1 for p in SEARCHED}
        picks = {p: inf.value(p) if single[p] else _neutral(inf, p) for p in SEARCHED}
        by = {p: inf.outcomes[p].chosen_by if single[p] else "neutral" for p in SEARCHED}
        if not _reproduces(inf, picks):
            raise Inconsistent(f"{in_fmt} -> {acc_fmt}: no choice among the allowed values reproduces every "
                               "directed vector (parameters interact beyond what the stages separate)")
    for p in SEARCHED:
        inf.outcomes[p].chosen_by = by[p]
    return picks


def _reproduces(inf: DatapathInference, values: dict) -> bool:
    return all(np.array_equal(inf.predict(values, pool), pool.observed) for pool in inf.pools)


# ----------------------------------------------------------------------------- provenance and reports


def describe_allowed(p: str, allowed: list, k: int) -> str:
    """The allowed values of a parameter in words, ranges folded."""
    if p == STRUCTURE:
        shown = [f"k_step {s} x {w} way(s) stride {t}" for s, w, t in allowed[:4]]
        return "; ".join(shown) + (f" and {len(allowed) - 4} more" if len(allowed) > 4 else "")
    ints = sorted(v for v in allowed if isinstance(v, int) and not isinstance(v, bool))
    others = [v for v in allowed if not (isinstance(v, int) and not isinstance(v, bool))]
    parts = []
    run: list[int] = []
    for v in ints + [None]:
        if run and (v is None or v != run[-1] + 1):
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}..{run[-1]}")
            run = []
        if v is not None:
            run.append(v)
    none_word = {"align_frac_bits": "exact alignment", "group_precision": "the accumulator's precision",
                 "align_floor": "no floor"}.get(p, "none")
    parts += [none_word if v is None else str(v) for v in others]
    return ", ".join(parts)


def _provenance(inf: DatapathInference, p: str, source: VectorSource) -> str:
    o = inf.outcomes[p]
    if o.chosen_by == "determined":
        where = f"stage '{o.stage}', {o.vectors} directed vectors" if o.stage else "no stage"
        return f"inferred from {source.name} ({where}): the only value that reproduces the source"
    open_ = f"open on {inf.in_fmt}->{inf.acc_fmt} (the directed vectors allow {describe_allowed(p, o.allowed, inf.k)})"
    if o.chosen_by.startswith("donor"):
        return f"{open_}; taken from {o.chosen_by[6:]}, the same instruction kind and accumulator, which settled it"
    return f"{open_}; neutral value chosen"


def _split_provenance(inf: DatapathInference, source: VectorSource, values: dict) -> dict[str, str]:
    struct = _provenance(inf, STRUCTURE, source)
    step, ways, _ = values[STRUCTURE]
    k_note = struct
    if step == inf.k:
        k_note = (f"{struct}; no step boundary within one instruction (K = {inf.k})" if source.k_is_instruction()
                  else f"{struct}; no step boundary up to K = {inf.k}: one step (None)")
    return {"k_step": k_note, "split_ways": struct,
            "split_stride": struct if ways > 1 else f"{struct}; unused with split_ways=1"}


def build_datapath(inf: DatapathInference, values: dict, source: VectorSource) -> Datapath:
    """The inferred Datapath with per-parameter provenance (K itself read as "one step" when the
    source's K is free)."""
    step, ways, stride = values[STRUCTURE]
    provenance = {"instruction": f"the source's instruction ({source.name})",
                  **_split_provenance(inf, source, values),
                  **{p: _provenance(inf, p, source) for p in SEARCHED if p != STRUCTURE}}
    if values["c_entry"] == "first_group":
        provenance["final_rounding"] += "; unused with c_entry=first_group"
    provenance["block_group"] = "unscaled vectors: no block scales (the block-scaled datapaths are inferred apart)"
    if step == inf.k and not source.k_is_instruction():
        step = None
    return Datapath(instruction=source.instruction(inf.in_fmt, inf.acc_fmt), k_step=step, split_ways=ways,
                    split_stride=stride, **{p: values[p] for p in SEARCHED if p != STRUCTURE}, provenance=provenance)


def outcome_report(inf: DatapathInference) -> dict:
    """JSON-able evidence for one datapath."""
    out = {}
    for p, o in inf.outcomes.items():
        allowed = [list(v) if isinstance(v, tuple) else v for v in o.allowed]
        out[p] = {"allowed": describe_allowed(p, o.allowed, inf.k), "values": allowed if len(allowed) <= 8 else None,
                  "stage": o.stage, "vectors": o.vectors, "chosen_by": o.chosen_by}
    return {"k": inf.k, "parameters": out, "notes": inf.notes,
            "directed_vectors": sum(len(pool) for pool in inf.pools)}


# ----------------------------------------------------------------------------- checks beyond the parameters


def confirm(source: VectorSource, dp: Datapath, in_fmt: str, acc_fmt: str, k: int, n: int, seed: int) -> dict:
    """Discriminating vectors of every family through the source and the inferred datapath."""
    if n <= 0:
        return {"vectors": 0}
    a, b, c, labels = mix(in_fmt, acc_fmt, k, n, np.random.default_rng(seed))
    got = _unsigned(source.evaluate(in_fmt, acc_fmt, a, b, c))
    want = _unsigned(inner_product(a, b, c, in_fmt, acc_fmt, _as_profile(dp, in_fmt, acc_fmt)))
    bad = got != want
    return {"vectors": int(n), "mismatches": int(bad.sum()),
            "mismatches_per_family": {FAMILIES[f]: int(v) for f, v in enumerate(np.bincount(labels[bad], minlength=len(FAMILIES))) if v}}


#: What a block-scaled datapath is searched over (docs/numerics.md, "Grouped block-scaled
#: accumulation"): the unscaled datapath with each product scaled on its own, or exact sub-sums of
#: G products (`block_group`) aligned at their scales' exponent and fused with c in one group of F
#: bits (MMA-Sim's kind::mxf4), its grid floor searched apart on vectors whose scales reach it.
BLOCK_GROUPS = (8, 16, 32)
BLOCK_ALIGN_BITS = range(20, 41)
BLOCK_FLOORS = (None, *range(-150, -190, -1))


def scaled_kinds(scaling: Scaling) -> tuple[str, ...]:
    """The block-scaled kinds that run a scaling (PTX ISA Tables 54-55): K 32 is kind::mxf8f6f4;
    K 64 with ue8m0 per 32 elements kind::mxf4 or mxf4nvf4; any other K 64 scaling mxf4nvf4."""
    if scaling.k <= 32:
        return ("mxf8f6f4",)
    return ("mxf4", "mxf4nvf4") if (scaling.scale_fmt, scaling.block) == ("ue8m0", 32) else ("mxf4nvf4",)


def _block_scale_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling, n: int, seed: int):
    """Scaled vectors (a, b, c, a_scale, b_scale) that separate the readings: random ones at scales
    2^-20 .. 2^20, and block-separating ones - B - B in block 0 at unit scale, y = 1 in block j scaled
    down by 2^-s (s = 1 .. 40): aligned with the products, y survives only within the alignment width
    of B; in a sub-sum aligned at its scales' exponent, within F bits of the unit scale."""
    k = scaling.k
    rng = np.random.default_rng(seed)
    blocks = k // scaling.block
    a, b, c, _ = mix(in_fmt, acc_fmt, k, n, rng, families=("random_finite", "cancellation", "alignment"))
    lo, hi = (127 - 20, 127 + 20) if scaling.scale_fmt == "ue8m0" else (0x08, 0x78)  # ue4m3: positive normal codes
    sa = rng.integers(lo, hi, (n, blocks)).astype(np.uint8)
    sb = rng.integers(lo, hi, (n, blocks)).astype(np.uint8)
    builder = Builder(in_fmt, acc_fmt, k)
    top = builder.product_exponents[1]
    unit = Builder.code(get_format(scaling.scale_fmt), 1.0)
    rows = []
    for j in range(1, blocks):
        for s_ in range(1, 41):
            down = Builder.code(get_format(scaling.scale_fmt), 2.0 ** -((s_ + 1) // 2))
            down2 = Builder.code(get_format(scaling.scale_fmt), 2.0 ** -(s_ // 2))
            if down is None or down2 is None:
                continue
            if builder.add({0: builder.product(top, 1), 1: builder.product(top, -1), j * scaling.block: builder.product(0, 1)}):
                scales_a = np.full(blocks, unit)
                scales_b = np.full(blocks, unit)
                scales_a[j], scales_b[j] = down, down2
                rows.append((scales_a, scales_b))
    if rows:
        da, db, dc = builder.arrays()
        a, b, c = np.concatenate([a, da]), np.concatenate([b, db]), np.concatenate([c, dc.view(c.dtype)])
        sa = np.concatenate([sa, np.array([r[0] for r in rows], np.uint8)])
        sb = np.concatenate([sb, np.array([r[1] for r in rows], np.uint8)])
    return a, b, c, sa, sb


def _floor_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling):
    """Directed scaled vectors that find the grid floor of a block-scaled datapath, c = 0, ue8m0 scales
    reaching below 2^-149: a term of 2^-149 (the smallest binary32 subnormal) and a negative one of
    -2^x, x from -150 down. A grid above 2^x cuts the negative term and the result is 2^-149; a finer
    one keeps it and the sum truncates to 0. With two blocks the terms sit in blocks 0 and 1 (x down
    to -189); with one, both in block 0 at scale 2^-150, x as low as the format's products reach.
    None for ue4m3 scales (they stop at 2^-9)."""
    if scaling.scale_fmt != "ue8m0":
        return None
    blocks = scaling.k // scaling.block
    builder = Builder(in_fmt, acc_fmt, scaling.k)
    fmt = get_format(scaling.scale_fmt)
    unit = Builder.code(fmt, 1.0)

    def scales(x0: int, x1: int | None):
        sa, sb = np.full(blocks, unit), np.full(blocks, unit)
        for j, x in ((0, x0), (1, x1)):
            if x is not None:
                sa[j], sb[j] = Builder.code(fmt, 2.0 ** (x // 2)), Builder.code(fmt, 2.0 ** (x - x // 2))
        return sa, sb

    rows = []
    if blocks >= 2:
        for x in range(-150, -190, -1):
            if builder.add({0: builder.product(0, 1), scaling.block: builder.product(0, -1)}):
                rows.append(scales(-149, x))
    else:
        low = builder.product_exponents[0]
        for e in range(-1, low - 1, -1):
            if builder.add({0: builder.product(1, 1), 1: builder.product(e, -1)}):
                rows.append(scales(-150, None))
    if not rows:
        return None
    a, b, c = builder.arrays()
    return a, b, c, np.array([r[0] for r in rows], np.uint8), np.array([r[1] for r in rows], np.uint8)


def _sub_sum_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling):
    """Directed scaled vectors that find the sub-sum size G: 1 - 1 in block 0 at scale 2^36 (a
    cancelled sub-sum that still sets the grid to 2^(36 - F)), then in block 1 at unit scale 3 at its
    first position and -1.5 d positions on (d = 4, 12, 20, 28 within the block): one sub-sum of 1.5
    truncates to 0, two of 3 and -1.5 keep 2 on a grid of 2. None without two blocks."""
    blocks = scaling.k // scaling.block
    if blocks < 2:
        return None
    builder = Builder(in_fmt, acc_fmt, scaling.k)
    fmt = get_format(scaling.scale_fmt)
    unit, big = Builder.code(fmt, 1.0), Builder.code(fmt, 2.0 ** 18)
    if big is None:
        return None
    rows = []
    for d in (d for d in (4, 12, 20, 28) if d < scaling.block):
        start = scaling.block
        if builder.add({0: builder.product(0, 1), 1: builder.product(0, -1), start: builder.product(1, 1, 1.5),
                        start + d: builder.product(0, -1, 1.5)}):
            sa, sb = np.full(blocks, unit), np.full(blocks, unit)
            sa[0] = sb[0] = big
            rows.append((sa, sb))
    if not rows:
        return None
    a, b, c = builder.arrays()
    return a, b, c, np.array([r[0] for r in rows], np.uint8), np.array([r[1] for r in rows], np.uint8)


def _scaled_results(dp: Datapath, kind: str, in_fmt: str, acc_fmt: str, scaling: Scaling, vectors) -> np.ndarray:
    a, b, c, sa, sb = vectors
    profile = Profile(name="hypothesis", description="block-scale hypothesis", datapaths={(in_fmt, acc_fmt): dp},
                      scaled_datapaths={(kind, in_fmt, acc_fmt): dp})
    return _unsigned(inner_product(a, b, c, in_fmt, acc_fmt, profile, a_scale=sa, b_scale=sb,
                                   scale_fmt=scaling.scale_fmt, kind=kind))


def infer_block_scaling(source: VectorSource, dp: Datapath, in_fmt: str, acc_fmt: str, scaling: Scaling,
                        n: int, seed: int) -> tuple[list[Datapath], dict]:
    """The block-scaled datapaths of one scaling that reproduce the source's scaled vectors: each
    product scaled on the unscaled datapath `dp` when that fits, else the grouped readings of
    `BLOCK_GROUPS` x `BLOCK_ALIGN_BITS` x `BLOCK_FLOORS` that fit (none: the list is empty), with
    the evidence."""
    kind = scaled_kinds(scaling)[0]
    sets = [v for v in (_block_scale_vectors(in_fmt, acc_fmt, scaling, n, seed), _sub_sum_vectors(in_fmt, acc_fmt, scaling),
                        _floor_vectors(in_fmt, acc_fmt, scaling)) if v is not None]
    observed = [_unsigned(source.evaluate(in_fmt, acc_fmt, a, b, c, a_scale=sa, b_scale=sb, scale_fmt=scaling.scale_fmt))
                for a, b, c, sa, sb in sets]

    def fits(cand: Datapath, which=None) -> bool:
        return all(np.array_equal(_scaled_results(cand, kind, in_fmt, acc_fmt, scaling, v), got)
                   for i, (v, got) in enumerate(zip(sets, observed)) if which is None or i in which)

    per_product = sum(int((_scaled_results(dp, kind, in_fmt, acc_fmt, scaling, v) != got).sum())
                      for v, got in zip(sets, observed))
    evidence = {"scale_fmt": scaling.scale_fmt, "block": scaling.block, "k": scaling.k, "kinds": list(scaled_kinds(scaling)),
                "vectors": int(sum(len(got) for got in observed)), "each_product_scaled_mismatches": per_product}
    floor_set = {len(sets) - 1} if _floor_vectors(in_fmt, acc_fmt, scaling) is not None else set()
    others = set(range(len(sets))) - floor_set
    found = []
    if fits(dp, others):
        found = [c for c in (replace(dp, align_floor=fl) for fl in dict.fromkeys((dp.align_floor, *BLOCK_FLOORS)))
                 if fits(c, floor_set)]
    if found:
        evidence["reading"] = "each product scaled on its own (the unscaled datapath)"
        evidence["fitting"] = [{"block_group": None, "align_frac_bits": dp.align_frac_bits, "align_floor": d.align_floor}
                               for d in found]
        return found, evidence
    for g in (g for g in BLOCK_GROUPS if scaling.block % g == 0):
        for f in BLOCK_ALIGN_BITS:
            cand = replace(dp, k_step=None, split_ways=1, split_stride=1, c_entry="first_group", block_group=g,
                           align_frac_bits=f, align_floor=None)
            if fits(cand, others):
                found += [c for c in (replace(cand, align_floor=fl) for fl in BLOCK_FLOORS) if fits(c, floor_set)]
    evidence["fitting"] = [{"block_group": d.block_group, "align_frac_bits": d.align_frac_bits, "align_floor": d.align_floor}
                           for d in found]
    evidence["reading"] = "grouped sub-sums" if found else "none"
    return found, evidence


def _chosen_scaled(source: VectorSource, kind_fits: dict, evidence: list[dict]) -> tuple[Datapath | None, str]:
    """The first reading every scaling of a kind admits, with its provenance; None when they share none."""
    common = [d for d in kind_fits[0] if all(any(_values(d) == _values(e) for e in fits) for fits in kind_fits[1:])]
    if not common:
        return None, ""
    vectors = sum(e["vectors"] for e in evidence)
    scalings = ", ".join(f"{e['scale_fmt']} block{e['block']} K = {e['k']}" for e in evidence)
    if common[0].block_group is None:
        why = f"inferred from {vectors} scaled vectors of {source.name} ({scalings}): each product scaled on its own"
        return replace(common[0], provenance={**common[0].provenance, "block_group": why}), why
    choice = "the only reading that fits" if len(common) == 1 else f"the first of {len(common)} readings that fit"
    why = (f"inferred from {vectors} scaled vectors of {source.name} ({scalings}): sub-sums of {common[0].block_group} "
           f"products, F = {common[0].align_frac_bits}, floor {common[0].align_floor} ({choice})")
    prov = {**common[0].provenance, **{p: why for p in ("k_step", "split_ways", "split_stride", "c_entry", "block_group",
                                                          "align_frac_bits", "align_floor")}}
    return replace(common[0], provenance=prov), why


def infer_int_overflow(source: VectorSource) -> tuple[str, str, dict]:
    """Wrap or saturate for s32 overflow without .satfinite: the largest products of one sign
    with c a little inside the int32 limit push the exact sum a little past it."""
    pairs = [p for p in source.pairs() if p[1] == "s32"]
    if not pairs:
        return "wrap", "not inferred: the source runs no integer kind; wrap (PTX mma without .satfinite) assumed", {}
    in_fmt, acc_fmt = pairs[0]
    k = source.k(in_fmt, acc_fmt)
    hi = 127 if in_fmt == "s8" else 255
    prod = hi * hi * k
    a = np.full((4, k), hi, dtype=np.int64)
    c = np.array([(1 << 31) - 1 - prod + 5, (1 << 31) - 1 - prod, -(1 << 31) + prod - 5, 7], dtype=np.int64)
    a[2:3] = -hi if in_fmt == "s8" else a[2:3]
    a[3] = 1
    a_codes = a.astype(storage_dtype(get_format(in_fmt)))
    got = source.evaluate(in_fmt, acc_fmt, a_codes, np.full((4, k), hi).astype(a_codes.dtype),
                          c.astype(np.int64).astype(np.int32), saturate=None).astype(np.int64)
    exact = (a * hi).sum(axis=1) + c
    wrap = ((exact + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    sat = np.clip(exact, -(1 << 31), (1 << 31) - 1)
    evidence = {"format": f"{in_fmt}->{acc_fmt}", "exact": exact.tolist(), "observed": got.tolist()}
    if np.array_equal(got, wrap):
        return "wrap", f"inferred from {source.name}: int32 overflow wraps (4 directed vectors, {in_fmt})", evidence
    if np.array_equal(got, sat):
        return "saturate", f"inferred from {source.name}: int32 overflow saturates (4 directed vectors, {in_fmt})", evidence
    raise Inconsistent(f"{in_fmt} -> s32: overflow neither wraps nor saturates: {evidence}")


# ----------------------------------------------------------------------------- whole profiles


@dataclass
class ProfileInference:
    """A profile inferred from a source and the evidence behind it (`report()` for JSON)."""

    profile: Profile
    inferences: dict[tuple[str, str], DatapathInference]
    checks: dict
    errors: dict[str, str]

    def report(self) -> dict:
        out = self.profile.as_dict()
        out["inference"] = {
            "datapaths": {f"{i}->{a}": outcome_report(inf) for (i, a), inf in self.inferences.items()},
            "checks": self.checks,
            "errors": self.errors,
        }
        return out


# ----------------------------------------------------------------------------- widened inputs

#: What an instruction may read an fp8 operand as before its datapath (`Profile.widened_inputs`):
#: itself, or f16, which holds e4m3 and e5m2 exactly (ptxas lowers warp-level fp8 MMA on sm_90a so,
#: A-MMA-SP-MIXED-FP8).
WIDENINGS = (None, "f16")


@dataclass
class WideningInference:
    """`widened_inputs` inferred from mixed fp8 vectors: the value, its provenance, the evidence."""

    value: dict[str, str]
    provenance: str
    evidence: dict


def widening_vectors(a_fmt: str, b_fmt: str, acc_fmt: str, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed mixed vectors (raw codes a, b [n, k], c [n]) in which widening an fp8 operand to f16
    changes the result: the largest product has a subnormal operand (which f16 holds as a normal
    number, so the product aligns up to 3 binades lower), and one tiny product (a smallest
    subnormal times a power of two, every exponent of the other format) sits at one of a few
    positions, above or below the alignment grid depending on which reading the datapath has.
    Both orders: the subnormal in A, and in B."""
    fa, fb = get_format(a_fmt), get_format(b_fmt)
    zero_a, zero_b = Builder.code(fa, 0.0), Builder.code(fb, 0.0)
    positions = sorted({p for p in (1, 2, 3, 4, 5, k // 2, k - 1) if 0 < p < k})
    rows_a, rows_b = [], []
    for small, big, small_in_a in ((fa, fb, True), (fb, fa, False)):
        unit = 2.0 ** (small.emin - small.frac_bits)  # the smallest subnormal
        subnormals = sorted({unit, unit * (1 << (small.frac_bits - 1)), unit * ((1 << small.frac_bits) - 1)})
        bigs = (2.0 ** big.emax, 1.5 * 2.0 ** (big.emax - 3))
        for x, y, e, sign, pos in itertools.product(subnormals, bigs, range(big.emin - big.frac_bits, big.emax + 1),
                                                    (1.0, -1.0), positions):
            codes = [Builder.code(small, x), Builder.code(big, y), Builder.code(small, sign * unit),
                     Builder.code(big, 2.0 ** e)]
            if None in codes:
                continue
            a = np.full(k, zero_a, np.int64)
            b = np.full(k, zero_b, np.int64)
            a[0], b[0] = (codes[0], codes[1]) if small_in_a else (codes[1], codes[0])
            a[pos], b[pos] = (codes[2], codes[3]) if small_in_a else (codes[3], codes[2])
            rows_a.append(a)
            rows_b.append(b)
    c = np.zeros(len(rows_a), np.uint64).astype(np.dtype(storage_dtype(get_format(acc_fmt)).str.replace("i", "u")))
    return (np.array(rows_a).astype(storage_dtype(fa)), np.array(rows_b).astype(storage_dtype(fb)), c)


def infer_widening(source: VectorSource, datapaths: dict[tuple[str, str], Datapath]) -> WideningInference:
    """Which fp8 formats the source widens to f16 before its datapaths (inferred above) read them:
    every combination of `WIDENINGS` per format is tried on the directed mixed vectors, and those
    reproducing every result are kept. A format whose reading no vector shows (e5m2, whose
    exponent field f16 shares) takes the reading of the other, which the same instruction
    reads; with no mixed pairs the source evaluates, nothing is widened, and the provenance says
    why. Inconsistent when no combination reproduces the source."""
    offered = mixed_pairs_of(source)
    triples = [t for t in offered if (t[0], t[2]) in datapaths and (t[1], t[2]) in datapaths]
    if not triples:
        why = ("the datapaths of no mixed pair's two formats were inferred (--formats)" if offered else
               "the source evaluates no mixed fp8 inputs")
        return WideningInference({}, f"not inferred: {why}, and vectors of one format cannot show a widening "
                                     "(docs/numerics.md, \"Widened inputs\")", {})
    formats = sorted({f for t in triples for f in t[:2]})
    observed = []
    for a_fmt, b_fmt, acc in triples:
        a, b, c = widening_vectors(a_fmt, b_fmt, acc, source.k(a_fmt, acc))
        observed.append((a_fmt, b_fmt, acc, a, b, c, _unsigned(source.evaluate_mixed(a_fmt, b_fmt, acc, a, b, c))))
    kept = []
    for choice in itertools.product(WIDENINGS, repeat=len(formats)):
        value = {f: w for f, w in zip(formats, choice) if w}
        profile = Profile("widening hypothesis", "", datapaths, widened_inputs=value, widened_inputs_provenance="hypothesis")
        if all(np.array_equal(_unsigned(inner_product(a, b, c, (fa, fb), acc, profile)), got)
               for fa, fb, acc, a, b, c, got in observed):
            kept.append(dict(zip(formats, choice)))
    vectors = sum(len(entry[-1]) for entry in observed)
    if not kept:
        raise Inconsistent(f"mixed fp8 inputs: no reading of {', '.join(formats)} (as themselves or widened to f16) "
                           f"reproduces the {vectors} directed mixed vectors")
    determined = {f: kept[0][f] for f in formats if len({h[f] for h in kept}) == 1}
    shown = set(determined.values())
    borrowed = shown.pop() if len(shown) == 1 else None
    chosen = next((h for h in kept if all(h[f] == borrowed for f in formats if f not in determined)), kept[0])
    value = {f: w for f, w in chosen.items() if w}
    open_formats = [f for f in formats if f not in determined]
    triples_text = ", ".join(f"{a} x {b} -> {acc}" for a, b, acc in triples)
    provenance = f"inferred from {vectors} directed mixed fp8 vectors ({triples_text})"
    if open_formats and determined:
        provenance += (f"; no vector shows how {', '.join(open_formats)} is read: read as "
                       f"{', '.join(sorted(determined))} is, by the same instruction")
    elif open_formats:
        provenance += "; no vector shows a widening: nothing is widened"
    return WideningInference(value, provenance, {"vectors": vectors, "kept": kept, "determined": determined,
                                                 "open": open_formats})


def infer_profile(source: VectorSource, name: str | None = None, *, formats: Iterable[str] | None = None,
                  confirm_vectors: int = CONFIRM_VECTORS, seed: int = 0, command: str = "",
                  log: Callable[[str], None] | None = None) -> ProfileInference:
    """Infer every datapath `source` runs (or those whose input format is in `formats`), fill the
    open parameters, check the rest of the model's behaviour, and assemble a Profile."""
    wanted = set(formats) if formats is not None else None
    pairs = [p for p in source.pairs() if p[1] != "s32" and (wanted is None or p[0] in wanted)]
    pairs.sort(key=lambda p: RANGE_ORDER.index(p[0]) if p[0] in RANGE_ORDER else len(RANGE_ORDER))
    inferences, errors = {}, {}
    for pair in pairs:
        if log:
            log(f"inferring {pair[0]} -> {pair[1]}")
        donors = [inferences[q] for q in inferences if q[1] == pair[1] and KIND.get(q[0]) == KIND.get(pair[0])]
        try:
            inferences[pair] = infer_datapath(source, *pair, donors=donors)
        except Inconsistent as e:
            errors[f"{pair[0]}->{pair[1]}"] = str(e)
    chosen = {}
    for pair in list(inferences):
        try:
            chosen[pair] = choose_one(inferences, pair)
        except Inconsistent as e:
            errors[f"{pair[0]}->{pair[1]}"] = str(e)
            del inferences[pair]
    datapaths = {pair: build_datapath(inferences[pair], values, source) for pair, values in chosen.items()}
    checks: dict[str, Any] = {}
    scaled: dict[tuple[str, str, str], Datapath] = {}
    pending: dict[tuple[str, str, str], list] = {}  # (kind, input, accumulator): each scaling's fitting datapaths
    for (in_fmt, acc_fmt), dp in datapaths.items():
        key = f"{in_fmt}->{acc_fmt}"
        k = inferences[(in_fmt, acc_fmt)].k
        checks[key] = {"confirmation": confirm(source, dp, in_fmt, acc_fmt, k, confirm_vectors, seed)}
        by_kind: dict[str, list] = {}
        for scaling in (source.scalings(in_fmt) if acc_fmt == "f32" else ()):  # block-scaled kinds accumulate into f32
            fits, evidence = infer_block_scaling(source, dp, in_fmt, acc_fmt, scaling, 1024, seed)
            checks[key].setdefault("block_scales", []).append(evidence)
            if not fits:
                errors[f"{key} {scaling.scale_fmt} block{scaling.block} K={scaling.k}"] = (
                    f"no block-scaled datapath reproduces the source's {evidence['vectors']} scaled vectors (each product "
                    f"scaled: {evidence['each_product_scaled_mismatches']} mismatches; sub-sums of {BLOCK_GROUPS} products "
                    f"at F = {BLOCK_ALIGN_BITS.start}..{BLOCK_ALIGN_BITS.stop - 1}: none)")
            for kind in scaled_kinds(scaling):
                by_kind.setdefault(kind, []).append((fits, evidence))
        for kind, found in by_kind.items():
            if all(fits for fits, _ in found):
                pending[(kind, in_fmt, acc_fmt)] = found
    for (kind, in_fmt, acc_fmt), found in pending.items():
        # the formats of one kind lend each other the grid floor their own products cannot reach
        floors = [{d.align_floor for fits, _ in f for d in fits} for (k, _, a), f in pending.items() if (k, a) == (kind, acc_fmt)]
        common = set.intersection(*floors)
        lists = [[d for d in fits if not common or d.align_floor in common] for fits, _ in found]
        chosen, _ = _chosen_scaled(source, lists, [e for _, e in found])
        if chosen is None:
            errors[f"kind::{kind} {in_fmt}->{acc_fmt}"] = "its scalings admit no common block-scaled datapath"
        else:
            scaled[(kind, in_fmt, acc_fmt)] = chosen
    overflow, overflow_provenance, evidence = "wrap", "", {}
    if wanted is None or wanted & {"s8", "u8"}:
        try:
            overflow, overflow_provenance, evidence = infer_int_overflow(source)
        except Inconsistent as e:
            errors["s32"] = str(e)
    if evidence:
        checks["int_overflow"] = evidence
    try:
        widening = infer_widening(source, datapaths)
    except Inconsistent as e:
        errors["widened_inputs"] = str(e)
        widening = WideningInference({}, f"not inferred: {e}", {})
    if widening.evidence:
        checks["widened_inputs"] = widening.evidence
    provenance = {**source.provenance(), "tool": "tcgen05-conformance numerics infer"}
    if command:
        provenance["command"] = command
    profile = Profile(name=name or f"{source.name} (inferred)",
                      description=f"inferred by directed feature tests from {source.name}",
                      datapaths=datapaths, int_overflow=overflow,
                      int_overflow_provenance=overflow_provenance or "not inferred (no integer kind asked for); wrap assumed",
                      unsupported=source.unsupported(), provenance=provenance,
                      widened_inputs=widening.value, widened_inputs_provenance=widening.provenance,
                      scaled_datapaths=scaled)
    return ProfileInference(profile, inferences, checks, errors)


def _values(dp: Datapath) -> tuple:
    return tuple(getattr(dp, p) for p in PARAMETERS if p != "instruction")


# ----------------------------------------------------------------------------- recorded vectors


@dataclass
class RecordedInference:
    """Every datapath consistent with one recorded result file, as allowed values per parameter."""

    file: str
    in_fmt: str
    acc_fmt: str
    k: int
    vectors: int
    family: str
    allowed: dict[str, list]
    consistent: list[dict]  # datapaths reproducing every vector (one per class of values that act alike on the data)
    unexercised: dict[str, str]  # parameters no vector of the file can show, with the reason
    record: Any = field(default=None, repr=False)  # the RecordedFile searched

    #: What the search does not try, to stay affordable (one model evaluation per candidate):
    #: with c added after the groups (and c nonzero) the results bound no group precision, and
    #: trying every precision multiplies the candidates by 23; there only the accumulator's is tried.
    unsearched = {"group_precision": "with c_entry=final_add only the accumulator's precision is tried (the "
                                     "directed tests search all)"}

    def report(self) -> dict:
        return {
            "file": self.file, "input": self.in_fmt, "accumulator": self.acc_fmt, "k": self.k, "vectors": self.vectors,
            "recorded_with": self.family, "consistent_datapaths": len(self.consistent),
            "not_searched": self.unsearched if any(c["c_entry"] == "final_add" for c in self.consistent) else {},
            "parameters": {p: {"allowed": describe_allowed(p, v, self.k),
                               "determined": len(v) == 1 and p not in self.unexercised,
                               **({"not_exercised": self.unexercised[p]} if p in self.unexercised else {})}
                           for p, v in self.allowed.items()},
        }


def _unexercised(rec, k: int, fa: FloatFormat) -> dict[str, str]:
    """Parameters whose values cannot change any result of a recorded file, with the reason:
    no subnormal operand or c; no result near or below the accumulator's normal range; no
    zero result; no group reaching a grid below the accumulator's subnormal unit."""
    fi = get_format(rec.in_fmt)
    out = {}
    da, db, dc, dd = decode(rec.a, fi), decode(rec.b, fi), decode(rec.c, fa), decode(rec.d, fa)
    sub = lambda d, f: (d.mant > 0) & (d.mant < (1 << f.frac_bits))  # noqa: E731
    if not (sub(da, fi).any() or sub(db, fi).any() or sub(dc, fa).any()):
        out["subnormal_inputs"] = "no subnormal operand or c in the file"
    if not ((dd.mant < (1 << fa.frac_bits)) | (dd.aexp <= fa.emin + 1)).any():
        out["subnormal_outputs"] = "no result is zero, subnormal or within two binades of the smallest normal"
    if not (dd.mant == 0).any():
        out["zero_sign"] = "no zero result"
    nz = (da.mant != 0) & (db.mant != 0)
    top = np.where(nz, da.aexp + db.aexp, -(1 << 30)).max(axis=1)
    top = np.maximum(top, np.where(dc.mant != 0, dc.aexp, -(1 << 30)))
    if not (top - F_MAX < fa.emin - fa.precision).any():
        out["align_floor"] = f"no vector's largest term lies within {F_MAX} binades of the subnormal range"
    return out


def infer_recorded_file(rec, log: Callable[[str], None] | None = None) -> RecordedInference:
    """Search every datapath of the model against one recorded file: structures of K, c entry,
    alignment width (classes that act alike on the file), precision, rounding, and the rarely
    exercised parameters only where the file exercises them. With c in the first group the
    result is a group's rounding, so its precision is at least the results' significant bits."""
    fa = get_format(rec.acc_fmt)
    k = rec.a.shape[1]
    pool = Pool("recorded", rec.a, rec.b, rec.c, _unsigned(rec.d))
    span, _ = pool_span(pool, rec.in_fmt, rec.acc_fmt)
    unexercised = _unexercised(rec, k, fa)
    inf = DatapathInference(rec.in_fmt, rec.acc_fmt, k, source=None)  # outcomes only: the file is the pool
    bits = significant_bits(pool.observed, rec.acc_fmt)
    early = slice(0, min(RECORDED_EARLY_ROWS, len(pool)))
    early_pool = Pool("recorded", rec.a[early], rec.b[early], rec.c[early], pool.observed[early])
    early_span, _ = pool_span(early_pool, rec.in_fmt, rec.acc_fmt)
    # Widths that act alike on the first rows are tried there once; survivors are split into
    # the classes that act alike on the whole file.
    f_early: dict[Any, list] = {}
    for f in inf.allowed("align_frac_bits"):
        f_early.setdefault(_f_classes(early_span)(f), []).append(f)
    rare = [p for p in ("subnormal_inputs", "subnormal_outputs", "align_floor", "zero_sign") if p not in unexercised]
    rare_values = {p: inf.allowed(p) for p in rare}
    if "align_floor" in rare_values:
        rare_values["align_floor"] = [None, *range(fa.emin - fa.precision - 1, fa.emin - fa.precision - 17, -1)]
    kept: dict[str, set] = {p: set() for p in SEARCHED}
    consistent: list[dict] = []
    c_zero = not (pool.c != 0).any()
    for c_entry, final in (("first_group", "rne"), ("final_add", "rne"), ("final_add", "rz")):
        shapes = inf.allowed(STRUCTURE)
        if c_entry == "first_group":
            seen: dict[tuple, tuple] = {}
            for s in sorted(shapes, key=lambda s: (s[1], s[0], s[2])):
                seen.setdefault(tuple(map(tuple, groups_of(k, s))), s)
            shapes = list(seen.values())
        for shape in shapes:
            # The result is a group's rounding when c joins the first group, or when c is zero and
            # one step holds every product: then it has at most p significant bits, and at most
            # F + log2(K + 1) + 2 (a group's terms lie within F bits of its largest, plus carries).
            last_is_group = c_entry == "first_group" or (c_zero and shape[0] >= k)
            if last_is_group:
                precisions = [p for p in inf.allowed("group_precision") if (p or fa.precision) >= bits]
            else:  # not searched: see RecordedInference.unsearched
                precisions = [None]
            f_floor = bits - int(math.log2(k + 1)) - 2 if last_is_group else 0
            widths = [fs for fs in f_early.values() if fs[-1] is None or fs[-1] >= f_floor]
            for fs_early, p, r in itertools.product(widths, precisions, ("rz", "rne")):
                for rare_combo in itertools.product(*rare_values.values()):
                    values = {**{q: _neutral(inf, q) for q in SEARCHED}, STRUCTURE: shape, "c_entry": c_entry,
                              "final_rounding": final, "align_frac_bits": fs_early[0], "group_precision": p,
                              "group_rounding": r, **dict(zip(rare_values, rare_combo))}
                    if not np.array_equal(inf.predict(values, early_pool), early_pool.observed):
                        continue
                    f_full: dict[Any, list] = {}
                    for f in fs_early:
                        f_full.setdefault(_f_classes(span)(f), []).append(f)
                    for fs in f_full.values():
                        values["align_frac_bits"] = fs[0]
                        if not np.array_equal(inf.predict(values, pool), pool.observed):
                            continue
                        consistent.append(dict(values))
                        for q, v in values.items():
                            kept[q].update([_hashable(x) for x in fs] if q == "align_frac_bits" else [_hashable(v)])
                        if c_entry == "first_group":
                            kept["final_rounding"].update(["rne", "rz"])
    allowed = {}
    for q in SEARCHED:
        if q in unexercised:
            allowed[q] = list(inf.allowed(q))
        elif q == "align_floor":
            allowed[q] = [v for v in rare_values["align_floor"] if _hashable(v) in kept[q]]
        else:
            allowed[q] = [v for v in inf.allowed(q) if _hashable(v) in kept[q]]
    if log:
        log(f"{rec.path}: {len(consistent)} consistent datapaths")
    return RecordedInference(str(rec.path), rec.in_fmt, rec.acc_fmt, k, len(pool), rec.recording.instruction, allowed, consistent,
                             unexercised, rec)


def infer_recorded(path, log: Callable[[str], None] | None = None, formats: Iterable[str] | None = None) -> list[RecordedInference]:
    """`infer_recorded_file` for every result file under a recorded folder (GPU or format folder)."""
    from tcgen05_conformance.oracles.numerics.vectors import find_folders, load_folder

    wanted = set(formats) if formats is not None else None
    out = []
    for folder in find_folders(path):
        for rec in load_folder(folder):
            if wanted is None or rec.in_fmt in wanted:
                out.append(infer_recorded_file(rec, log))
    return out


def recorded_datapath(r: RecordedInference) -> Datapath:
    """One datapath consistent with a recorded file: parameter by parameter (in SEARCHED order),
    the neutral value where the consistent datapaths left allow it, else their first value."""
    left = list(r.consistent)
    if not left:
        raise Inconsistent(f"{r.file}: no datapath of the model reproduces every recorded vector")
    chosen, provenance = {}, {}
    for p in SEARCHED:
        if p in r.unexercised:
            chosen[p] = NEUTRAL.get(p, r.allowed[p][0])
            provenance[p] = f"not exercised by {r.file} ({r.unexercised[p]}); neutral value"
            continue
        options = [c[p] for c in left]
        neutral = (r.k, 1, 1) if p == STRUCTURE else NEUTRAL[p]
        value = neutral if neutral in options else options[0]
        left = [c for c in left if c[p] == value]
        chosen[p] = value
        allowed = describe_allowed(p, r.allowed[p], r.k)
        provenance[p] = (f"inferred from {r.file} ({r.vectors} recorded vectors): the only value consistent with them"
                         if len(r.allowed[p]) == 1 else f"{r.file} allows {allowed}; chosen")
    step, ways, stride = chosen[STRUCTURE]
    struct = provenance.pop(STRUCTURE)
    if step == r.k:
        struct += f"; one step of all K = {r.k} recorded products (longer steps cannot show)"
    provenance.update({"instruction": f"the recording's ({r.family})", "k_step": struct, "split_ways": struct,
                       "split_stride": struct, "block_group": "not recorded: the recordings hold no block scales"})
    return Datapath(instruction=f"{r.family} (recorded)", k_step=step, split_ways=ways, split_stride=stride,
                    **{p: chosen[p] for p in SEARCHED if p != STRUCTURE}, provenance=provenance)


# ----------------------------------------------------------------------------- command line


#: What `--instruction` may name per backend, the first being the default.
INSTRUCTIONS = {"hopper": ("wgmma", "mma.sync"), "blackwell": ("tcgen05",)}


def source_for_backend(spec: str, instruction: str | None = None, profile: str | None = None) -> VectorSource | str:
    """The vector source a `--backend` names: `oracle` (the numeric model computing with
    `profile`, in its variant for `instruction`), `hopper` (silicon: `instruction` wgmma or
    mma.sync) or `blackwell` (tcgen05), `sim:CMD` (a numeric simulator over the line protocol),
    `MODULE:FACTORY` (a callable given `profile=` that returns a VectorSource), or recorded vectors
    (`recorded:DIR`, DIR a folder or a GPU folder's name under the shipped recordings, or a folder
    given as it is), returned as the folder's path. ValueError (one line) for a spec that names
    none of these; SourceUnavailable when the silicon is not here."""
    from tcgen05_conformance.numerics.sources import GpuSource, ModelSource
    from tcgen05_conformance.oracles.numerics.profiles import for_instruction
    from tcgen05_conformance.oracles.numerics.vectors import RECORDINGS

    if instruction is not None and spec in INSTRUCTIONS and instruction not in INSTRUCTIONS[spec]:
        raise ValueError(f"--instruction {instruction}: the {spec} backend runs {' or '.join(INSTRUCTIONS[spec])}")
    if spec == "oracle":
        if profile is None:
            raise ValueError("--backend oracle computes with a numeric profile: give --profile (a name or a profile file)")
        return ModelSource(for_instruction(profile, instruction.replace(".", "_")) if instruction else profile)
    if spec in INSTRUCTIONS:
        return GpuSource(instruction or INSTRUCTIONS[spec][0])
    if spec == "ptxas":
        raise ValueError("--backend ptxas observes whether programs assemble, not the results of inner products")
    kind, _, arg = spec.partition(":")
    if kind == "sim" and arg:
        return SimulatorSource(arg)
    if kind == "recorded":
        path = Path(arg) if arg else RECORDINGS
        if arg and not path.exists() and (RECORDINGS / arg).exists():
            path = RECORDINGS / arg
        if not path.is_dir():
            raise ValueError(f"--backend {spec}: {path} is not a folder of recorded vectors (the shipped ones: "
                             f"{', '.join(sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir()))})")
        return str(path)
    if ":" not in spec and Path(spec).is_dir():
        return spec
    if kind and arg and "/" not in spec:
        return _plugin_source(kind, arg, profile)
    raise ValueError(f"--backend {spec!r}: expected oracle, hopper, blackwell, sim:CMD, MODULE:FACTORY, recorded:DIR or "
                     "a folder of recorded vectors")


def _plugin_source(module: str, factory: str, profile: str | None) -> VectorSource:
    """A plugin's vector source: `module.factory(profile=profile)`, which must evaluate inner
    products (`tcgen05_conformance.numerics.sources.VectorSource`)."""
    import importlib

    try:
        made = getattr(importlib.import_module(module), factory)(profile=profile)
    except (ImportError, AttributeError, TypeError) as e:
        raise ValueError(f"--backend {module}:{factory}: cannot make a vector source ({e})") from None
    missing = [m for m in ("pairs", "evaluate", "k", "provenance") if not callable(getattr(made, m, None))]
    if missing:
        raise ValueError(f"--backend {module}:{factory}: gave a {type(made).__name__}, not a vector source "
                         f"(no {', '.join(missing)}; see conformance/numerics/sources.py)")
    return made


def replay_recorded(source: VectorSource, path) -> list[dict]:
    """Every recorded result file under `path` whose pair the source runs, evaluated by the source
    (silicon's inner products through a simulator, say): vectors and mismatches per file."""
    from tcgen05_conformance.oracles.numerics.vectors import find_folders, load_folder

    out = []
    runs = set(source.pairs())
    for folder in find_folders(path):
        for rec in load_folder(folder):
            if (rec.in_fmt, rec.acc_fmt) not in runs:
                out.append({"file": str(rec.path), "skipped": f"the source does not run {rec.in_fmt}->{rec.acc_fmt}"})
                continue
            refused: dict[int, str] = {}
            got = _evaluate(source, rec.in_fmt, rec.acc_fmt, rec.a, rec.b, rec.c, refused)
            wrong = got != _unsigned(rec.d)
            wrong[list(refused)] = True
            bad = np.flatnonzero(wrong)
            out.append({"file": str(rec.path), "input": rec.in_fmt, "accumulator": rec.acc_fmt, "recorded_with": rec.recording.instruction,
                        "vectors": int(len(got)), "mismatches": int(len(bad)), "first_mismatch_lines": [int(i) + 1 for i in bad[:5]],
                        **_refusals(refused)})
    return out


def _evaluate(source: VectorSource, in_fmt: str, acc: str, a, b, c, refused: dict[int, str]) -> np.ndarray:
    """The source's results as unsigned codes; a simulator's refusals (`error` replies) go into
    `refused` (a source that cannot refuse takes no such argument)."""
    if isinstance(source, SimulatorSource):
        return _unsigned(source.evaluate(in_fmt, acc, a, b, c, refused=refused))
    return _unsigned(source.evaluate(in_fmt, acc, a, b, c))


def _refusals(refused: dict[int, str]) -> dict:
    """How many requests a simulator refused (counted as mismatches), and the first refusal."""
    if not refused:
        return {}
    first = min(refused)
    return {"refused": len(refused), "first_refusal": {"vector": first + 1, "error": refused[first]}}


def agreement(source: VectorSource, profile: str, recorded: Sequence[str], vectors: int, seed: int,
              formats: Iterable[str] | None = None) -> dict:
    """How a source (a third-party model, say) agrees with a profile and with silicon: per
    (input, accumulator) pair it runs, `vectors` discriminating vectors (every family of
    `tcgen05_conformance.generators.numeric_vectors`, K the source's) against the profile's results, with the
    mismatches per family; the same for every block scaling (with discriminating scales,
    `draw_scales`, against the profile's datapath of the scaling's kind) and every mixed pair it
    runs; and every recorded file under `recorded` replayed through it."""
    from tcgen05_conformance.oracles.numerics.profiles import get_profile

    wanted = set(formats) if formats is not None else None
    pairs = []
    for i, (in_fmt, acc) in enumerate(source.pairs()):
        if wanted is not None and in_fmt not in wanted:
            continue
        k = source.k(in_fmt, acc)
        a, b, c, labels = mix(in_fmt, acc, k, vectors, np.random.default_rng([seed, i]))
        try:
            want = inner_product(a, b, c, in_fmt, acc, get_profile(profile))
        except ValueError as e:  # the profile has no such datapath
            pairs.append({"input": in_fmt, "accumulator": acc, "k": k, "skipped": str(e)})
            continue
        refused: dict[int, str] = {}
        bad = _evaluate(source, in_fmt, acc, a, b, c, refused) != _unsigned(want)
        bad[list(refused)] = True
        pairs.append({"input": in_fmt, "accumulator": acc, "k": k, "vectors": int(len(bad)), "mismatches": int(bad.sum()),
                      "mismatches_per_family": {FAMILIES[f]: int(n) for f, n in enumerate(np.bincount(labels[bad],
                                                                                                 minlength=len(FAMILIES))) if n},
                      **_refusals(refused)})
    pairs += _scaled_and_mixed_agreement(source, get_profile(profile), vectors, seed, wanted)
    replays = [r for folder in recorded for r in replay_recorded(source, folder) if wanted is None or r.get("input") in wanted]
    return {"source": dict(source.provenance()), "profile": profile, "seed": seed, "discriminating": pairs, "recorded": replays,
            "mismatches": sum(p.get("mismatches", 0) for p in pairs) + sum(r.get("mismatches", 0) for r in replays)}


def _scaled_and_mixed_agreement(source: VectorSource, profile: Profile, vectors: int, seed: int,
                                wanted: set | None) -> list[dict]:
    """`agreement`'s entries for the source's block scalings and mixed input pairs."""
    out = []
    for i, (in_fmt, acc) in enumerate(source.pairs()):
        if acc != "f32" or (wanted is not None and in_fmt not in wanted):
            continue
        for j, scaling in enumerate(source.scalings(in_fmt)):
            rng = np.random.default_rng([seed, i, j, 1])
            a, b, c, labels = mix(in_fmt, acc, scaling.k, vectors, rng)
            sa, sb = draw_scales(scaling.scale_fmt, vectors, scaling.k // scaling.block, rng)
            order = rng.permutation(vectors)
            sa, sb = sa[order], sb[order]
            kind = scaled_kinds(scaling)[0]
            entry = {"input": in_fmt, "accumulator": acc, "k": scaling.k, "kind": kind, "scale_fmt": scaling.scale_fmt,
                     "block": scaling.block}
            try:
                want = _unsigned(inner_product(a, b, c, in_fmt, acc, profile, a_scale=sa, b_scale=sb,
                                               scale_fmt=scaling.scale_fmt, kind=kind))
            except ValueError as e:
                out.append({**entry, "skipped": str(e)})
                continue
            got = _unsigned(source.evaluate(in_fmt, acc, a, b, c, a_scale=sa, b_scale=sb, scale_fmt=scaling.scale_fmt))
            out.append({**entry, **_mismatches(got != want, labels)})
    for a_fmt, b_fmt, acc in mixed_pairs_of(source):
        if wanted is not None and a_fmt not in wanted and b_fmt not in wanted:
            continue
        k = source.k(a_fmt, acc)
        a, b, c, labels = mix((a_fmt, b_fmt), acc, k, vectors, np.random.default_rng([seed, 2, len(out)]))
        entry = {"input": a_fmt, "b_input": b_fmt, "accumulator": acc, "k": k}
        try:
            want = _unsigned(inner_product(a, b, c, (a_fmt, b_fmt), acc, profile))
        except ValueError as e:
            out.append({**entry, "skipped": str(e)})
            continue
        out.append({**entry, **_mismatches(_unsigned(source.evaluate_mixed(a_fmt, b_fmt, acc, a, b, c)) != want, labels)})
    return out


def _mismatches(bad: np.ndarray, labels: np.ndarray) -> dict:
    return {"vectors": int(len(bad)), "mismatches": int(bad.sum()),
            "mismatches_per_family": {FAMILIES[f]: int(n) for f, n in enumerate(np.bincount(labels[bad], minlength=len(FAMILIES))) if n}}


def compare_profiles(inferred: Profile, reference: Profile) -> list[dict]:
    """Parameter by parameter, every datapath of `inferred` against `reference` (the instruction
    description aside), its block-scaled datapaths against the reference's of their kind (or the
    unscaled one), and the widened inputs: one entry per difference, and per datapath the reference
    lacks."""
    out = []
    pairs = [(f"{i}->{a}", dp, i, a, None) for (i, a), dp in inferred.datapaths.items()]
    pairs += [(f"{k}:{i}->{a}", dp, i, a, k) for (k, i, a), dp in inferred.scaled_datapaths.items()]
    for name, dp, i, a, kind in pairs:
        try:
            ref = datapath_of(reference, i, i, a, kind)
        except ValueError as e:
            out.append({"datapath": name, "parameter": None, "inferred": None, "reference": str(e)})
            continue
        for p in PARAMETERS:
            if p != "instruction" and getattr(dp, p) != getattr(ref, p):
                out.append({"datapath": name, "parameter": p, "inferred": getattr(dp, p), "reference": getattr(ref, p)})
    if dict(inferred.widened_inputs) != dict(reference.widened_inputs):
        out.append({"datapath": "inputs", "parameter": "widened_inputs", "inferred": dict(inferred.widened_inputs),
                    "reference": dict(reference.widened_inputs)})
    if inferred.int_overflow != reference.int_overflow:
        out.append({"datapath": "s32", "parameter": "int_overflow", "inferred": inferred.int_overflow,
                    "reference": reference.int_overflow})
    return out


def run_command(args, command: str) -> tuple[dict, int]:
    """`numerics infer` for parsed arguments (`conformance/cli/numerics.py`): (report, exit status).
    SourceUnavailable when the backend's silicon is not on this machine."""
    from tcgen05_conformance.oracles.numerics.profiles import get_profile

    formats = [f.strip() for f in args.formats.split(",")] if args.formats else None
    source = source_for_backend(args.backend, args.instruction, args.profile)
    if isinstance(source, str):
        results = infer_recorded(source, formats=formats)
        datapaths = {}
        for r in results:
            try:
                datapaths[(r.in_fmt, r.acc_fmt)] = recorded_datapath(r)
            except Inconsistent:
                continue
        profile = Profile(name=args.name or f"recorded:{Path(source).name} (inferred)",
                          description=f"inferred from the recorded vectors in {source}", datapaths=datapaths,
                          int_overflow="wrap", int_overflow_provenance="not recorded; wrap assumed",
                          provenance={"source": f"recorded:{source}", "command": command,
                                      "tool": "tcgen05-conformance numerics infer",
                                      **({"target": RECORDED_TARGETS[Path(source).name]}
                                         if Path(source).name in RECORDED_TARGETS else {})})
        report = {**profile.as_dict(), "inference": {"recorded": [r.report() for r in results]}}
        if not datapaths:  # an empty profile judges nothing: not a result to exit 0 with
            report["inference"]["errors"] = {"datapaths": f"no datapath of the model fits the vectors recorded in {source}"
                                             f" ({len(results)} recorded format pairs{', --formats ' + args.formats if formats else ''})"}
    else:
        try:
            result = infer_profile(source, args.name, formats=formats, confirm_vectors=args.confirm, seed=args.seed,
                                   command=command, log=None if args.json else (lambda m: print(m, file=sys.stderr)))
            profile, report = result.profile, result.report()
            if args.recorded:
                report["recorded_replay"] = replay_recorded(source, args.recorded)
        finally:
            if hasattr(source, "close"):
                source.close()
    status = 0
    if args.compare:
        differences = compare_profiles(profile, get_profile(args.compare))
        report["comparison"] = {"reference": args.compare, "differences": differences}
        status = 1 if differences else 0
    errors = report.get("inference", {}).get("errors")
    if errors:
        status = 1
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=_json_default) + "\n", encoding="utf-8")
    return report, status


#: The target a recorded GPU folder's silicon runs (a profile inferred from it judges that target's programs).
RECORDED_TARGETS = {"B200": "sm_100a", "H100": "sm_90a", "H200": "sm_90a"}


def _json_default(x):
    if isinstance(x, (np.integer, np.bool_)):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON-able")


def summary_lines(report: dict) -> list[str]:
    """A short human summary of an inference report."""
    if "skipped" in report:
        return [f"skipped: {report['skipped']}"]
    lines = [f"profile {report['name']}: {len(report['datapaths'])} datapaths"]
    inference = report.get("inference", {})
    for key, dp in report["datapaths"].items():
        values = {p: v["value"] for p, v in dp.items() if p != "instruction"}
        open_ = []
        if "datapaths" in inference:
            params = inference["datapaths"][key]["parameters"]
            open_ = [p for p, o in params.items() if o["chosen_by"] != "determined"]
            checks = inference["checks"].get(key, {})
            conf = checks.get("confirmation", {})
            values["confirmation"] = f"{conf.get('mismatches', '-')} of {conf.get('vectors', 0)} mismatches"
        lines.append(f"  {key}: " + ", ".join(f"{p}={v}" for p, v in values.items()) + (f"; open: {', '.join(open_)}" if open_ else ""))
    if "widened_inputs" in report:
        widened = report["widened_inputs"]
        lines.append(f"  widened inputs: {widened['value'] or 'none'} ({widened['provenance']})")
    for r in inference.get("recorded", []):
        determined = [p for p, v in r["parameters"].items() if v["determined"]]
        lines.append(f"  {r['file']}: {r['consistent_datapaths']} consistent datapaths; determined: {', '.join(determined)}")
    for r in report.get("recorded_replay", []):
        lines.append(f"  recorded {r['file']}: " + (r["skipped"] if "skipped" in r else f"{r['mismatches']} of {r['vectors']} differ"))
    for key, e in inference.get("errors", {}).items():
        lines.append(f"  ERROR {key}: {e}")
    for d in report.get("comparison", {}).get("differences", []):
        lines.append(f"  differs from {report['comparison']['reference']}: {d['datapath']} {d['parameter']}: "
                     f"inferred {d['inferred']}, reference {d['reference']}")
    if "comparison" in report and not report["comparison"]["differences"]:
        lines.append(f"  equal to {report['comparison']['reference']}, parameter for parameter")
    return lines
