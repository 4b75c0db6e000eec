"""The proof that `numerics infer` works, on an H100: infer the wgmma and mma.sync profiles from
nothing on silicon, compare them parameter for parameter with the committed `sm_90a` and
`sm_90a.mma_sync`, then check at least N fresh silicon inner products per input format (and per mixed fp8 pair)
against the inferred profiles (the shared measurement driver, random and discriminating vectors, compared on
the host by every core).

    tcgen05-conformance numerics proof --out DIR [--per-format 1e8] [--backend hopper|oracle]

Writes DIR/h100-inferred-wgmma.json and DIR/h100-inferred-mma-sync.json (the inferred profiles with
their evidence), DIR/h100-inference-proof.json (comparisons, measurement, timings, command) and
DIR/h100-inference-proof.md (the same for people). Exit status 0 when both profiles equal the
committed ones and no inner product mismatches, 1 when not, 5 when there is no sm_90 GPU here.
`--backend oracle` (gpu None here) runs the whole path without a GPU: the numeric model under the committed
profiles answers the inference and stands in for silicon in the measurement (what CI can check).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

from tcgen05_conformance.numerics import measure
from tcgen05_conformance.numerics.infer import compare_profiles, infer_profile
from tcgen05_conformance.numerics.sources import GpuSource, ModelSource
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.registers import pack_registers
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import get_profile

FAMILIES = {"wgmma": "sm_90a", "mma.sync": "sm_90a.mma_sync"}  # family -> the committed profile it must equal


#: The Hopper combinations the proof measures: the 24 same-type ones and the 8 mixed fp8 ones, whose
#: results depend on the widened inputs the inference read off directed vectors.
PROVED = measure.HOPPER_COMBINATIONS


def inputs_label(c: measure.Combination) -> str:
    """What the proof counts a combination's inner products under: its input format, or "A x B"."""
    return f"{c.in_fmt} x {c.b_fmt}" if c.b_fmt else c.in_fmt


