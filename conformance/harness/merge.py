"""Shard reports combined into the report of the whole run (`report merge`).

`run --shard I/N` keeps the cases of the run whose id modulo N is I - 1 (`runner.in_shard`) and
writes, besides the usual reports, `results.json`: every case's result per backend. Merging
checks that the shard folders belong to one run (the same schema, version, source commit, seed,
examples, numeric profile, reference and backends) and together hold every shard exactly once, draws the
run's programs again from its seed (so that coverage, heat maps and failing cases come from the
same code as a whole run's), checks that each shard holds exactly its share of them, and builds
the summary, reports and failing cases with the functions a whole run uses: summary.json is the
whole run's but for the command, machine, GPUs (null: each shard ran on its own), finishing time
and durations (the shards' summed), and `shards`, which lists each shard's folder, command,
machine, GPUs, finishing time and duration. The
shards' value coverage is merged (each coverpoint's hits summed, its first case the earliest in
the run's order) and must equal that of the run's programs."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Sequence

from tcgen05_conformance import __version__
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness.judge import CaseResult
from tcgen05_conformance.harness.report import BACKEND_FIELDS, ReportDir, write_reports
from tcgen05_conformance.harness.value_coverage import value_coverage_of_hits

RESULTS_FILE = "results.json"  # a shard's per-case results, per backend
SAME = ("schema", "version", "seed", "examples", "profile", "reference")


class MergeError(ValueError):
    """Shard folders that do not make one run (the message names which and why, on one line)."""


def _read(folder: str, name: str) -> object:
    path = os.path.join(folder, name)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise MergeError(f"{folder}: no {name} (a report folder of `run --shard I/N`)") from None
    except (OSError, ValueError) as e:
        raise MergeError(f"{path}: cannot read it ({' '.join(str(e).split())})") from None


def _shard(folder: str, summary: dict) -> tuple[int, int]:
    text = summary.get("shard")
    if not text:
        raise MergeError(f"{folder}: the report of a whole run, not of a shard (run --shard I/N)")
    index, count = map(int, str(text).split("/"))
    return index, count


def _commit(summary: dict) -> str | None:
    return (summary.get("source") or {}).get("commit")


def check_shards(folders: Sequence[str], summaries: list[dict]) -> int:
    """The shard count, after checking that the folders are the shards of one run, each once."""
    first = summaries[0]
    for folder, s in zip(folders, summaries):
        for key in SAME:
            if s.get(key) != first.get(key):
                raise MergeError(f"{folder}: {key} {s.get(key)!r} differs from {folders[0]}'s {first.get(key)!r}")
        if list(s["backends"]) != list(first["backends"]):
            raise MergeError(f"{folder}: backends {', '.join(s['backends'])} differ from {folders[0]}'s "
                             f"{', '.join(first['backends'])}")
        if _commit(s) != _commit(first):
            raise MergeError(f"{folder}: source commit {_commit(s)} differs from {folders[0]}'s {_commit(first)}")
    shards = [_shard(folder, s) for folder, s in zip(folders, summaries)]
    counts = {count for _, count in shards}
    if len(counts) > 1:
        raise MergeError(f"shards of different counts: {', '.join(f'{i}/{n}' for i, n in shards)}")
    count = counts.pop()
    seen: dict[int, str] = {}
    for folder, (index, _) in zip(folders, shards):
        if index in seen:
            raise MergeError(f"{folder} and {seen[index]} are both shard {index}/{count}")
        seen[index] = folder
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} missing")
    if first["version"] != __version__:
        raise MergeError(f"the shards were written by version {first['version']}; this is {__version__}, which may draw "
                         "other programs")
    return count


def _failure_data(failure: dict | None) -> dict:
    """The case data a summary reads back: the decoded diff of a failure that has one."""
    return {"diff": failure["diff"]} if failure and failure.get("diff") else {}


def _check_shares(folders: Sequence[str], summaries: list[dict], results: list[dict], programs: list) -> None:
    """Each shard holds exactly its share of the run's programs, for every backend."""
    for folder, s, shard_results in zip(folders, summaries, results):
        share = {p.case_id for p in programs if runner.in_shard(p.case_id, _shard(folder, s))}
        held = [set(s["case_profiles"])] + [{c["case_id"] for c in shard_results.get(name, [])} for name in s["backends"]]
        if any(cases != share for cases in held) or s["cases"] != sum(runner.in_shard(p.case_id, _shard(folder, s))
                                                                         for p in programs):
            raise MergeError(f"{folder}: its cases are not shard {s['shard']}'s share of the run's programs")


