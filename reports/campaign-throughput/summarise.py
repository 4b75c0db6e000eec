"""One line per campaign report and per worker-bench pass in a folder of device results:
python3 summarise.py DIR (the session's device scripts wrote such folders)."""

import glob
import json
import os
import sys

root = sys.argv[1]
for path in sorted(glob.glob(f"{root}/campaign-*.json")):
    with open(path, encoding="utf-8") as f:
        r = json.load(f)
    t = r["throughput"]
    print(os.path.basename(path), r["programs"], "mm", r["mismatches"], "err", r["errors"], "s", r["seconds"],
          "startup", r["startup_seconds"], "e2e", t["programs_per_s_end_to_end"], "after", t["programs_per_s_after_startup"],
          "gpu", t["programs_per_s_gpu"], "ratio", round(t["programs_per_s_end_to_end"] / t["programs_per_s_gpu"], 3),
          "ratio-after", round(t["programs_per_s_after_startup"] / t["programs_per_s_gpu"], 3),
          "wait", r["stages"]["gpu_workers"]["wait"]["seconds"], "restarts", r["gpus"][0]["restarts"])
for path in sorted(glob.glob(f"{root}/worker-*.json")):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except ValueError:
        print(path, "failed")
        continue
    for p in d["passes"]:
        print(os.path.basename(path), p["wall_s"], p["gpu_busy_s"], p["gpu_busy_over_wall"], p["programs_per_s"],
              p["programs_per_s_gpu"], p["worker_stages_s"])
