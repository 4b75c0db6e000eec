"""`bench`: the oracle's throughput, per inner product and per whole MMA (`tcgen05_conformance.bench.oracle_throughput`)."""

from __future__ import annotations

import argparse

from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, command_line, count, print_json

BATCH_LIMIT = 10**7


def add(sub) -> None:
    ben = sub.add_parser("bench", help="oracle throughput: microseconds per inner product per format, milliseconds per MMA")
    ben.add_argument("--batch", type=count(1, BATCH_LIMIT, "batch size"), default=100_000, metavar="N",
                     help="inner products per timed batch; the pure-Python reference runs on at most 300 of them "
                          "(default 100000)")
    ben.add_argument("--json", action="store_true", help="print the report as JSON")
    ben.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.bench.oracle_throughput import bench

    result = bench(batch=args.batch)
    result["command"] = command_line(args)
    if args.json:
        print_json(result)
    else:
        rows = [[r["profile"], r["input"], r["accumulator"], r["K"], r["vectorised_us"], r["reference_us"],
                 r["speedup"], r["reference_agrees"]] for r in result["cases"]]
        print(tabulate(rows, ["profile", "input", "acc", "K", "us / inner product", "reference us", "ratio",
                              "agrees"], tablefmt="simple"))
        t = result["target"]
        print(f"target: {t['case']} at most {t['limit_us']} us: measured {t['measured_us']} us "
              f"({'met' if t['met'] else 'NOT met'})")
        m = result["mma"]
        print(tabulate([[r["kind"], r["input"], r["accumulator"], r["shape"], r["profile"], r["ms"]] for r in m["cases"]],
                       ["kind", "input", "acc", "M x N x K", "profile", "ms / MMA"], tablefmt="simple"))
        t = m["target"]
        print(f"target: {t['case']} at most {t['limit_ms']} ms: measured {t['measured_ms']} ms ({'met' if t['met'] else 'NOT met'})")
    return EXIT_OK if all(r["reference_agrees"] for r in result["cases"]) else EXIT_FAILED
