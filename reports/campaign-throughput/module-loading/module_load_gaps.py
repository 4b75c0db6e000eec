"""How long does the GPU sit idle when a worker loads kernel modules while work is queued, and
does loading them from a second thread (ahead of their first launch) or several kernels to a
module avoid it? `module_load_wait.py` showed that a load waits for the queued work; this
measures the idle time the GPU itself sees.

The main thread keeps a queue of short spin kernels at most `--depth` deep (as the campaign's
worker keeps its next batch queued), each stamping %globaltimer at its start and end, and, per
mode, meets a new kernel every `--every` spins:

- none:    no loads (the control);
- inline:  loads the module and launches its kernel on the main stream, as the worker does now;
- grouped: loads `--per-module` kernels from one module at a time;
- thread:  a loader thread loads each module ahead and makes it resident in the context
           (cuKernelGetFunction, cuFuncLoad) while the main thread goes on queueing spins;
           the main thread launches it when its turn comes.

The GPU's idle time is the sum of the gaps between one spin's end and the next one's start.
A separate measurement times loads on an idle GPU by kernels per module. Prints one JSON object.

    CUDA_MODULE_LOADING=LAZY python reports/campaign-throughput/module-loading/module_load_gaps.py [--spins 1200] [--every 8]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))  # the checkout's root

from device.check_kernels import compile_cubin  # noqa: E402
from device.launch import Gpu, _check  # noqa: E402

SPIN = r"""
extern "C" __global__ void spin(long long cycles, unsigned long long* stamps, int i) {
  unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  long long start = clock64();
  while (clock64() - start < cycles) {}
  unsigned long long t1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  stamps[2 * i] = t0; stamps[2 * i + 1] = t1;
}
"""


def module(first: int, count: int) -> str:
    """`count` kernels of their own (named k<first>...), each with a little unrolled arithmetic."""
    body = "".join(
        f'extern "C" __global__ void k{first + j}(unsigned* x) {{\n'
        f'  unsigned v = x[threadIdx.x];\n'
        f'#pragma unroll\n  for (int r = 0; r < 32; ++r) v = v * {2 * (first + j) + 3}u + (v >> 7) + r;\n'
        f'  x[threadIdx.x] = v;\n}}\n'
        for j in range(count))
    return body


def idle_load_ms(gpu: Gpu, arch: str, per_module: int, modules: int, x) -> float:
    """Milliseconds per module to load and launch every kernel of `modules` modules of
    `per_module` kernels each, the GPU idle."""
    cubins = [compile_cubin(module(10_000 * (per_module + 1) + m * per_module, per_module), arch) for m in range(modules)]
    gpu.sync()
    started = time.perf_counter()
    for m, cubin in enumerate(cubins):
        code = gpu.load_cubin(cubin)
        for j in range(per_module):
            gpu.launch(code.get_kernel(f"k{10_000 * (per_module + 1) + m * per_module + j}"), 1, 32, 0, x)
    gpu.sync()
    return 1e3 * (time.perf_counter() - started) / modules


def resident(gpu: Gpu, kernel) -> None:
    """Make a lazily loaded kernel resident in the current context without launching it."""
    driver = gpu.driver_api
    function = _check(driver.cuKernelGetFunction(kernel.handle))
    _check(driver.cuFuncLoad(function))


def run(gpu: Gpu, mode: str, args, spin, cycles, cubins: list[tuple[bytes, list[str]]], x) -> dict:
    stamps = gpu.to_device(np.zeros(2 * args.spins, np.uint64))
    kernels_in_order = [name for _, names in cubins for name in names]
    ready: dict[str, object] = {}
    loader = None
    if mode == "thread":
        todo: queue.Queue = queue.Queue()

        def load_ahead() -> None:
            gpu.device.set_current()
            while (item := todo.get()) is not None:
                cubin, names = item
                code = gpu.load_cubin(cubin)
                for name in names:
                    kernel = code.get_kernel(name)
                    resident(gpu, kernel)
                    ready[name] = kernel

        loader = threading.Thread(target=load_ahead, daemon=True)
        loader.start()
        for item in cubins:
            todo.put(item)
        todo.put(None)
    events, waited_for_loader, met = [], 0.0, 0
    grouped = {name: (cubin, names) for cubin, names in cubins for name in names}
    started = time.perf_counter()
    for i in range(args.spins):
        if mode != "none" and i and i % args.every == 0 and met < len(kernels_in_order):
            name = kernels_in_order[met]
            met += 1
            if mode == "thread":
                t = time.perf_counter()
                while name not in ready:
                    time.sleep(0.0001)
                waited_for_loader += time.perf_counter() - t
            elif name not in ready:
                cubin, names = grouped[name]
                code = gpu.load_cubin(cubin)
                ready.update((n, code.get_kernel(n)) for n in names)
            gpu.launch(ready[name], 1, 32, 0, x)
        gpu.launch(spin, 1, 1, 0, cycles, stamps, np.int32(i))
        events.append(gpu.record())
        if len(events) > args.depth:
            events[-args.depth - 1].sync()
    gpu.sync()
    wall = time.perf_counter() - started
    if loader is not None:
        loader.join()
    t = gpu.to_host(stamps).reshape(-1, 2).astype(np.int64)
    gaps = np.maximum(t[1:, 0] - t[:-1, 1], 0)
    return {"mode": mode, "kernels_met": met, "wall_s": round(wall, 4),
            "gpu_span_s": round((t[-1, 1] - t[0, 0]) / 1e9, 4), "gpu_idle_s": round(gaps.sum() / 1e9, 4),
            "idle_per_kernel_ms": round(gaps.sum() / 1e6 / max(met, 1), 4) if met else None,
            "largest_gap_ms": round(gaps.max() / 1e6, 4), "waited_for_loader_s": round(waited_for_loader, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spins", type=int, default=1200)
    parser.add_argument("--spin-us", type=float, default=500.0)
    parser.add_argument("--every", type=int, default=8, help="spins between two new kernels")
    parser.add_argument("--depth", type=int, default=4, help="spins queued at most")
    parser.add_argument("--per-module", type=int, default=16, help="kernels to a module in the grouped mode")
    parser.add_argument("--modes", default="none,inline,grouped,thread")
    args = parser.parse_args()
    gpu = Gpu(0)
    arch = gpu.arch + "a" if gpu.arch == "sm_90" else gpu.arch
    spin = gpu.load_cubin(compile_cubin(SPIN, arch)).get_kernel("spin")
    x = gpu.to_device(np.zeros(32, np.uint32))
    clock_khz = getattr(gpu.device.properties, "clock_rate", 1_980_000)
    cycles = np.int64(args.spin_us * clock_khz / 1000)
    needed = args.spins // args.every + 1
    report = {"loading": os.environ.get("CUDA_MODULE_LOADING", "(unset)"), "gpu": gpu.name,
              "args": vars(args), "runs": [], "idle_load_ms_per_module": {}}
    for per in (1, 4, 16, 64):
        report["idle_load_ms_per_module"][per] = round(idle_load_ms(gpu, arch, per, 4, x), 3)
    base = 1
    for mode in args.modes.split(","):
        per = args.per_module if mode == "grouped" else 1
        cubins = []
        for first in range(base, base + needed, per):
            count = min(per, base + needed - first)
            cubins.append((compile_cubin(module(first, count), arch), [f"k{first + j}" for j in range(count)]))
        base += needed + per
        report["runs"].append(run(gpu, mode, args, spin, cycles, cubins, x))
        print(json.dumps(report["runs"][-1]), file=sys.stderr)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
