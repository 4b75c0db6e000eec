"""`legality`: the legality model against the assembler on random instructions."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, command_line, deprecated_spelling, examples, print_json, seed
from tcgen05_conformance.core.isa.targets import TARGETS


def add(sub) -> None:
    leg = sub.add_parser("legality", help="the legality model against the assembler")
    deprecated_spelling(leg, "--examples", leg.add_argument(
        "--count", dest="examples", type=examples, default=2000, metavar="N",
        help="instructions, half legal, half illegal (default 2000; before 1.0 --examples)"))
    leg.add_argument("--arch", default="sm_100a", choices=tuple(TARGETS), help="the target drawn for (default sm_100a)")
    leg.add_argument("--seed", type=seed, default=0, help="generation seed (default 0)")
    leg.add_argument("--json", action="store_true", help="print the report as JSON")
    leg.set_defaults(func=cmd_legality)


def cmd_legality(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.harness.against_assembler import run_legality

    progress = None if args.json else (lambda message: print(message, file=sys.stderr))
    report = run_legality(args.arch, args.examples, args.seed, progress)
    data = asdict(report)
    data["command"] = command_line(args)
    if args.json:
        print_json(data)
    else:
        print(f"legality on {report.arch} (seed {report.seed}, {report.assembler}): {report.examples} instructions")
        print(tabulate([
            ["legal: accepted / rejected", f"{report.legal_accepted} / {report.legal_rejected}"],
            ["illegal, assembler rule: rejected / accepted", f"{report.illegal_rejected} / {report.illegal_accepted}"],
            ["illegal, oracle rule (invisible to ptxas)", report.illegal_oracle_only],
            ["diagnostics naming the broken rule", report.diagnostic_rule_matches],
            ["assembly time / programs per second", f"{report.assemble_seconds:.2f} s / {report.programs_per_second:.0f}"],
        ], tablefmt="simple"))
        for d in report.disagreements[:10]:
            print(f"- {d['kind']} [{d['rule']}]: {d['ptx']}\n    model: {d['model']}\n    ptxas: {d['assembler']}")
    return EXIT_OK if report.passed() else EXIT_FAILED
