"""The campaign's before-and-after on one machine, in one session: runs `tcgen05-conformance
campaign` (in this checkout) four times and writes one JSON and one Markdown table of what each
run measured.

- before: every program its own instruction, the oracle one program at a time, every kernel form
  assembled afresh, the Python model computing every D (`--data-sets 1 --no-batch-oracle
  --no-cache --numerics model`), the way the campaign worked before its stages were batched and
  cached;
- host draws, warm cache: the data sets drawn on the host and the integer checker computing D on
  the GPU (`--draw host`), the previous best, with the kernel cache the before run's seed left
  (another seed: partly warm);
- GPU draws, cold cache: the defaults (the data sets drawn on the GPU, `--draw gpu`), a fresh seed,
  with the kernel forms it meets first assembled;
- GPU draws, warm cache: the same seed again, every kernel form in the cache.

With `--also-one-gpu`, a fifth run repeats the last on one GPU, for the scaling ratio of a host
with several GPUs. `--data-sets N` is passed to every run but the first.

    python reports/campaign-throughput/gpu-draws-before-after/campaign_before_after.py --programs 50000 \
        [--before-programs 20000] [--host-programs 50000] --out $OUT
        [--gpus all] [--also-one-gpu]

The before run is the slow one: `--before-programs` gives it fewer programs than the others
(rates per second are compared, not totals), so that the three fit in a device session.

Exit status 0 when every run had 0 mismatches and 0 errors, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the checkout's root
STAGES = {"producers": ("draw", "reference", "kernel text", "assemble", "pack", "model", "spool", "wait"),
          "gpu_workers": ("wait", "read", "load", "draw", "copy_in", "launch", "read_back", "reference", "compare")}


def campaign(args: argparse.Namespace, name: str, programs: int, seed: int, extra: list[str], cache: str, gpus: str) -> dict:
    report = os.path.join(args.out, f"campaign-{name}.json")
    command = [sys.executable, "-m", "conformance", "campaign", "--programs", str(programs), "--seed", str(seed),
               "--gpus", gpus, "--json", report, *extra, *(["--host-only"] if args.host_only else []),
               *(["--jobs", str(args.jobs)] if args.jobs else [])]
    env = {**os.environ, "TCGEN05_CACHE": cache, "PYTHONPATH": ROOT}
    print(" ".join(command[1:]), file=sys.stderr, flush=True)
    status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    if not os.path.exists(report):
        raise SystemExit(f"campaign-before-after: the {name} run exited with status {status} and wrote no report")
    with open(report, encoding="utf-8") as f:
        return json.load(f)


def row(name: str, r: dict) -> dict:
    t = r["throughput"]
    end_to_end, gpu = t["programs_per_s_end_to_end"], t["programs_per_s_gpu"]
    stages = {f"{where}.{s}": r["stages"][where].get(s, {}).get("cpu_ms_per_program" if where == "producers" else "ms_per_program")
              for where, names in STAGES.items() for s in names}
    core = sum(stages[f"producers.{s}"] or 0 for s in ("draw", "reference", "assemble", "model"))
    producers = sum(v or 0 for k, v in stages.items() if k.startswith("producers.") and k != "producers.wait")
    return {"run": name, "command": r["command"], "gpus": len(r["gpus"]), "programs": r["programs"],
            "instructions": r["instructions"], "launches": r["launches"], "inner_products": r["inner_products_total"],
            "mismatches": r["mismatches"], "errors": r["errors"], "seconds": r["seconds"],
            "startup_seconds": r.get("startup_seconds"), "programs_per_s_after_startup": t.get("programs_per_s_after_startup"),
            "gpu_worker_idle_s": r["stages"]["gpu_workers"].get("wait", {}).get("seconds"),
            "programs_per_s_end_to_end": end_to_end, "programs_per_s_gpu": gpu,
            "end_to_end_over_gpu": round(end_to_end / gpu, 3) if gpu else None,
            "inner_products_per_s_end_to_end": t["inner_products_per_s_end_to_end"],
            "kernel_cache": r["kernel_cache"], "gpu_busy_s": [g["busy_seconds"] for g in r["gpus"]],
            "ms_per_program": stages,
            "producer_cpu_ms_per_program": {"draw+reference+assemble+model": round(core, 3), "every producer stage": round(producers, 3)},
            "programs_per_producer_cpu_second": {"draw+reference+assemble+model": round(1e3 / core, 1) if core else None,
                                                 "every producer stage": round(1e3 / producers, 1) if producers else None}}


def markdown(rows: list[dict], machine: str) -> str:
    lines = [f"Machine: {machine}", "",
             "| run | GPUs | programs | instructions | launches | mismatches | errors | seconds | startup s "
             "| programs/s end to end | after startup | programs/s on the GPUs | ratio | kernels assembled / from cache "
             "| GPU busy s | GPU workers idle s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['gpus']} | {r['programs']:,} | {r['instructions']:,} | {r['launches']:,} | "
                     f"{r['mismatches']} | {r['errors']} | {r['seconds']} | {r['startup_seconds']} | "
                     f"{r['programs_per_s_end_to_end']} | {r['programs_per_s_after_startup']} | "
                     f"{r['programs_per_s_gpu']} | {r['end_to_end_over_gpu']} | {r['kernel_cache']['assembled']} / "
                     f"{r['kernel_cache']['hits']} | {', '.join(map(str, r['gpu_busy_s']))} | {r['gpu_worker_idle_s']} |")
    lines += ["", "Milliseconds per program in each stage (producers: CPU time summed over the producer processes; "
              "GPU workers: wall time summed over the workers):", "",
              "| stage | " + " | ".join(r["run"] for r in rows) + " |", "| --- |" + " --- |" * len(rows)]
    for stage in rows[0]["ms_per_program"]:
        lines.append(f"| {stage} | " + " | ".join(str(r["ms_per_program"][stage]) for r in rows) + " |")
    for what in rows[0]["producer_cpu_ms_per_program"]:
        lines.append(f"| producers' CPU, {what} | " + " | ".join(str(r["producer_cpu_ms_per_program"][what]) for r in rows) + " |")
    for what in rows[0]["programs_per_producer_cpu_second"]:
        lines.append(f"| programs per producer CPU second, {what} | "
                     + " | ".join(str(r["programs_per_producer_cpu_second"][what]) for r in rows) + " |")
    lines += ["", "Commands:", ""] + [f"    {r['command']}" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=50_000, help="programs per run (default 50000)")
    parser.add_argument("--before-programs", type=int, help="programs of the before run (default: --programs)")
    parser.add_argument("--host-programs", type=int, help="programs of the host-draws run (default: --programs)")
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(3), "little"),
                        help="the first run's seed; the others take the next ones (default: a fresh random one)")
    parser.add_argument("--gpus", default="all", help="--gpus of every run (default all; with --host-only, a count)")
    parser.add_argument("--also-one-gpu", action="store_true", help="add the warm-cache run on one GPU")
    parser.add_argument("--host-only", action="store_true", help="pass --host-only to every run (no GPU: the host side)")
    parser.add_argument("--jobs", type=int, help="--jobs of every run (default: the campaign's, every core)")
    parser.add_argument("--data-sets", type=int, help="--data-sets of every run but the first (default: the campaign's)")
    parser.add_argument("--out", required=True, help="folder for the reports, campaign-before-after.json and .md")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="tcgen05-kernels-")  # outside --out: cubins are not a result
    try:
        before = args.before_programs or args.programs
        data_sets = ["--data-sets", str(args.data_sets)] if args.data_sets else []
        runs = [("before", before, args.seed, ["--data-sets", "1", "--no-batch-oracle", "--no-cache", "--numerics", "model"],
                 args.gpus),
                ("host draws, warm cache", args.host_programs or args.programs, args.seed + 1, [*data_sets, "--draw", "host"],
                 args.gpus),
                ("GPU draws, cold cache", args.programs, args.seed + 2, data_sets, args.gpus),
                ("GPU draws, warm cache", args.programs, args.seed + 2, data_sets, args.gpus)]
        if args.also_one_gpu:
            runs.append(("GPU draws, warm cache, one GPU", args.programs, args.seed + 2, data_sets, "1"))
        reports = [(name, campaign(args, name.replace(", ", "-").replace(" ", "-"), programs, seed, extra, cache, gpus))
                   for name, programs, seed, extra, gpus in runs]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    rows = [row(name, r) for name, r in reports]
    machine = reports[0][1]["machine"] + "; " + reports[0][1]["gpu"]
    with open(os.path.join(args.out, "campaign-before-after.json"), "w", encoding="utf-8") as f:
        json.dump({"machine": machine, "runs": rows}, f, indent=1)
    with open(os.path.join(args.out, "campaign-before-after.md"), "w", encoding="utf-8") as f:
        f.write(markdown(rows, machine))
    print(markdown(rows, machine))
    return 0 if all(r["mismatches"] == 0 and r["errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
