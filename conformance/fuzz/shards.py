"""Damaged shard folders through `report merge`: two shards of one run, one of their
summary.json or results.json damaged (`tcgen05_conformance.fuzz.json_damage`), and now and then
`--out` one of them or inside one. Merge must refuse on one line (exit 2), or merge into reports
whose counts are those of the shards' cases, with the exit status they call for; never a
traceback, never a shard overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import strategies as st

from tcgen05_conformance.fuzz.command_calls import Main, Wrong, call, refusal, summary_of
from tcgen05_conformance.fuzz.json_damage import damage_file, damages

ACCEPTED, REFUSED = "accepted", "refused"
SHARD_FILES = ("summary.json", "results.json")
COUNTS = ("ran", "passed", "failed", "errors", "skipped")


def make_shards(main: Main, into: Path, examples: int = 3, seed: int = 1) -> list[Path]:
    """The report folders of the two shards of a small run (the oracle as backend and reference)."""
    folders = [into / f"shard{i}" for i in (1, 2)]
    for i, folder in enumerate(folders, 1):
        called = call(main, ["run", "--count", str(examples), "--seed", str(seed), "--backend", "oracle",
                             "--shard", f"{i}/2", "--out", str(folder)])
        if called.status != 0:
            raise RuntimeError(f"shard {i}/2 of the base run exited {called.status}: {called.err.strip()[-300:]}")
    return folders


def inputs() -> st.SearchStrategy[tuple]:
    """(which shard, which file, the damage, where --out goes)."""
    return st.tuples(st.integers(0, 1), st.sampled_from(SHARD_FILES), damages(),
                     st.sampled_from(("apart",) * 18 + ("a shard", "inside a shard")))


def merge_outcome(main: Main, bases: list[Path], drawn: tuple, work: Path) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what happened) for one damaged pair of shards."""
    which, name, damage, out_kind = drawn
    if work.exists():
        shutil.rmtree(work)
    shards = [work / base.name for base in bases]
    for base, shard in zip(bases, shards):
        shutil.copytree(base, shard)
    damage_file(shards[which] / name, damage)
    before = {p: p.read_bytes() for p in shards[1 - which].rglob("*") if p.is_file()}
    out = {"apart": work / "merged", "a shard": shards[1 - which], "inside a shard": shards[1 - which] / "merged"}[out_kind]
    called = call(main, ["report", "merge", *map(str, shards), "--out", str(out)])
    if {p: p.read_bytes() for p in shards[1 - which].rglob("*") if p.is_file()} != before:
        raise Wrong(f"merge (exit {called.status}) changed the shard {shards[1 - which].name}")
    if called.status == 2:
        return REFUSED, refusal(called)
    if called.status not in (0, 1):
        raise AssertionError(f"exit {called.status}: {called.err.strip()[-300:]}")
    if out_kind != "apart":
        raise Wrong(f"merged into {out_kind}")
    summary = summary_of(str(out))
    results = [json.loads((shard / "results.json").read_text()) for shard in shards]
    for backend, merged in summary["backends"].items():
        statuses = [c["status"] for r in results for c in r[backend]]
        counted = {"passed": statuses.count("pass"), "failed": statuses.count("fail"), "errors": statuses.count("error"),
                   "skipped": statuses.count("skip")}
        if any(merged[k] != v for k, v in counted.items()):
            raise Wrong(f"merged counts of {backend} {[merged[k] for k in COUNTS]} are not its cases' {counted}")
    bad = sum(b["failed"] + b["errors"] for b in summary["backends"].values())
    if (called.status == 1) != (bad > 0):
        raise Wrong(f"exit {called.status} with {bad} failures and errors")
    return ACCEPTED, f"exit {called.status}"
