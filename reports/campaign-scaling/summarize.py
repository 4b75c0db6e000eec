"""The scaling table of campaign reports of one seed and count on 1, 2, 4 ... GPUs of a host
(`device-scaling.sh`), in markdown: per report its GPUs, programs, mismatches and errors, seconds,
programs/s end to end, that rate over the first report's (one GPU), the share of the GPU-side rate
it reached (`end_to_end_over_gpu`, issue 33's measure), the GPUs' idle seconds between batches
(all of them, and in gaps of 10 ms or more), and the producers' CPU milliseconds per program by
stage.

    python summarize.py gpus-1.json gpus-2.json gpus-4.json
"""

from __future__ import annotations

import json
import sys

PRODUCER_STAGES = ("draw", "kernel text", "assemble", "model", "pack", "spool")


def table(reports: list[dict]) -> str:
    first = reports[0]["throughput"]["programs_per_s_end_to_end"]
    lines = ["| GPUs | programs | mismatches | errors | seconds | programs/s end to end | vs one GPU | share of the "
             "GPU-side rate | GPU idle s (>= 10 ms gaps) | producer CPU ms/program |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in reports:
        t = r["throughput"]
        idle = sum(g["idle_between_batches_seconds"] for g in r["gpus"])
        long_gaps = sum(g["idle_between_batches_by_gap_seconds"][">=10 ms"] for g in r["gpus"])
        producers = r["stages"]["producers"]
        cpu = {name: producers[name]["cpu_ms_per_program"] for name in PRODUCER_STAGES if name in producers}
        stages = ", ".join(f"{name} {ms:.4f}" for name, ms in cpu.items())
        lines.append(f"| {len(r['gpus'])} | {r['programs']:,} | {r['mismatches']} | {r['errors']} | {r['seconds']:.1f} | "
                     f"{t['programs_per_s_end_to_end']:,.0f} | {t['programs_per_s_end_to_end'] / first:.2f} | "
                     f"{t['end_to_end_over_gpu']} | {idle:.2f} ({long_gaps:.2f}) | {sum(cpu.values()):.4f}: {stages} |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    reports = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    print(table(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
