"""`report merge`: the report folders of a run's shards (`run --shard I/N`) combined into the
report of the whole run (`tcgen05_conformance.harness.merge`)."""

from __future__ import annotations

import argparse
import os

from tcgen05_conformance.cli.common import (
    EXIT_COVERAGE_MISSED, EXIT_FAILED, EXIT_OK, UsageError, coverage_missed_line, output_folder,
)


def add(sub) -> None:
    report = sub.add_parser("report", help="work on report folders: merge the shards of a run")
    actions = report.add_subparsers(dest="action", required=True)
    merge = actions.add_parser(
        "merge", help="combine the report folders of `run --shard I/N` into the whole run's",
        description="Check that the folders are every shard of one run, once each (same seed, examples, profile, "
                    "backends, version and source commit), draw the run's programs again from its seed and write the "
                    "whole run's summary.json, report.md, report.html, junit.xml and failing cases to --out; the "
                    "shards' value coverage hits are merged and must equal those of the run's programs.")
    merge.add_argument("folders", nargs="+", metavar="DIR", help="a shard's report folder (its run --out)")
    merge.add_argument("--out", required=True, type=output_folder, metavar="DIR", help="where the merged reports go")
    merge.add_argument("--require-coverage", action="store_true",
                       help=f"exit {EXIT_COVERAGE_MISSED} when every case passed but the whole run missed a reachable "
                            "value coverpoint (as run --require-coverage)")
    merge.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.merge import merge

    for folder in args.folders:
        if not os.path.isdir(folder):
            raise UsageError(f"{folder}: not a folder")
    summary, paths = merge(args.folders, args.out, ["tcgen05-conformance", *args.argv])
    t = summary["totals"]
    print(f"{len(args.folders)} shards, {summary['cases']} cases: {t['passed']} passed, {t['failed']} failed, "
          f"{t['errors']} errors, {t['skipped']} skipped; reports: {', '.join(paths)}")
    values = summary["value_coverage"]
    print(f"value coverpoints hit: {values['hit']}/{values['reachable']} reachable")
    if t["failed"] or t["errors"]:
        return EXIT_FAILED
    if args.require_coverage and values["missed"]:
        print(coverage_missed_line(values))
        return EXIT_COVERAGE_MISSED
    return EXIT_OK
