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

This module is the driver (`infer_profile`, `run_command`); the parts live beside it: the search
space in `hypotheses`, the vectors in `directed_vectors`, the stages in `feature_tests`, the choice
of open parameters in `chosen_datapath`, block scales in `block_scaled`, fp8 widening in `widening`,
recorded vectors in `recorded`, `numerics agree` in `agree` and the `--backend` sources in `backends`.

    tcgen05-conformance numerics infer --backend oracle --profile sm_90a --out sm_90a.inferred.json
    tcgen05-conformance numerics infer --backend hopper --out h100-wgmma.json       (on an H100)
    tcgen05-conformance numerics infer --backend recorded:B200 --json
    tcgen05-conformance numerics agree --backend sim:'python examples/numeric_simulators/khattak_mikaitis.py MODELS B200TC' \
        --profile sm_100a --recorded oracles/numerics/recordings/tensor-core-vectors/B200
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from tcgen05_conformance.core.formats import get_format, storage_dtype
from tcgen05_conformance.numerics.sources import VectorSource
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.model import datapath_of
from tcgen05_conformance.generators.numeric_vectors import FAMILIES, mix
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS, Datapath, Profile
from tcgen05_conformance.numerics.hypotheses import KIND, Inconsistent, _as_profile, _unsigned
from tcgen05_conformance.numerics.feature_tests import DatapathInference, infer_datapath
from tcgen05_conformance.numerics.chosen_datapath import RANGE_ORDER, build_datapath, choose_one, outcome_report
from tcgen05_conformance.numerics.block_scaled import (BLOCK_ALIGN_BITS, BLOCK_GROUPS, _chosen_scaled, infer_block_scaling,
                                                       scaled_kinds)
from tcgen05_conformance.numerics.widening import WideningInference, infer_widening
from tcgen05_conformance.numerics.recorded import infer_recorded, recorded_datapath
from tcgen05_conformance.numerics.agree import replay_recorded
from tcgen05_conformance.numerics.backends import source_for_backend
# Read from this module by the command line and the tests, though the driver does not use them:
from tcgen05_conformance.numerics.agree import agreement as agreement
from tcgen05_conformance.numerics.hypotheses import SEARCHED as SEARCHED, STRUCTURE as STRUCTURE
from tcgen05_conformance.numerics.hypotheses import datapath as datapath, groups_of as groups_of

CONFIRM_VECTORS = 4096  # discriminating vectors per datapath after inference


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


# ----------------------------------------------------------------------------- command line


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
