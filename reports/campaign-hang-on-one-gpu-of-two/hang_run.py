"""A campaign on two sm_90 GPUs whose worker on GPU 1 hangs its GPU behind one launch group
(`tests.device.planted_kernels:hang_on_gpu_1`, the hanging kernel queued after the group): the
report shows which cases were charged, what each says, and what each GPU ran.

    PYTHONPATH=$PWD FAKE_LAUNCHER_MARKERS=$(mktemp -d) python reports/campaign-hang-on-one-gpu-of-two/hang_run.py OUT.json [PROGRAMS]

Run from a checkout (the `tests` package is imported); needs two sm_90 GPUs."""

from __future__ import annotations

import json
import os
import sys

from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.device.launch import visible_devices

WATCHDOG_S = 30.0


def main(out: str, programs: int) -> None:
    settings = tool.Settings(programs=programs, seed=33001, numerics=tool.CHECKER, draw=tool.GPU_DRAW,
                             cache_dir=os.environ.get("TCGEN05_CACHE", "/tmp/kc"))
    report = tool.campaign(settings, os.cpu_count() or 1, visible_devices()[:2], "tests.device.planted_kernels:hang_on_gpu_1",
                           None, WATCHDOG_S)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: report[k] for k in ("programs", "errors", "mismatches", "seconds")}),
          [(g["index"], g["programs"], g["restarts"], g["incidents"]) for g in report["gpus"]])


if __name__ == "__main__":  # the campaign spawns its workers, which import this file again
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000)
