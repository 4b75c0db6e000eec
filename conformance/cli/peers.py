"""`peers`: the oracle's tcgen05 facts against what CUTLASS's own constructors compute, and its tcgen05
arithmetic against MMA-Sim's (docs/peers.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tcgen05_conformance.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    NothingRan,
    UsageError,
    command_line,
    count,
    output_file,
    print_json,
    seed,
)


def add(sub) -> None:
    peers = sub.add_parser("peers", help="cross-check the oracle's tcgen05 facts against CUTLASS's own constructors (needs a C++ "
                                         "compiler and the peers extra; docs/peers.md)")
    peers.add_argument("--json", action="store_true", help="print the report as JSON")
    numeric = peers.add_mutually_exclusive_group()
    numeric.add_argument("--mmasim", action="store_true",
                         help="instead: the oracle's tcgen05.mma arithmetic (sm_100a) against MMA-Sim itself, over "
                              "discriminating vectors of every combination both model (needs the mmasim extra: mmasim, torch)")
    numeric.add_argument("--mmasim-sample", nargs="?", const="", metavar="FILE",
                         help="instead: the same comparison against a saved sample of MMA-Sim's answers, no torch needed "
                              "(default: the committed reports/numerics-tcgen05-vs-mmasim/mmasim-sample.npz)")
    peers.add_argument("--count", type=count(1, 10**9, "vector count"), default=100_000,
                       help="with --mmasim: vectors per combination (default 100000)")
    peers.add_argument("--seed", type=seed, default=0, help="with --mmasim: the vectors' seed (default 0)")
    peers.add_argument("--out-sample", type=output_file, metavar="FILE",
                       help="with --mmasim: also write the first 2000 vectors of each combination and MMA-Sim's answers "
                            "to FILE (.npz), the sample --mmasim-sample reads")
    peers.set_defaults(func=cmd_peers)


def cmd_peers(args: argparse.Namespace) -> int:
    """The CUTLASS cross-check, or with --mmasim / --mmasim-sample the numeric comparison with MMA-Sim."""
    if args.out_sample and not args.mmasim:
        raise UsageError("peers: --out-sample needs --mmasim")
    if args.mmasim or args.mmasim_sample is not None:
        return _cmd_mmasim(args)
    return _cmd_cutlass(args)


def _cmd_mmasim(args: argparse.Namespace) -> int:
    """The MMA-Sim comparison (live or from the sample); exit status 1 on an unexplained difference."""
    from tabulate import tabulate

    from tcgen05_conformance.peers import mmasim

    if args.mmasim:
        try:
            report = mmasim.run_live(args.count, args.seed,
                                     write_sample=Path(args.out_sample) if args.out_sample else None)
        except mmasim.MmasimUnavailable as e:
            raise NothingRan(f"peers --mmasim: {e}") from None
    else:
        try:
            report = mmasim.run_sample(Path(args.mmasim_sample) if args.mmasim_sample else mmasim.SAMPLE)
        except mmasim.SampleError as e:
            raise UsageError(f"peers --mmasim-sample: {e}") from None
    report["command"] = command_line(args)
    if args.json:
        print_json(report)
    else:
        print(f"MMA-Sim against the oracle's {report['profile']}: {report['source']}")
        print(tabulate([[r["combination"], r["vectors"], r["unexplained"]] for r in report["combinations"]],
                       ["combination", "vectors", "unexplained"], tablefmt="simple"))
        for r in report["combinations"]:
            for e in r["examples"][:1]:
                print(f"  {r['combination']}: e.g. {e}")
        print(f"{report['vectors']} vectors, {report['unexplained']} unexplained differences")
    return EXIT_OK if report["unexplained"] == 0 else EXIT_FAILED


def _cmd_cutlass(args: argparse.Namespace) -> int:
    """Every comparison, and exit status 1 on a difference the expected table does not explain;
    nothing runs (one line saying why) without a C++ compiler or the nvidia-cutlass package."""
    from tabulate import tabulate

    from tcgen05_conformance.peers.cutlass import cross_check
    from tcgen05_conformance.peers.cutlass_toolchain import PeersUnavailable

    try:
        report = cross_check()
    except PeersUnavailable as e:
        raise NothingRan(f"peers: {e}") from None
    report["command"] = command_line(args)
    if args.json:
        print_json(report)
    else:
        rows = [[a["area"], a["configurations"], a["facts"], sum(d["count"] for d in a["differences"] if d["expected"]),
                 sum(d["count"] for d in a["differences"] if not d["expected"])] for a in report["areas"]]
        print(f"CUTLASS {report['cutlass']} ({report['compiler']})")
        print(tabulate(rows, ["area", "configurations", "facts", "expected differences", "unexplained"], tablefmt="simple"))
        for a in report["areas"]:
            for d in a["differences"]:
                status = f"expected ({d['assumption']})" if d["expected"] else "UNEXPLAINED"
                print(f"  {a['area']} {d['key']}: {d['count']} {status}; e.g. {d['examples'][0]}")
        print(f"{report['unexplained']} unexplained differences")
    return EXIT_OK if report["unexplained"] == 0 else EXIT_FAILED
