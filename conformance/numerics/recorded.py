"""Inference from recorded vectors, which cannot be chosen (`infer_recorded`): every datapath of the
model is searched against each recorded file, the report says which parameters the data determines
and which it leaves open, and `recorded_datapath` picks one consistent datapath."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, decode, get_format
from tcgen05_conformance.numerics.chosen_datapath import _neutral, describe_allowed
from tcgen05_conformance.numerics.directed_vectors import pool_span, significant_bits
from tcgen05_conformance.numerics.feature_tests import DatapathInference, _f_classes, _hashable
from tcgen05_conformance.numerics.hypotheses import (F_MAX, NEUTRAL, SEARCHED, STRUCTURE, Inconsistent, Pool, _unsigned,
                                                     groups_of)
from tcgen05_conformance.oracles.numerics.profiles import Datapath

RECORDED_EARLY_ROWS = 6  # random recorded vectors each expose most parameters: few suffice to reject


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
