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
the run's order) and must equal that of the run's programs.

Nothing in a shard folder is taken on trust (`tcgen05_conformance.harness.shard_folder`): its
files are read bounded and depth-checked, every field is checked against its domain, each
backend's counts are recomputed from its cases and must equal those its summary states, and the
merged counts are those of the cases. `--out` may not be, or lie inside, a shard folder."""

from __future__ import annotations

import os
from collections import Counter
from typing import Sequence

from tcgen05_conformance import __version__
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness.judge import CaseResult
from tcgen05_conformance.core.inputs import printable, quoted
from tcgen05_conformance.harness.report import ReportDir, write_reports
from tcgen05_conformance.harness.shard_folder import (
    RESULTS_FILE,
    SUMMARY_FILE,
    MergeError,
    check_results,
    check_summary,
    counts,
    read_json,
    shard_of,
)
from tcgen05_conformance.harness.value_coverage import value_coverage_of_hits

__all__ = ["RESULTS_FILE", "MergeError", "check_out", "check_shards", "merge", "merged_value_coverage"]
SAME = ("schema", "version", "seed", "examples", "profile", "reference")


def _commit(summary: dict) -> str | None:
    return (summary.get("source") or {}).get("commit")


def check_shards(folders: Sequence[str], summaries: list[dict]) -> int:
    """The shard count, after checking that the folders are the shards of one run, each once."""
    first = summaries[0]
    for folder, s in zip(folders, summaries):
        for key in SAME:
            if s.get(key) != first.get(key):
                raise MergeError(f"{printable(folder)}: {key} {quoted(s.get(key))} differs from {printable(folders[0])}'s "
                                 f"{quoted(first.get(key))}")
        if list(s["backends"]) != list(first["backends"]):
            raise MergeError(f"{printable(folder)}: backends {', '.join(map(quoted, s['backends']))} differ from "
                             f"{printable(folders[0])}'s {', '.join(map(quoted, first['backends']))}")
        if _commit(s) != _commit(first):
            raise MergeError(f"{printable(folder)}: source commit {quoted(_commit(s))} differs from {printable(folders[0])}'s "
                             f"{quoted(_commit(first))}")
    shards = [shard_of(folder, s) for folder, s in zip(folders, summaries)]
    counts = {count for _, count in shards}
    if len(counts) > 1:
        raise MergeError(f"shards of different counts: {', '.join(f'{i}/{n}' for i, n in shards)}")
    count = counts.pop()
    seen: dict[int, str] = {}
    for folder, (index, _) in zip(folders, shards):
        if index in seen:
            raise MergeError(f"{printable(folder)} and {printable(seen[index])} are both shard {index}/{count}")
        seen[index] = folder
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} missing")
    if first["version"] != __version__:
        raise MergeError(f"the shards were written by version {quoted(first['version'])}; this is {__version__}, which "
                         "may draw other programs")
    cases = sum(s["cases"] for s in summaries)
    if not first["examples"] <= cases <= first["examples"] + runner.VALUE_PROGRAMS_MAX:
        raise MergeError(f"the shards hold {cases:,} cases, not the {first['examples']:,} (and up to "
                         f"{runner.VALUE_PROGRAMS_MAX} value programs) of a run of --count {first['examples']:,}")
    return count


def _failure_data(failure: dict | None) -> dict:
    """The case data a summary reads back: the decoded diff of a failure that has one."""
    return {"diff": failure["diff"]} if failure and failure.get("diff") else {}


def _check_shares(folders: Sequence[str], summaries: list[dict], results: list[dict], programs: list) -> None:
    """Each shard holds exactly its share of the run's programs, for every backend."""
    for folder, s, shard_results in zip(folders, summaries, results):
        share = {p.case_id for p in programs if runner.in_shard(p.case_id, shard_of(folder, s))}
        held = [set(s["case_profiles"])] + [{c["case_id"] for c in shard_results.get(name, [])} for name in s["backends"]]
        if any(cases != share for cases in held) or s["cases"] != sum(runner.in_shard(p.case_id, shard_of(folder, s))
                                                                         for p in programs):
            raise MergeError(f"{printable(folder)}: its cases are not shard {s['shard']}'s share of the run's programs")


def merged_value_coverage(folders: Sequence[str], summaries: list[dict], programs: list) -> dict:
    """The shards' value coverage merged: each coverpoint's hits summed over the shards, its first
    case the shards' first case that comes first in the run (`programs`)."""
    order = {p.case_id: i for i, p in enumerate(programs)}
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for folder, s in zip(folders, summaries):
        values = s.get("value_coverage")
        points = values.get("points") if isinstance(values, dict) else None
        if not isinstance(points, dict):
            raise MergeError(f"{printable(folder)}: its summary.json has no value coverage (value_coverage.points)")
        for point, hit in points.items():
            if not isinstance(hit, dict) or type(hit.get("hits")) is not int or not 0 <= hit["hits"] <= 10**9:
                raise MergeError(f"{printable(folder)}: value coverpoint {quoted(point)} has no hit count")
            counts[point] += hit["hits"]
            case = hit.get("first_case")
            if case is None:
                continue
            if not isinstance(case, str) or case not in order:
                raise MergeError(f"{printable(folder)}: the first case {quoted(case)} of value coverpoint {quoted(point)} is "
                                 "not a case of the run")
            if point not in first or order[case] < order[first[point]]:
                first[point] = case
    return value_coverage_of_hits(counts, first)


def check_out(folders: Sequence[str], out: str) -> None:
    """MergeError when the output folder `out` is, or lies inside, one of the shard folders (the
    merged reports would overwrite a shard's)."""
    target = os.path.realpath(out)
    for folder in folders:
        source = os.path.realpath(folder)
        if os.path.commonpath([source, target]) == source:
            where = "is" if source == target else "lies inside"
            raise MergeError(f"--out {printable(out)} {where} the shard folder {printable(folder)}: the merged reports would "
                             "overwrite it")


def merge(folders: Sequence[str], out: str, command: list[str]) -> tuple[dict, list[str]]:
    """Merge the shard report folders into `out`: (the summary, the paths written)."""
    if not folders:
        raise MergeError("no shard folders to merge")
    check_out(folders, out)
    summaries = [check_summary(folder, read_json(folder, SUMMARY_FILE)) for folder in folders]
    check_shards(folders, summaries)
    results = [check_results(folder, read_json(folder, RESULTS_FILE), s) for folder, s in zip(folders, summaries)]
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
            **counts(merged_results[name]),
            skip_reason=next((b["skip_reason"] for b in per_shard if b["skip_reason"]), None),
            duration_s=round(sum(b["duration_s"] for b in per_shard), 3), role=per_shard[0]["role"])
    duration = sum(s["duration_s"] for s in summaries)
    summary = runner.summary(outcome, first["seed"], first["examples"], duration, command, first["profile"], None, out)
    if merged_value_coverage(folders, summaries, programs) != summary["value_coverage"]:
        raise MergeError("the shards' value coverage hits, merged, differ from those of the run's programs")
    summary["shards"] = [{"folder": folder, "shard": s["shard"], "command": s["command"], "machine": s["machine"],
                          "gpus": s.get("gpus"), "finished_utc": s.get("finished_utc"), "duration_s": s["duration_s"]}
                         for folder, s in sorted(zip(folders, summaries), key=lambda fs: shard_of(*fs))]
    folder = ReportDir(out)
    try:
        for name, text in runner.failing_case_files(outcome).items():
            folder.write(name, text)
        return summary, write_reports(folder, summary, merged_results)
    finally:
        folder.close()
