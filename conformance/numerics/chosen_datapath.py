"""From one datapath's outcomes to a `Datapath`: the parameters the directed vectors leave open are
filled from a donor of the same instruction kind and accumulator or a neutral value (`choose_one`),
and the result is written out with per-parameter provenance and evidence (`build_datapath`,
`outcome_report`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tcgen05_conformance.numerics.feature_tests import DatapathInference
from tcgen05_conformance.numerics.hypotheses import KIND, NEUTRAL, SEARCHED, STRUCTURE, Inconsistent
from tcgen05_conformance.numerics.sources import VectorSource
from tcgen05_conformance.oracles.numerics.profiles import Datapath

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
