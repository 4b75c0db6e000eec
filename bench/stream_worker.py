"""The campaign's GPU worker alone, on chunks prepared beforehand: how much of its wall time the
GPU is busy, with no producer to wait for.

It prepares `--chunks` chunks of a `--draw gpu` campaign (as its producers do, in a process pool,
into a spool folder), then runs the campaign's own worker loop (`campaign.gpu_worker`) in this
process on all of them, `--repeat` times, each time with a fresh launcher (as a worker starts),
and prints one JSON object: per pass, the worker's wall seconds from its first order to its last
report, the GPU's busy seconds (the launcher's event-timed stages), their ratio, and the
worker's stage seconds. With `--profile FILE` a last pass runs under cProfile and its 40
costliest functions (own time) are written to FILE. With `--keep-launcher` the passes share one
launcher, so that only the first loads the kernel forms' modules.

    python bench/stream_worker.py --chunks 60 [--data-sets 256] [--cross-check-every 512] [--seed 9301] [--repeat 2]
        [--profile FILE]

Needs an sm_90a GPU (the launcher is the campaign's GPU launcher).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import queue
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tcgen05_conformance.cli.campaign import CROSS_CHECK_EVERY, DATA_SETS  # noqa: E402
from tcgen05_conformance.campaign import run as c  # noqa: E402
from tcgen05_conformance.harness.stages import Stages  # noqa: E402
from tcgen05_conformance.device.kernel_cache import KernelCache  # noqa: E402


def settings_for(args: argparse.Namespace, cache_dir: str) -> c.Settings:
    chunk = c.chunk_programs_for(c.GPU_DRAW, args.data_sets)
    return c.Settings(programs=args.chunks * chunk, seed=args.seed, data_sets=args.data_sets, cache_dir=cache_dir,
                      chunk=chunk, numerics=c.CHECKER, draw=c.GPU_DRAW, cross_check_every=args.cross_check_every)


def prepare(job: tuple[int, c.Settings, str]) -> tuple[int, int]:
    """Prepare one chunk into the spool, as a producer does: (chunk, launch groups)."""
    chunk, settings, spool = job
    prepared, details = c.prepare_stream(chunk, settings, KernelCache(settings.cache_dir), Stages())
    launches, programs = c.spool_files(spool, chunk)
    c.write_pickle(programs, details)
    c.write_pickle(launches, prepared)
    return chunk, len(prepared["groups"])


KEPT: dict[int, object] = {}


def kept_launcher(index: int):
    """The campaign's GPU launcher, made once and kept across passes (`--keep-launcher`): a later
    pass finds every kernel form of the chunks already loaded."""
    if index not in KEPT:
        KEPT[index] = c.GpuLauncher(index)
    return KEPT[index]


class Reports:
    """The worker's pipe: keeps what it sends, with the time it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, tuple]] = []

    def send(self, message: tuple) -> None:
        self.sent.append((time.perf_counter(), message))


def one_pass(settings: c.Settings, spool: str, chunks: list[int], launcher: str) -> dict:
    """The worker over every prepared chunk, from a fresh launcher: its figures."""
    orders: queue.Queue = queue.Queue()
    for token, chunk in enumerate(chunks):
        orders.put((token, c.spool_files(spool, chunk), frozenset(), False))  # as the main process orders it
    orders.put(None)
    pipe, progress = Reports(), [0, 0, 0.0]
    started = time.perf_counter()
    c.gpu_worker(0, None, launcher, settings.cache_dir, orders, progress, pipe)
    messages = [m for _, m in pipe.sent]
    kinds = Counter(m[0] for m in messages)
    if kinds["done"] != len(chunks):
        raise SystemExit(f"stream-worker: the worker reported {dict(kinds)}: {messages[-1]}")
    ready = next(t for t, m in pipe.sent if m[0] == "ready")
    last = pipe.sent[-1][0]
    outcomes = [m[3] for m in messages if m[0] == "done"]
    stages, gpu = Stages(), Counter()
    for o in outcomes:
        stages.merge(o.stages)
        gpu.update(o.gpu_seconds)
    programs = sum(o.counts["programs"] for o in outcomes)
    busy = sum(gpu[s] for s in c.GPU_STAGES)
    wall = last - ready
    return {"programs": programs, "launches": sum(o.launches for o in outcomes), "startup_s": round(ready - started, 3),
            "wall_s": round(wall, 3), "gpu_busy_s": round(busy, 3), "gpu_busy_over_wall": round(busy / wall, 3) if wall else None,
            "programs_per_s": round(programs / wall, 1), "programs_per_s_gpu": round(programs / busy, 1) if busy else None,
            "gpu_stages_s": {s: round(gpu[s], 3) for s in c.GPU_STAGES},
            "worker_stages_s": {s: round(v, 3) for s, v in stages.wall.items()},
            "mismatched_programs": sum(o.counts["mismatched programs"] for o in outcomes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=60)
    parser.add_argument("--data-sets", type=int, default=DATA_SETS["gpu"])
    parser.add_argument("--cross-check-every", type=int, default=CROSS_CHECK_EVERY["gpu"])
    parser.add_argument("--seed", type=int, default=9301)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--launcher", default=c.GPU_LAUNCHER, help="the worker's launcher (host-only: no GPU, to try the bench)")
    parser.add_argument("--keep-launcher", action="store_true",
                        help="keep the launcher (its loaded kernels) across passes: a later pass loads no module")
    parser.add_argument("--start-at", type=float,
                        help="after preparing, wait until this time (seconds since the epoch) to start the passes: "
                             "two workers on one GPU, started together")
    parser.add_argument("--profile", help="also run a pass under cProfile and write its costliest functions here")
    args = parser.parse_args()
    spool = tempfile.mkdtemp(prefix="stream-worker-")
    cache_dir = os.environ.get("TCGEN05_CACHE") or tempfile.mkdtemp(prefix="stream-worker-cache-")
    settings = settings_for(args, cache_dir)
    if args.keep_launcher:
        args.launcher = "bench.stream_worker:kept_launcher"
    began = time.perf_counter()
    with ProcessPoolExecutor() as pool:
        prepared = dict(pool.map(prepare, [(k, settings, spool) for k in settings.chunks()]))
    prepare_s = round(time.perf_counter() - began, 1)
    if args.start_at:
        time.sleep(max(0.0, args.start_at - time.time()))
    report = {"command": " ".join(sys.argv), "chunks": len(prepared), "groups": sum(prepared.values()),
              "prepare_s": prepare_s, "started_at": time.time(),
              "passes": [one_pass(settings, spool, sorted(prepared), args.launcher) for _ in range(args.repeat)]}
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        one_pass(settings, spool, sorted(prepared), args.launcher)
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
        with open(args.profile, "w", encoding="utf-8") as f:
            f.write(text.getvalue())
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
