import glob, json, os, sys
root = sys.argv[1]
for f in sorted(glob.glob(f"{root}/campaign-*.json")):
    r = json.load(open(f))
    t = r["throughput"]
    print(os.path.basename(f), r["programs"], "mm", r["mismatches"], "err", r["errors"], "s", r["seconds"], "startup", r["startup_seconds"],
          "e2e", t["programs_per_s_end_to_end"], "after", t["programs_per_s_after_startup"], "gpu", t["programs_per_s_gpu"],
          "ratio", round(t["programs_per_s_end_to_end"] / t["programs_per_s_gpu"], 3),
          "ratio-after", round(t["programs_per_s_after_startup"] / t["programs_per_s_gpu"], 3),
          "wait", r["stages"]["gpu_workers"]["wait"]["seconds"], "restarts", r["gpus"][0]["restarts"])
for f in sorted(glob.glob(f"{root}/worker-*.json")):
    try:
        d = json.load(open(f))
    except ValueError:
        print(f, "failed"); continue
    for p in d["passes"]:
        print(os.path.basename(f), p["wall_s"], p["gpu_busy_s"], p["gpu_busy_over_wall"], p["programs_per_s"], p["programs_per_s_gpu"], p["worker_stages_s"])