def counts_per_combination(per_format: int) -> dict[str, int]:
    """Inner products per Hopper combination so that each input format (and each mixed pair) gets
    at least `per_format` over its combinations (both families, every accumulator, with and
    without .satfinite)."""
    by_format = defaultdict(list)
    for c in PROVED:
        by_format[inputs_label(c)].append(c)
    return {c.id: -(-per_format // len(cs)) for cs in by_format.values() for c in cs}


def model_silicon(c: measure.Combination, chunk: dict, stages: Stages) -> np.ndarray:
    """The D fragment words an H100 would give if it computed as the committed profiles say: the
    numeric model's results for every inner product of the chunk, packed as the kernel writes them
    (timed as the GPU's launch in `stages`)."""
    with stages("launch"):
        a, b, cm = chunk["a"], chunk["b"], chunk["c"]
        tiles, m, n = cm.shape
        a_all = np.broadcast_to(a[:, :, None, :], (tiles, m, n, c.k)).reshape(-1, c.k)
        b_all = np.broadcast_to(b[:, None, :, :], (tiles, m, n, c.k)).reshape(-1, c.k)
        d = inner_product(a_all, b_all, cm.reshape(-1), c.inputs, c.acc, c.profile(FAMILIES), saturate=c.saturate)
        return pack_registers(d.reshape(tiles, m, n), *measure.d_fragment(c), measure.ACC_BITS[c.acc])


def prove(gpu, out: Path, per_format: int, seed: int, jobs: int, command: str,
          log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True)) -> dict:
    """The proof on `gpu` (an sm_90 `tcgen05_conformance.device.launch.Gpu`; None: the numeric model under the committed
    profiles answers and stands in for silicon): the report, written with the inferred profiles
    under `out` (JSON and Markdown); `report["passed"]` says whether it held."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict = {"command": command, "backend": "hopper" if gpu is not None else "oracle",
                    "per_format_asked": per_format, "profiles": {}, "timings_s": {}}
    files = {}
    ok = True
    for family, reference in FAMILIES.items():
        t0 = time.perf_counter()
        source = GpuSource(family) if gpu is not None else ModelSource(reference)
        result = infer_profile(source, f"h100-{family} (inferred)", command=command, log=log)
        path = out / f"h100-inferred-{family.replace('.', '-')}.json"
        path.write_text(json.dumps(result.report(), indent=1, default=str) + "\n", encoding="utf-8")
        files[family] = str(path)
        differences = compare_profiles(result.profile, get_profile(reference))
        ok &= not differences and not result.errors
        report["profiles"][family] = {"reference": reference, "file": path.name, "differences": differences,
                                      "errors": result.errors, "provenance": dict(result.profile.provenance),
                                      "directed_vectors": sum(sum(len(p) for p in inf.pools) for inf in result.inferences.values()),
                                      "widened_inputs": {"value": dict(result.profile.widened_inputs),
                                                         "provenance": result.profile.widened_inputs_provenance},
                                      "confirmation": {k: v["confirmation"] for k, v in result.checks.items() if "confirmation" in v}}
        report["timings_s"][f"infer {family}"] = round(time.perf_counter() - t0, 1)
        log(f"{family}: {len(differences)} differences from {reference}, errors {result.errors}")
    t0 = time.perf_counter()
    counts = counts_per_combination(per_format)
    measured: dict = {"combinations": []}
    stand_in = None if gpu is not None else {"gpu": "the numeric model under sm_90a / sm_90a.mma_sync (no GPU)",
                                             "arch": "model", "driver": "none"}
    for k, count in enumerate(sorted(set(counts.values()))):
        chosen = [c for c in PROVED if counts[c.id] == count]
        part, _ = measure.measure(gpu, chosen, count, seed + 7919 * k, files, jobs,
                                  observe=None if gpu is not None else model_silicon, described=stand_in)
        measured["combinations"] += part["combinations"]
        measured.update({key: v for key, v in part.items() if key in ("gpu", "arch", "driver")})
    totals: dict = defaultdict(lambda: [0, 0])
    proved = {c.id: c for c in PROVED}
    for c in measured["combinations"]:
        label = inputs_label(proved[c["id"]])
        totals[label][0] += c["inner_products"]
        totals[label][1] += c["mismatches"]
    measured["per_format"] = {f: {"inner_products": n, "mismatches": m} for f, (n, m) in totals.items()}
    measured["mismatches"] = sum(m for _, m in totals.values())
    ok &= measured["mismatches"] == 0 and all(n >= per_format for n, _ in totals.values())
    report["measurement"] = measured
    report["timings_s"]["measure"] = round(time.perf_counter() - t0, 1)
    report["timings_s"]["total"] = round(time.perf_counter() - started, 1)
    report["passed"] = bool(ok)
    (out / "h100-inference-proof.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    (out / "h100-inference-proof.md").write_text(markdown(report), encoding="utf-8")
    log(f"passed: {ok}; {report['timings_s']['total']} s; reports in {out}")
    return report


def markdown(report: dict) -> str:
    """The proof report for people."""
    lines = ["# Numeric profiles inferred from nothing on an H100", "", f"Command: `{report['command']}`", ""]
    m = report["measurement"]
    lines += [f"GPU: {m.get('gpu')} ({m.get('arch')}), {m.get('driver')}. Fresh inner products asked for per input "
              f"format: {report['per_format_asked']:,}.", ""]
    lines += ["| family | compared with | differences | errors | directed vectors | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for family, p in report["profiles"].items():
        lines.append(f"| {family} | `{p['reference']}` | {len(p['differences'])} | {len(p['errors'])} | {p['directed_vectors']} | "
                     f"{report['timings_s'][f'infer {family}']} |")
    for family, p in report["profiles"].items():
        lines.append(f"- {family} widened inputs: {p['widened_inputs']['value'] or 'none'} "
                     f"({p['widened_inputs']['provenance']})")
    for family, p in report["profiles"].items():
        for d in p["differences"]:
            lines.append(f"- {family} {d['datapath']} {d['parameter']}: inferred {d['inferred']}, committed {d['reference']}")
    lines += ["", "Fresh silicon inner products against the inferred profiles:", "",
              "| input formats | inner products | mismatches |", "| --- | --- | --- |"]
    for f, v in m["per_format"].items():
        lines.append(f"| {f} | {v['inner_products']:,} | {v['mismatches']} |")
    lines += ["", f"Passed: {report['passed']}. Timings (s): {report['timings_s']}.", ""]
    return "\n".join(lines)
