"""`lint` as a CI gate on whole real source trees (issue 30, item 5): each tree linted as one
directory (its exit status, time, counts, every problem, the SARIF log), then the same tree
copied with one illegal instruction planted at a known line, which lint must report at that
file:line with exit status 1. Trees are read where they are (the nvidia-cutlass wheel's
include/, git mirrors extracted with `git archive` to a scratch folder); none is copied here.

    python reports/lint-real-source-trees/measure.py --tree cutlass=INCLUDE --git deepgemm=MIRROR \
        --git thunderkittens=MIRROR --out reports/lint-real-source-trees
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

LINT = [sys.executable, "-m", "tcgen05_conformance", "lint"]
# 9.7.16.7.1: nCols is a power of 2 in [32, 512]; ptxas rejects 48 (rule alloc.columns)
PLANTED = ('__device__ void planted_by_issue_30(unsigned dst) {{\n'
           '  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 48;" :: "r"(dst));\n'
           '}}\n')


def lint(tree: str, *options: str) -> tuple[int, float, dict, str]:
    """lint's exit status, seconds, JSON report and SARIF log on one tree."""
    with tempfile.TemporaryDirectory() as scratch:
        report_path, sarif_path = os.path.join(scratch, "r.json"), os.path.join(scratch, "r.sarif")
        started = time.perf_counter()
        status = subprocess.run([*LINT, tree, *options, "--format", "json", "--out", report_path]).returncode
        seconds = time.perf_counter() - started
        subprocess.run([*LINT, tree, *options, "--format", "sarif", "--out", sarif_path], check=False)
        with open(report_path, encoding="utf-8") as f, open(sarif_path, encoding="utf-8") as g:
            return status, seconds, json.load(f), g.read()


def summary(name: str, tree: str, status: int, seconds: float, report: dict) -> dict:
    records = report["instructions"]
    where = lambda r: f"{os.path.relpath(r['file'], tree)}:{r['line']}"  # noqa: E731
    return {
        "tree": name, "exit_status": status, "seconds": round(seconds, 1), "files": report["files"],
        "totals": report["totals"], "errors": report["errors"],
        "illegal": [{"at": where(r), "rules": [x["id"] for x in r["rules"] if x["status"] == "broken"], "text": r["text"]}
                    for r in records if r["verdict"] == "illegal"],
        "unparsed": [{"at": where(r), "why": r["why"]} for r in records if r["verdict"] == "unparsed"],
        "skipped_by_reason": dict(Counter(r["why"].split(":")[0] if "outside the model" not in r["why"]
                                          else r["why"].split(" is outside")[0] + " (target outside the model)"
                                          for r in records if r["verdict"] == "skipped").most_common()),
        "legal_by_target": dict(Counter(r["arch"] for r in records if r["verdict"] == "legal")),
    }


def planted(name: str, tree: str) -> dict:
    """Copy the tree, plant PLANTED at the end of its first C++ file holding a tcgen05 statement
    (in name order), lint the copy, and report whether lint named that file and line."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, name)
        shutil.copytree(tree, copy, symlinks=True)
        target = next(os.path.join(root, f) for root, dirs, files in sorted(os.walk(copy)) for f in sorted(files)
                      if f.endswith((".cuh", ".hpp", ".h", ".cu")) and "tcgen05" in open(os.path.join(root, f), errors="replace").read())
        with open(target, encoding="utf-8", errors="replace") as f:
            text = f.read()
        line = text.count("\n") + (0 if text.endswith("\n") else 1) + 2  # the asm line of PLANTED
        with open(target, "a", encoding="utf-8") as f:
            f.write(("" if text.endswith("\n") else "\n") + PLANTED.format())
        result = subprocess.run([*LINT, copy], capture_output=True, text=True)
        expected = f"{target}:{line}: illegal (sm_100a) [alloc.columns]"
        return {"tree": name, "file": os.path.relpath(target, copy), "line": line, "exit_status": result.returncode,
                "found_at_file_line": any(out.startswith(expected) for out in result.stdout.splitlines()),
                "illegal_reported": [out for out in result.stdout.splitlines() if ": illegal " in out]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="a tree read where it is")
    parser.add_argument("--git", action="append", default=[], metavar="NAME=GITDIR", help="a git mirror, HEAD extracted")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    results, plants = [], []
    with tempfile.TemporaryDirectory() as scratch:
        trees = [tuple(t.split("=", 1)) + (None,) for t in args.tree]
        for spec in args.git:
            name, gitdir = spec.split("=", 1)
            head = subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
            where = os.path.join(scratch, name)
            os.makedirs(where)
            archive = subprocess.run(["git", "--git-dir", gitdir, "archive", "HEAD"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
            trees.append((name, where, head))
        for name, tree, head in trees:
            status, seconds, report, sarif = lint(tree)
            results.append(summary(name, tree, status, seconds, report) | ({"commit": head} if head else {}))
            with open(os.path.join(args.out, f"{name}.sarif"), "w", encoding="utf-8") as f:
                f.write(sarif)
            plants.append(planted(name, tree))
    with open(os.path.join(args.out, "trees.json"), "w", encoding="utf-8") as f:
        json.dump({"trees": results, "planted": plants}, f, indent=1)
        f.write("\n")
    ok = all(r["exit_status"] == 0 and not r["illegal"] for r in results) and all(
        p["exit_status"] == 1 and p["found_at_file_line"] for p in plants)
    for r in results:
        t = r["totals"]
        print(f"{r['tree']}: exit {r['exit_status']}, {r['seconds']} s, {r['files']} files, {t['instructions']} "
              f"instructions: {t['legal']} legal, {t['illegal']} illegal, {t['unparsed']} unparsed, {t['skipped']} skipped")
    for p in plants:
        print(f"{p['tree']} with a planted illegal alloc at {p['file']}:{p['line']}: exit {p['exit_status']}, "
              f"found there: {p['found_at_file_line']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
