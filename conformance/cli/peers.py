"""`peers`: the oracle's tcgen05 facts against what CUTLASS's own constructors compute (docs/peers.md)."""

from __future__ import annotations

import argparse

from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, NothingRan, command_line, print_json


def add(sub) -> None:
    peers = sub.add_parser("peers", help="cross-check the oracle's tcgen05 facts against CUTLASS's own constructors (needs a C++ "
                                         "compiler and the peers extra; docs/peers.md)")
    peers.add_argument("--json", action="store_true", help="print the report as JSON")
    peers.set_defaults(func=cmd_peers)


def cmd_peers(args: argparse.Namespace) -> int:
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
