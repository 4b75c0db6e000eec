"""`fuzz`: malformed program files and damaged recorded-vector folders through the readers
(`tcgen05_conformance.fuzz.inputs`), or with --simulator faulty simulators through the `sim:`
protocol (`tcgen05_conformance.fuzz.simulator`), counted (issue 15's measurements,
reports/fuzz-input-readers/ and reports/fuzz-simulator-protocol/)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tcgen05_conformance.cli.common import (
    EXIT_FAILED, EXIT_OK, PROFILE_FILE_HELP, command_line, count, deprecated_spelling, machine, output_folder, print_json,
    UsageError, profile_spec, seed, seconds,
    write_json,
)

INPUT_LIMIT = 10**7


def add(sub) -> None:
    fz = sub.add_parser("fuzz", help="malformed program files and damaged vector folders through the readers, with Hypothesis: "
                                     "how many are accepted, refused on one line, end in a traceback or hang")
    deprecated_spelling(fz, "--examples", fz.add_argument(
        "--count", dest="examples", type=count(1, INPUT_LIMIT, "input count"), default=10_000, metavar="N",
        help="inputs per reader (default 10000; before 1.0 --examples)"))
    fz.add_argument("--seed", type=seed, default=0, help="Hypothesis seed, and the seed of the programs mutated (default 0)")
    fz.add_argument("--corpus", type=count(0, 100_000, "program count"), default=120, metavar="N",
                    help="programs of run to mutate, beside the probes (default 120)")
    fz.add_argument("--vectors", metavar="DIR", help="a GPU folder of recorded vectors whose format folders are damaged "
                                                     "(default: B200 of the recordings)")
    fz.add_argument("--profile", default="sm_100a", type=profile_spec, metavar="PROFILE",
                    help=f"profile the damaged vectors are checked with: a name {PROFILE_FILE_HELP} (default sm_100a)")
    fz.add_argument("--limit", type=seconds, default=30.0, metavar="S",
                    help="seconds an input may take before it counts as a hang (default 30)")
    fz.add_argument("--lint", action="store_true",
                    help="fuzz lint and import instead: N PTX and CUDA C++ files (Hypothesis text, spliced real lines, "
                         "hand-made hostile files; tcgen05_conformance.fuzz.lint_inputs); writes fuzz-lint.json and .md")
    fz.add_argument("--simulator", action="store_true",
                    help="fuzz the simulator protocol instead: N faulty simulator behaviours (answer lines, state files, "
                         "exits, delays) through one sim: backend")
    fz.add_argument("--harness", action="append", nargs="?", const="all", metavar="SURFACE",
                    help="fuzz the harness's own surfaces instead (tcgen05_conformance.fuzz.harness_surfaces): N "
                         "misbehaving plugins through run (plugins), damaged shard folders through report merge (merge), "
                         "damaged profile files (profiles), damaged journals resumed (journals), pytest plugin options "
                         "(pytest); all of them, or the SURFACE named (repeatable); writes fuzz-harness.json and .md")
    fz.add_argument("--out", type=output_folder, metavar="DIR",
                    help="write fuzz-inputs.json and fuzz-inputs.md here (with --simulator fuzz-simulator.json and .md)")
    fz.add_argument("--json", action="store_true", help="print the report as JSON")
    fz.set_defaults(func=cmd_fuzz)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from tcgen05_conformance.fuzz import inputs as fuzz_inputs
    from tcgen05_conformance.fuzz import simulator as fuzz_simulator
    from tcgen05_conformance.fuzz.inputs import HANG, RECORDED, TRACEBACK, WRONG

    if args.lint:
        from tcgen05_conformance.fuzz import lint_inputs

        tool, name, readers = lint_inputs, "fuzz-lint", ("lint",)
        report = lint_inputs.measure(args.run_cli, args.examples, args.seed, args.limit)
    elif args.harness:
        from tcgen05_conformance.fuzz import harness_surfaces

        readers = tuple(harness_surfaces.SURFACES) if "all" in args.harness else tuple(dict.fromkeys(args.harness))
        unknown = [r for r in readers if r not in harness_surfaces.SURFACES]
        if unknown:
            raise UsageError(f"--harness {unknown[0]}: not a surface ({', '.join(harness_surfaces.SURFACES)})")
        tool, name = harness_surfaces, "fuzz-harness"
        report = harness_surfaces.measure(args.run_cli, args.examples, args.seed, args.limit, readers)
    elif args.simulator:
        tool, name, readers = fuzz_simulator, "fuzz-simulator", ("simulator",)
        report = fuzz_simulator.measure(args.examples, args.seed, args.limit)
    else:
        tool, name, readers = fuzz_inputs, "fuzz-inputs", ("programs", "vectors")
        vectors = Path(args.vectors) if args.vectors else RECORDED / "B200"
        report = fuzz_inputs.measure(args.examples, args.seed, args.corpus, vectors, args.profile, args.limit)
    report["command"] = command_line(args)
    report["machine"] = machine()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_json(os.path.join(args.out, f"{name}.json"), report)
        with open(os.path.join(args.out, f"{name}.md"), "w", encoding="utf-8") as f:
            f.write(tool.markdown(report))
    if args.json:
        print_json(report)
    else:
        print(tool.markdown(report), end="")
    broken = sum(report[reader][TRACEBACK] + report[reader][HANG] + report[reader].get(WRONG, 0) for reader in readers)
    return EXIT_OK if broken == 0 else EXIT_FAILED
