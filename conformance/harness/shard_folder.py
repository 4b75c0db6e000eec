"""A shard's report folder as `report merge` reads it: summary.json and results.json through the
bounded, depth-checked reader (`tcgen05_conformance.core.inputs`), every field merge uses checked
against its domain (types, ranges, statuses), and the shard's counts recomputed from its cases,
so that a forged or edited folder is refused on one line instead of being merged as given."""

from __future__ import annotations

import math
import os
import re
from typing import Any

from tcgen05_conformance.core.inputs import MAX_EXAMPLES, MAX_SEED, InputError, parse_json, printable, quoted, read_text
from tcgen05_conformance.harness.judge import ERROR, FAIL, PASS, SKIP
from tcgen05_conformance.harness.report import BACKEND_FIELDS

RESULTS_FILE = "results.json"  # a shard's per-case results, per backend
SUMMARY_FILE = "summary.json"
MAX_FILE_BYTES = 1 << 30  # a million cases' results, several backends each, fit well below this
MAX_SHARDS = 10**6  # as `run --shard I/N` allows
STATUSES = (PASS, FAIL, ERROR, SKIP)
_SHARD = re.compile(r"([1-9][0-9]{0,6})/([1-9][0-9]{0,6})")
_MISMATCH_FIELDS = {"place": str, "cta": int, "row": int, "column": int, "element": str, "expected_bits": int,
                    "actual_bits": int, "expected": str, "actual": str}


class MergeError(ValueError):
    """Shard folders that do not make one run (the message names which and why, on one line)."""


def read_json(folder: str, name: str) -> Any:
    """The JSON value of file `name` in `folder`, read bounded and depth-checked; MergeError naming
    the file when it is missing, not a regular file, too large, not UTF-8 or not JSON."""
    path = os.path.join(folder, name)
    if not os.path.lexists(path):
        raise MergeError(f"{printable(folder)}: no {name} (a report folder of `run --shard I/N`)")
    try:
        return parse_json(read_text(path, MAX_FILE_BYTES))
    except InputError as e:
        message = str(e)
        raise MergeError(message if message.startswith(printable(path)) else f"{printable(path)}: {message}") from None


def shard_of(folder: str, summary: dict) -> tuple[int, int]:
    """(I, N) of the shard a checked summary says it is."""
    index, count = _SHARD.fullmatch(summary["shard"]).groups()
    return int(index), int(count)


def check_summary(folder: str, s: Any) -> dict:
    """`s`, a shard's summary.json, after checking every field merge reads; MergeError naming the
    first that is missing or out of its domain."""
    where = f"{printable(folder)}/{SUMMARY_FILE}"
    if not isinstance(s, dict):
        raise MergeError(f"{where}: not a JSON object")
    _need(where, s, "schema", str)
    _need(where, s, "version", str)
    _need(where, s, "command", str)
    _need(where, s, "machine", str)
    _whole(where, s, "seed", 0, MAX_SEED)
    _whole(where, s, "examples", 1, MAX_EXAMPLES)
    _whole(where, s, "cases", 0, MAX_EXAMPLES)
    _seconds(where, s, "duration_s")
    for key in ("profile", "reference", "finished_utc"):
        _need(where, s, key, (str, type(None)))
    if not isinstance(s.get("source"), (dict, type(None))) or not isinstance((s.get("source") or {}).get("commit"), (str, type(None))):
        raise MergeError(f"{where}: source is not an object with a commit")
    if s.get("shard") is None:
        raise MergeError(f"{printable(folder)}: the report of a whole run, not of a shard (run --shard I/N)")
    shard = _SHARD.fullmatch(s["shard"]) if isinstance(s["shard"], str) else None
    if shard is None or not 1 <= int(shard.group(1)) <= int(shard.group(2)) <= MAX_SHARDS:
        raise MergeError(f"{where}: shard {quoted(s['shard'])} is not I/N with 1 <= I <= N <= {MAX_SHARDS:,}")
    _need(where, s, "backends", dict)
    if not s["backends"]:
        raise MergeError(f"{where}: no backends")
    for name, b in s["backends"].items():
        here = f"{where}: backend {quoted(name)}"
        if not isinstance(b, dict):
            raise MergeError(f"{here} is not an object")
        for key in BACKEND_FIELDS:
            _whole(here, b, key, 0, MAX_EXAMPLES)
        _seconds(here, b, "duration_s")
        _need(here, b, "skip_reason", (str, type(None)))
        _need(here, b, "role", str)
    _need(where, s, "case_profiles", dict)
    if len(s["case_profiles"]) != s["cases"] or not all(isinstance(v, str) for v in s["case_profiles"].values()):
        raise MergeError(f"{where}: case_profiles is not a profile name for each of its {s['cases']} cases")
    _need(where, s, "failures", list)
    for f in s["failures"]:
        if not isinstance(f, dict) or not isinstance(f.get("backend"), str) or not isinstance(f.get("case_id"), str):
            raise MergeError(f"{where}: a failure is not an object with a backend and a case id")
        if f.get("diff") is not None and not _is_diff(f["diff"]):
            raise MergeError(f"{where}: the diff of failure {quoted(f['case_id'])} [{quoted(f['backend'])}] is not a diff")
    return s


