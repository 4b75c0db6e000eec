"""`suite`: the release's frozen case list (`tcgen05_conformance.harness.suite`): `suite` (or
`suite show`) names it, `suite check DIR` judges a run's report folder against it, `suite freeze`
writes it (maintainers, when a release changes it)."""

from __future__ import annotations

import argparse
import sys

from tcgen05_conformance import SUITE_VERSION
from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, EXIT_STATUSES, output_file, print_json

SHOWN_IDS = 5  # case ids a console line lists before "..."


def suite_version(text: str) -> str:
    """A suite version this package holds, refused while parsing otherwise."""
    from tcgen05_conformance.harness.suite import versions

    if text not in versions():
        raise argparse.ArgumentTypeError(f"no suite {text!r} in this package (suites: {', '.join(versions()) or 'none'})")
    return text


def add(sub) -> None:
    sui = sub.add_parser(
        "suite", help=f"the release's frozen case list (suite {SUITE_VERSION}): name it, or check a run's results against it",
        description="A suite is a frozen list of stable case ids, with the oracle and profile versions their expected "
                    "states come from and its waivers. `run --suite VERSION` and `export --suite VERSION` run exactly "
                    "its cases; `suite check DIR` says whether the run in DIR passes it (docs/cli.md, \"Suites\").")
    sui.set_defaults(func=cmd_show, suite=SUITE_VERSION, json=False)
    actions = sui.add_subparsers(dest="action")
    show = actions.add_parser("show", help="name the suite: its cases, versions and waivers")
    show.add_argument("--suite", type=suite_version, default=SUITE_VERSION, metavar="VERSION",
                      help=f"the suite (default {SUITE_VERSION}, this release's)")
    show.add_argument("--json", action="store_true", help="print the whole suite file as JSON")
    show.set_defaults(func=cmd_show)
    chk = actions.add_parser("check", help="whether the run whose report folder is DIR passes the suite",
                             epilog=f"{EXIT_STATUSES}; 1 here: a backend under test did not pass every required case")
    chk.add_argument("dir", metavar="DIR", help="a run's --out folder (its summary.json), e.g. of run --suite 1.0")
    chk.add_argument("--suite", type=suite_version, default=SUITE_VERSION, metavar="VERSION",
                     help=f"the suite (default {SUITE_VERSION})")
    chk.add_argument("--json", action="store_true", help="print the verdict as JSON")
    chk.set_defaults(func=cmd_check)
    frz = actions.add_parser("freeze", help="draw the suite's programs and compute their expected states with the "
                                            "oracle: the suite file, as this installation gives it (maintainers)")
    frz.add_argument("--suite", default=SUITE_VERSION, metavar="VERSION", help=f"the suite (default {SUITE_VERSION})")
    frz.add_argument("--out", required=True, type=output_file, metavar="FILE",
                     help="where the suite file goes (the package's: conformance/harness/suites/VERSION.json)")
    frz.set_defaults(func=cmd_freeze)


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN_IDS]) + (" ..." if len(ids) > SHOWN_IDS else "")


def cmd_show(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.suite import load, required

    suite = load(args.suite)
    if args.json:
        print_json(suite)
        return EXIT_OK
    draw, waivers = suite["draw"], suite["waivers"]
    need = required(suite)
    print(f"suite {suite['suite']}: {len(suite['cases'])} cases, {len(need)} required; the programs of "
          f"`run --count {draw['count']} --seed {draw['seed']}`")
    print(f"expected states: {suite['reference']} of tcgen05-conformance {suite['frozen_with']['package']}; profiles "
          + ", ".join(f"{name} {digest[:12]}" for name, digest in suite["profiles"].items()))
    print(f"waived: what the ISA leaves undefined ({len(waivers['undefined_behaviour'])} program rules, which no case "
          f"breaks: {', '.join(w['rule'] for w in waivers['undefined_behaviour'])}); "
          f"{len(waivers['cases_without_expected_state'])} cases without an expected state "
          f"({_ids(waivers['cases_without_expected_state']) or 'none'})")
    print(f"run it: tcgen05-conformance run --suite {suite['suite']} --backend NAME --out DIR; then "
          f"tcgen05-conformance suite check DIR")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.suite import check, load

    verdict = check(args.dir, load(args.suite))
    if args.json:
        print_json(verdict)
        return EXIT_OK if verdict["passes"] else EXIT_FAILED
    if verdict["missing"]:
        print(f"the run lacks {len(verdict['missing'])} of the {verdict['required']} required cases: {_ids(verdict['missing'])}")
    for name, v in verdict["backends"].items():
        print(f"{name}: {v['passed']} of {verdict['required']} required cases passed"
              + (f"; failed {len(v['failed'])}: {_ids(v['failed'])}" if v["failed"] else "")
              + (f"; skipped {len(v['skipped'])}: {_ids(v['skipped'])}" if v["skipped"] else ""))
    if not verdict["backends"]:
        print("no backend under test: the run's only backend is the reference, which is compared with nothing")
    passing = [name for name, v in verdict["backends"].items() if v["passes"]]
    failing = [name for name, v in verdict["backends"].items() if not v["passes"]]
    if passing:
        print(f"{', '.join(passing)}: passes suite {verdict['suite']}")
    print(f"{', '.join(failing) or 'the run'}: does not pass suite {verdict['suite']}" if not verdict["passes"]
          else f"the run passes suite {verdict['suite']}")
    return EXIT_OK if verdict["passes"] else EXIT_FAILED


def cmd_freeze(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.suite import freeze, write

    suite = freeze(args.suite, lambda message: print(message, file=sys.stderr))
    write(suite, args.out)
    print(f"suite {suite['suite']}: {len(suite['cases'])} cases in {args.out}")
    return EXIT_OK
