"""The proof that `numerics infer` works, on an H100: infer the wgmma and mma.sync profiles from
nothing on silicon, compare them parameter for parameter with the committed `sm_90a` and
`sm_90a.mma_sync`, then check at least N fresh silicon inner products per input format against the
inferred profiles (the shared measurement driver, random and discriminating vectors).

    python -m conformance.tools.numerics_proof --out DIR [--per-format 1e8]

Writes DIR/h100-inferred-wgmma.json and DIR/h100-inferred-mma-sync.json (the inferred profiles with
their evidence), DIR/h100-inference-proof.json (comparisons, measurement, timings, command) and
DIR/h100-inference-proof.md (the same for people). Exit status 0 when both profiles equal the
committed ones and no inner product mismatches.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

from conformance.tools import numerics_measure as measure
from conformance.tools.numerics_infer import compare_profiles, infer_profile
from conformance.tools.numerics_sources import GpuSource
from oracles.numerics.profiles import get_profile

FAMILIES = {"wgmma": "sm_90a", "mma.sync": "sm_90a.mma_sync"}  # family -> the committed profile it must equal


def counts_per_combination(per_format: int) -> dict[str, int]:
    """Inner products per Hopper combination so that each input format gets at least `per_format`
    over its combinations (both families, every accumulator, with and without .satfinite)."""
    by_format = defaultdict(list)
    for c in measure.COMBINATIONS:
        by_format[c.in_fmt].append(c)
    return {c.id: -(-per_format // len(cs)) for cs in by_format.values() for c in cs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.tools.numerics_proof", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the reports")
    parser.add_argument("--per-format", type=float, default=1e8, help="fresh inner products per input format (default 1e8)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m conformance.tools.numerics_proof " + " ".join(argv if argv is not None else sys.argv[1:])
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    report: dict = {"command": command, "profiles": {}, "timings_s": {}}
    files = {}
    ok = True
    for family, reference in FAMILIES.items():
        t0 = time.perf_counter()
        source = GpuSource(family)
        result = infer_profile(source, f"h100-{family} (inferred)", command=command, log=log)
        path = out / f"h100-inferred-{family.replace('.', '-')}.json"
        path.write_text(json.dumps(result.report(), indent=1, default=str) + "\n", encoding="utf-8")
        files[family] = str(path)
        differences = compare_profiles(result.profile, get_profile(reference))
        ok &= not differences and not result.errors
        report["profiles"][family] = {"reference": reference, "file": path.name, "differences": differences,
                                      "errors": result.errors, "provenance": dict(result.profile.provenance),
                                      "directed_vectors": sum(sum(len(p) for p in inf.pools) for inf in result.inferences.values()),
                                      "confirmation": {k: v["confirmation"] for k, v in result.checks.items() if "confirmation" in v}}
        report["timings_s"][f"infer {family}"] = round(time.perf_counter() - t0, 1)
        log(f"{family}: {len(differences)} differences from {reference}, errors {result.errors}")
    t0 = time.perf_counter()
    counts = counts_per_combination(int(args.per_format))
    measured = {"combinations": []}
    for k, count in enumerate(sorted(set(counts.values()))):
        chosen = [c for c in measure.COMBINATIONS if counts[c.id] == count]
        part, _ = measure.measure(chosen, count, args.seed + 7919 * k, files, args.jobs)
        measured["combinations"] += part["combinations"]
        measured.update({k: v for k, v in part.items() if k in ("gpu", "arch", "driver")})
    per_format = defaultdict(lambda: [0, 0])
    for c in measured["combinations"]:
        per_format[c["input"]][0] += c["inner_products"]
        per_format[c["input"]][1] += c["mismatches"]
    measured["per_format"] = {f: {"inner_products": n, "mismatches": m} for f, (n, m) in per_format.items()}
    measured["mismatches"] = sum(m for _, m in per_format.values())
    ok &= measured["mismatches"] == 0
    report["measurement"] = measured
    report["timings_s"]["measure"] = round(time.perf_counter() - t0, 1)
    report["passed"] = bool(ok)
    (out / "h100-inference-proof.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    (out / "h100-inference-proof.md").write_text(markdown(report), encoding="utf-8")
    log(f"passed: {ok}")
    return 0 if ok else 1


def markdown(report: dict) -> str:
    """The proof report for people."""
    lines = ["# Numeric profiles inferred from nothing on an H100", "", f"Command: `{report['command']}`", ""]
    m = report["measurement"]
    lines += [f"GPU: {m.get('gpu')} ({m.get('arch')}), {m.get('driver')}.", ""]
    lines += ["| family | compared with | differences | errors | directed vectors | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for family, p in report["profiles"].items():
        lines.append(f"| {family} | `{p['reference']}` | {len(p['differences'])} | {len(p['errors'])} | {p['directed_vectors']} | "
                     f"{report['timings_s'][f'infer {family}']} |")
    for family, p in report["profiles"].items():
        for d in p["differences"]:
            lines.append(f"- {family} {d['datapath']} {d['parameter']}: inferred {d['inferred']}, committed {d['reference']}")
    lines += ["", "Fresh silicon inner products against the inferred profiles:", "",
              "| input format | inner products | mismatches |", "| --- | --- | --- |"]
    for f, v in m["per_format"].items():
        lines.append(f"| {f} | {v['inner_products']:,} | {v['mismatches']} |")
    lines += ["", f"Passed: {report['passed']}. Timings (s): {report['timings_s']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
