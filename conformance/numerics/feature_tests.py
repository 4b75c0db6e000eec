"""The directed feature tests that infer one unscaled datapath: `DatapathInference` keeps each
parameter's allowed values and drops those the source's results rule out, and the stages (`STAGES`,
run by `infer_datapath`) build the vectors that settle the parameters one after another."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from tcgen05_conformance.core.formats import get_format
from tcgen05_conformance.numerics.directed_vectors import Builder, pool_span, significant_bits
from tcgen05_conformance.numerics.hypotheses import (F_MAX, SEARCHED, STRUCTURE, Inconsistent, Outcome, Pool, _as_profile,
                                                     _unsigned, datapath, groups_of, structures)
from tcgen05_conformance.numerics.sources import VectorSource
from tcgen05_conformance.oracles.numerics import inner_product

EARLY_ROWS = 48  # rows each hypothesis meets first; most hypotheses fail there


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
