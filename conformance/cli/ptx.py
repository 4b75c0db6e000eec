"""`lint` and `import`: PTX text someone holds, judged by the legality rules or turned into a
program; `spellings` and `lint-agreement`: the measurements behind them (docs/lint.md)."""

from __future__ import annotations

import argparse
import re
import sys

from tcgen05_conformance.cli.common import (
    EXIT_FAILED, EXIT_OK, UsageError, command_line, deprecated_spelling, print_json, write_json,
)
from tcgen05_conformance.cli.common import EXIT_USAGE
from tcgen05_conformance.core.isa.targets import TARGETS


def add(sub) -> None:
    lnt = sub.add_parser("lint", help="check the tcgen05 / wgmma / mma.sp instructions of PTX files, CUDA sources' inline "
                                      "asm, whole source trees or stdin against the legality rules (docs/lint.md)",
                         epilog="exit status: 0 when no instruction is illegal, 1 when one is, 2 on bad usage, a "
                                "path that does not exist or a file that could not be read (one line each)")
    lnt.add_argument("paths", nargs="+", metavar="PATH",
                     help="a .ptx file, a CUDA C++ source (.cu .cuh .hpp .h .cpp ...: its inline asm), a directory "
                          "(its .ptx and C++ files, recursively) or - for PTX on stdin")
    lnt.add_argument("--arch", type=arch_name, metavar="TARGET",
                     help="the target where a file names none (no .target, arch guard or smNNN in its name); default: "
                          "sm_100a for tcgen05, sm_90a for wgmma and mma.sp")
    lnt.add_argument("--arch-override", type=arch_name, metavar="TARGET",
                     help="judge every instruction for this target, whatever its file names")
    lnt.add_argument("--include", action="append", default=[], metavar="GLOB",
                     help="in directories, lint only files whose path under the directory or name matches (repeatable)")
    lnt.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                     help="in directories, skip files whose path under the directory or name matches (repeatable)")
    lnt.add_argument("-v", "--verbose", action="store_true",
                     help="show every instruction (legal, skipped, undecided rules), not only the problems")
    lnt.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                     help="text (default), json (every instruction) or sarif (SARIF 2.1.0, for code scanning)")
    lnt.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    lnt.add_argument("--out", metavar="FILE", help="write the report here (default: stdout)")
    lnt.set_defaults(func=cmd_lint)

    imp = sub.add_parser("import", help="turn a straight-line tcgen05 sequence with constant operands (a .ptx file) "
                                        "into a program JSON that replay runs (docs/lint.md)")
    imp.add_argument("file", metavar="FILE.ptx", help="the PTX file holding the sequence")
    imp.add_argument("--arch", choices=tuple(TARGETS), help="target (default: the module's .target)")
    imp.add_argument("--label", help="the program's label (default: imported from FILE)")
    imp.add_argument("--out", metavar="FILE", help="write the program JSON here (default: stdout)")
    imp.set_defaults(func=cmd_import)

    spl = sub.add_parser("spellings", help="ask the assembler which qualifier orders and operand forms of every tcgen05 / "
                                           "wgmma / mma.sp form it accepts (the findings behind conformance/core/ptx/spelling.py)")
    spl.add_argument("--out", required=True, metavar="FILE", help="where the JSON findings go")
    spl.add_argument("--seed", type=int, default=0, help="seed of the sampled qualifier orders (default 0)")
    spl.set_defaults(func=cmd_spellings)

    agr = sub.add_parser("lint-agreement", help="the parser and lint against the assembler on random legal and "
                                                "one-rule-broken instructions, each in a drawn accepted spelling")
    agr.add_argument("--arch", required=True, choices=tuple(TARGETS), help="the target drawn for and assembled for")
    deprecated_spelling(agr, "--examples", agr.add_argument(
        "--count", dest="examples", type=int, default=5000, metavar="N",
        help="instructions, half legal, half one-rule-broken (default 5000; before 1.0 --examples)"))
    agr.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    agr.add_argument("--hostile", action="store_true",
                     help="the hostile corpus instead: N one-token mutations of legal instructions in drawn spellings, "
                          "each assembled in a child process (fails on a `legal` ptxas rejects or an assembler rule "
                          "ptxas accepts)")
    agr.add_argument("--out", metavar="FILE", help="write the JSON report here (default: stdout)")
    agr.set_defaults(func=cmd_lint_agreement)


def arch_name(text: str) -> str:
    """A target as ptxas names it (sm_90a, sm_100a, sm_120a, sm_80 ...): one outside the model's
    targets is accepted, and its instructions are skipped."""
    if not re.fullmatch(r"sm_\d{2,3}[af]?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a target such as {', '.join(TARGETS)}")
    return text


def cmd_lint(args: argparse.Namespace) -> int:
    import json

    from tcgen05_conformance import __version__
    from tcgen05_conformance.lint.sarif import sarif
    from tcgen05_conformance.lint.verdicts import LintInputError, Targets, format_text, lint

    try:
        report = lint(args.paths, Targets(args.arch_override, args.arch), args.include, args.exclude)
    except LintInputError as e:
        raise UsageError(str(e)) from None
    report["command"] = command_line(args)
    if args.format == "text":
        text = format_text(report, args.verbose)
    else:
        text = json.dumps(sarif(report, __version__) if args.format == "sarif" else report, indent=1)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            raise UsageError(f"--out {args.out}: cannot write ({e.strerror})") from None
    else:
        print(text)
    if report["totals"]["illegal"]:
        return EXIT_FAILED
    return EXIT_USAGE if report["errors"] else EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from tcgen05_conformance.core.program import dumps
    from tcgen05_conformance.lint.program_import import PtxImportError, import_ptx

    from tcgen05_conformance.core.inputs import InputError, read_text
    from tcgen05_conformance.lint.verdicts import MAX_SOURCE_BYTES

    try:
        text = read_text(args.file, MAX_SOURCE_BYTES)
    except InputError as e:
        raise UsageError(str(e)) from None
    try:
        program = import_ptx(text, args.file, args.arch, args.label)
    except PtxImportError as e:
        raise UsageError(str(e)) from None
    if not args.out:
        print(dumps(program))
        return EXIT_OK
    try:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(dumps(program) + "\n")
    except OSError as e:
        raise UsageError(f"--out {args.out}: cannot write ({e.strerror})") from None
    print(f"{program.case_id}: {len(program.ops)} operations for {program.target} in {args.out}")
    return EXIT_OK


def _progress(message: str) -> None:
    print(message, file=sys.stderr)


def cmd_spellings(args: argparse.Namespace) -> int:
    from tcgen05_conformance.lint.spellings import run

    report = run(args.seed, _progress)
    report["command"] = command_line(args)
    _write(args.out, report)
    return EXIT_OK


def cmd_lint_agreement(args: argparse.Namespace) -> int:
    from tcgen05_conformance.lint import agreement, hostile_agreement

    measurement = hostile_agreement if args.hostile else agreement
    report = measurement.run(args.arch, args.examples, args.seed, _progress)
    report["command"] = command_line(args)
    if args.out:
        _write(args.out, report)
    else:
        print_json(report)
    return EXIT_OK if measurement.passed(report) else EXIT_FAILED


def _write(path: str, report: dict) -> None:
    try:
        write_json(path, report)
    except OSError as e:
        raise UsageError(f"--out {path}: cannot write ({e.strerror})") from None