def merged_value_coverage(folders: Sequence[str], summaries: list[dict], programs: list) -> dict:
    """The shards' value coverage merged: each coverpoint's hits summed over the shards, its first
    case the shards' first case that comes first in the run (`programs`)."""
    order = {p.case_id: i for i, p in enumerate(programs)}
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for folder, s in zip(folders, summaries):
        points = (s.get("value_coverage") or {}).get("points")
        if not isinstance(points, dict):
            raise MergeError(f"{folder}: its summary.json has no value coverage (value_coverage.points)")
        for point, hit in points.items():
            if not isinstance(hit, dict) or type(hit.get("hits")) is not int or hit["hits"] < 0:
                raise MergeError(f"{folder}: value coverpoint {point!r} has no hit count")
            counts[point] += hit["hits"]
            case = hit.get("first_case")
            if case is None:
                continue
            if not isinstance(case, str) or case not in order:
                raise MergeError(f"{folder}: the first case {case!r} of value coverpoint {point!r} is not a case of the run")
            if point not in first or order[case] < order[first[point]]:
                first[point] = case
    return value_coverage_of_hits(counts, first)


def merge(folders: Sequence[str], out: str, command: list[str]) -> tuple[dict, list[str]]:
    """Merge the shard report folders into `out`: (the summary, the paths written)."""
    if not folders:
        raise MergeError("no shard folders to merge")
    summaries = [_read(folder, "summary.json") for folder in folders]
    check_shards(folders, summaries)
    results = [_read(folder, RESULTS_FILE) for folder in folders]
    first = summaries[0]
    programs = runner.generate_programs(first["examples"], first["seed"])
    _check_shares(folders, summaries, results, programs)
    failures = {(f["backend"], f["case_id"]): f for s in summaries for f in s["failures"]}
    judged_by = {case: profile for s in summaries for case, profile in s["case_profiles"].items()}
    outcome = runner.RunOutcome(programs, [judged_by[p.case_id] for p in programs], first["reference"], gpus=None)
    merged_results: dict[str, list[dict]] = {}
    for name in first["backends"]:
        by_case = {c["case_id"]: c for shard_results in results for c in shard_results[name]}
        merged_results[name] = [by_case[p.case_id] for p in programs]
        outcome.results[name] = [CaseResult(c["case_id"], c["status"], c["detail"], _failure_data(failures.get((name, c["case_id"]))))
                                 for c in merged_results[name]]
        per_shard = [s["backends"][name] for s in summaries]
        outcome.summaries[name] = runner.BackendSummary(
            **{k: sum(b[k] for b in per_shard) for k in BACKEND_FIELDS},
            skip_reason=next((b["skip_reason"] for b in per_shard if b["skip_reason"]), None),
            duration_s=round(sum(b["duration_s"] for b in per_shard), 3), role=per_shard[0]["role"])
    duration = sum(s["duration_s"] for s in summaries)
    summary = runner.summary(outcome, first["seed"], first["examples"], duration, command, first["profile"], None, out)
    if merged_value_coverage(folders, summaries, programs) != summary["value_coverage"]:
        raise MergeError("the shards' value coverage hits, merged, differ from those of the run's programs")
    summary["shards"] = [{"folder": folder, "shard": s["shard"], "command": s["command"], "machine": s["machine"],
                          "gpus": s.get("gpus"), "finished_utc": s.get("finished_utc"), "duration_s": s["duration_s"]}
                         for folder, s in sorted(zip(folders, summaries), key=lambda fs: _shard(*fs))]
    folder = ReportDir(out)
    try:
        for name, text in runner.failing_case_files(outcome).items():
            folder.write(name, text)
        return summary, write_reports(folder, summary, merged_results)
    finally:
        folder.close()
