"""`vectors check`: a numeric profile against recorded tensor-core inner products."""

from __future__ import annotations

import argparse

from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, PROFILE_FILE_HELP, UsageError, command_line, print_json, profile_spec
from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES


def add(sub) -> None:
    vec = sub.add_parser("vectors", help="check a numeric profile against recorded tensor-core vectors")
    vec_sub = vec.add_subparsers(dest="vectors_command", required=True)
    chk = vec_sub.add_parser("check", help="replay recorded inner products through a profile and count mismatches")
    chk.add_argument("dir", help="a GPU folder (e.g. oracles/numerics/recordings/tensor-core-vectors/B200, shipped with the "
                                 "project) or one format folder; a folder without a recording.json manifest must be one of "
                                 "the publishers' (B200, H100, H200)")
    chk.add_argument("--profile", required=True, type=profile_spec, metavar="PROFILE",
                     help=f"the profile checked: {', '.join(PROFILE_NAMES)} (each file by its instruction's variant), an "
                          f"instruction variant such as sm_90a.mma_sync, {PROFILE_FILE_HELP}")
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.set_defaults(func=cmd_vectors)


def cmd_vectors(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.oracles.numerics import VectorFileError, check_vectors

    try:
        result = check_vectors(args.dir, args.profile)
    except (VectorFileError, FileNotFoundError, NotADirectoryError) as e:
        raise UsageError(str(e)) from None
    result["command"] = command_line(args)
    if args.json:
        print_json(result)
    else:
        rows = [[f["file"], f["format"], f["output"], f["recorded_with"], f["c"], f["vectors"], f["mismatches"]] for f in result["files"]]
        print(tabulate(rows, ["file", "format", "output", "recorded with", "c", "vectors", "mismatches"], tablefmt="simple"))
        for convention in dict.fromkeys(f["convention"] for f in result["files"]):
            print(f"conventions: {convention}")
        print(f"profile {args.profile}: {result['vectors']} vectors, {result['mismatches']} mismatches")
    return EXIT_OK if result["mismatches"] == 0 else EXIT_FAILED