def check_results(folder: str, results: Any, summary: dict) -> dict:
    """`results`, a shard's results.json, after checking that it holds a well-formed result of
    each backend of `summary` per case and that each backend's counts in `summary` are those of
    its cases; MergeError naming the first difference."""
    where = f"{printable(folder)}/{RESULTS_FILE}"
    if not isinstance(results, dict) or list(results) != list(summary["backends"]):
        raise MergeError(f"{where}: not the results of the backends {', '.join(map(quoted, summary['backends']))}")
    for name, cases in results.items():
        if not isinstance(cases, list) or not all(_is_result(c) for c in cases):
            raise MergeError(f"{where}: the results of {quoted(name)} are not a list of case results "
                             f"(case_id, status one of {', '.join(STATUSES)}, detail, label, profile)")
        counted = counts(cases)
        claimed = {k: summary["backends"][name][k] for k in BACKEND_FIELDS}
        if counted != claimed:
            differ = ", ".join(f"{k} {claimed[k]} vs {counted[k]}" for k in BACKEND_FIELDS if claimed[k] != counted[k])
            raise MergeError(f"{printable(folder)}: the counts of {quoted(name)} in {SUMMARY_FILE} are not those of its "
                             f"cases in {RESULTS_FILE} ({differ})")
    return results


def counts(cases: list[dict]) -> dict[str, int]:
    """A backend's counts (`BACKEND_FIELDS`) recomputed from its case results."""
    statuses = [c["status"] for c in cases]
    skipped = statuses.count(SKIP)
    return {"ran": len(statuses) - skipped, "passed": statuses.count(PASS), "failed": statuses.count(FAIL),
            "errors": statuses.count(ERROR), "skipped": skipped}


def _is_result(c: Any) -> bool:
    return (isinstance(c, dict) and c.get("status") in STATUSES
            and all(isinstance(c.get(k), str) for k in ("case_id", "status", "detail", "label", "profile")))


def _is_diff(d: Any) -> bool:
    return (isinstance(d, dict) and type(d.get("words")) is int and type(d.get("mismatched")) is int
            and 0 <= d["mismatched"] <= d["words"] and isinstance(d.get("first"), list)
            and all(isinstance(m, dict) and m.keys() == _MISMATCH_FIELDS.keys()
                    and all(type(m[k]) is t for k, t in _MISMATCH_FIELDS.items()) for m in d["first"]))


def _need(where: str, obj: dict, key: str, kind: type | tuple[type, ...]) -> None:
    if key not in obj:
        raise MergeError(f"{where}: no {key}")
    if not isinstance(obj[key], kind) or isinstance(obj[key], bool) and kind is not bool:
        raise MergeError(f"{where}: {key} {quoted(obj[key])} is not {_kind_name(kind)}")


def _whole(where: str, obj: dict, key: str, low: int, high: int) -> None:
    _need(where, obj, key, int)
    if not low <= obj[key] <= high:
        raise MergeError(f"{where}: {key} {obj[key]} is out of range ({low:,} to {high:,})")


def _seconds(where: str, obj: dict, key: str) -> None:
    _need(where, obj, key, (int, float))
    if not (math.isfinite(obj[key]) and 0 <= obj[key] <= 1e9):
        raise MergeError(f"{where}: {key} {quoted(obj[key])} is not a duration in seconds")


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "a whole number", float: "a number", dict: "an object", list: "a list", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds))
