"""`mutants`: plant realistic bugs in the oracle one at a time and count those the default suite catches."""

from __future__ import annotations

import argparse
import difflib

from tcgen05_conformance.cli.common import (
    EXIT_FAILED, EXIT_OK, UsageError, command_line, deprecated_spelling, examples, print_json, seed,
)


def add(sub) -> None:
    mut = sub.add_parser("mutants", help="plant realistic bugs in the oracle one at a time and count those the default "
                                         "suite catches (docs/mutants.md)")
    mut.add_argument("--json", action="store_true", help="print the report as JSON")
    mut.add_argument("--only", action="append", metavar="NAME", help="try this mutant only (repeatable; default: all)")
    deprecated_spelling(mut, "--examples", mut.add_argument(
        "--count", dest="examples", type=examples, default=200, metavar="N",
        help="programs of the default run in the suite (default 200; before 1.0 --examples)"))
    mut.add_argument("--seed", type=seed, default=0, help="generation seed of those programs and the numeric cases (default 0)")
    mut.set_defaults(func=cmd_mutants)


def cmd_mutants(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.mutation.mutants import MUTANTS
    from tcgen05_conformance.mutation.suite import MIN_SCORE, run_mutants

    for name in args.only or ():
        if name not in MUTANTS:
            close = difflib.get_close_matches(name, MUTANTS, 1)
            raise UsageError(f"unknown mutant {name!r}" + (f" (did you mean {close[0]}?)" if close else "") + "; docs/mutants.md lists them")
    names = list(dict.fromkeys(args.only)) if args.only else list(MUTANTS)
    report = run_mutants(names, args.examples, args.seed, command_line(args))
    if args.json:
        print_json(report)
    else:
        suite = report["suite"]
        print(f"suite: {suite['cases']} cases ({suite['program']} programs, {suite['probe']} probes, {suite['numeric']} numeric, "
              f"{suite['recorded']} recorded), golden outcomes in {suite['golden_seconds']:.0f} s; recorded vectors reproduced: "
              f"{report['recorded_vectors_reproduced']}" + (f" ({suite['recorded_note']})" if suite["recorded_note"] else ""))
        families = dict.fromkeys(r["family"] for r in report["results"])
        print(tabulate([[f, sum(r["family"] == f for r in report["results"]), sum(r["family"] == f and r["killed"] for r in report["results"])]
                        for f in families], ["family", "mutants", "killed"], tablefmt="simple"))
        print(f"killed {report['killed']} of {report['mutants']} mutants ({100 * report['score']:.1f}%, at least "
              f"{100 * MIN_SCORE:.0f}% needed) in {report['seconds']:.0f} s")
        for s in report["survived"]:
            print(f"  survived: {s['name']}: {s['description']}\n            {s['reason']}")
    passed = report["score"] >= MIN_SCORE and report["recorded_vectors_reproduced"] is not False
    return EXIT_OK if passed else EXIT_FAILED
