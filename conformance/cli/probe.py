"""`probe`: run the probes of the assumptions ledger on a backend and give a verdict per
assumption (confirmed, refuted, not runnable here): docs/assumptions.md."""

from __future__ import annotations

import argparse
import sys

from tcgen05_conformance.cli.common import (
    EXIT_FAILED,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_STATUSES,
    backend_spec,
    command_line,
    deprecated_spelling,
    machine,
    output_file,
    output_folder,
    print_json,
    UsageError,
    seconds,
)
from tcgen05_conformance.cli.runs import BACKEND_HELP

VERDICT_EXIT = (f"{EXIT_STATUSES}; {EXIT_FAILED} when an assumption is refuted, {EXIT_NOTHING_RAN} when no probe is runnable "
                "on this backend here (no GPU, another architecture)")


def add(sub) -> None:
    pro = sub.add_parser(
        "probe", help="run every probe of the assumptions ledger a backend can execute, and the numeric probe vectors; "
                      "a verdict per assumption (docs/assumptions.md)",
        description="Run the probe programs of docs/assumptions.md (probes/*.json) and the numeric probe vectors (as "
                    "tcgen05.mma programs) on BACKEND, and compare what it observes with what each reading of each "
                    "assumption predicts (probes/readings.py): confirmed (the adopted reading's outcome), refuted (the "
                    "first differing words decoded, and the alternative readings that predicted what was seen), or not "
                    "runnable here (why). Writes probe.json and probe.html to --out.",
        epilog=VERDICT_EXIT)
    pro.add_argument("--backend", required=True, type=backend_spec, metavar="NAME", help=f"the backend to probe: {BACKEND_HELP}")
    deprecated_spelling(pro, "--report-dir", pro.add_argument(
        "--out", dest="report_dir", type=output_folder, default="out/probe", metavar="DIR",
        help="where probe.json and probe.html go (default out/probe; before 1.0 --report-dir)"))
    pro.add_argument("--json", action="store_true", help="print the report (probe.json) instead of the table")
    deprecated_spelling(pro, "--write-ledger", pro.add_argument(
        "--out-ledger", dest="write_ledger", type=output_file, metavar="FILE",
        help="write docs/assumptions.md to FILE with the verdict of every assumption that ran (confirmed or refuted) in "
             "its verdict column, for a maintainer to review as a diff (before 1.0 --write-ledger)"))
    pro.add_argument("--timeout", type=seconds, metavar="S",
                     help="observe in a child process killed after S seconds per batch (as run --timeout)")
    pro.set_defaults(func=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.report import ReportDir, ReportDirError

    try:  # checked and taken before the first probe runs
        folder = ReportDir(args.report_dir)
    except ReportDirError as e:
        raise UsageError(f"--out: {e}") from None
    try:
        return _probe(args, folder)
    finally:
        folder.close()


def _probe(args: argparse.Namespace, folder) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.assumptions.probe import LEDGER, NOT_RUNNABLE, REFUTED, run_probes, write_ledger, write_outputs

    report = run_probes(args.backend, args.timeout)
    report["command"] = command_line(args)
    report["machine"] = machine()
    paths = write_outputs(report, folder)
    if args.json:
        print_json(report)
    else:
        print(tabulate([[a, v["verdict"], v["detail"][:160]] for a, v in report["assumptions"].items()],
                       ["assumption", "verdict", "why"], tablefmt="simple"))
    counts = report["counts"]
    print(f"{args.backend}: {counts[REFUTED]} refuted, {counts['confirmed']} confirmed, {counts[NOT_RUNNABLE]} not runnable "
          f"here; reports: {', '.join(paths)}", file=sys.stderr)
    if args.write_ledger:
        changed = write_ledger(report, LEDGER, args.write_ledger)
        print(f"ledger with {len(changed)} verdicts updated: {args.write_ledger}", file=sys.stderr)
    if counts[REFUTED]:
        return EXIT_FAILED
    return EXIT_NOTHING_RAN if counts[NOT_RUNNABLE] == len(report["assumptions"]) else EXIT_OK
