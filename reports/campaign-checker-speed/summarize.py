"""The checker A/B's table from bench/stream_worker.py reports: per pass, programs per GPU-second,
the checker's GPU seconds per million programs, and the tensor core's share of the GPU's busy time;
then, over all passes of each side (before, after), the ratios of the means.

    python summarize.py stream-worker-*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(path: Path, sides: dict[str, list]) -> list[str]:
    report = json.loads(path.read_text())
    side = path.stem.removeprefix("stream-worker-")
    out = []
    for i, p in enumerate(report["passes"], 1):
        sides.setdefault(side.split("-")[0], []).append(p)
        stages, busy = p["gpu_stages_s"], p["gpu_busy_s"]
        out.append(f"| {side} pass {i} | {p['programs']:,} | {p['mismatched_programs']} | {busy:.3f} | "
                   f"{p['programs_per_s_gpu']:,.0f} | {1e6 * stages['reference'] / p['programs']:.3f} | "
                   f"{1e6 * stages['launch'] / p['programs']:.3f} | {stages['launch'] / busy:.3f} | "
                   f"{stages['reference'] / busy:.3f} |")
    return out


def main() -> None:
    print("| run | programs | mismatched | GPU busy s | programs per GPU-second | checker s per 10^6 programs | "
          "tensor core s per 10^6 programs | tensor core share | checker share |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    sides: dict[str, list] = {}
    for name in sys.argv[1:]:
        try:
            print("\n".join(rows(Path(name), sides)))
        except (OSError, ValueError, KeyError) as e:
            print(f"| {Path(name).stem} | (unreadable: {e}) |")
    if {"before", "after"} <= sides.keys():
        def mean(side: str, value) -> float:
            return sum(value(p) for p in sides[side]) / len(sides[side])

        checker = [mean(s, lambda p: p["gpu_stages_s"]["reference"] / p["programs"]) for s in ("before", "after")]
        rate = [mean(s, lambda p: p["programs_per_s_gpu"]) for s in ("before", "after")]
        print(f"\nThe checker's GPU seconds per program, before over after: {checker[0] / checker[1]:.2f}x. "
              f"Programs per GPU-second, after over before: {rate[1] / rate[0]:.2f}x.")


if __name__ == "__main__":
    main()
