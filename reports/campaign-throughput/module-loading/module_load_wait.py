"""Does loading a kernel module wait for the work already queued on the GPU? A campaign's worker
meets new kernel forms in every chunk while the previous chunk runs; if a load waits, the queue
drains at every new form.

It queues a kernel that spins for `--spin-ms`, then loads a module of another kernel and launches
it, timing on the host how long the load (cuda.core: ObjectCode.from_cubin, get_kernel) and the
launch took. A load or launch that takes about the spin time waited for it. Run it with
CUDA_MODULE_LOADING=EAGER and =LAZY (the default since CUDA 12.2):

    CUDA_MODULE_LOADING=LAZY python reports/campaign-throughput/module-loading/module_load_wait.py [--spin-ms 50] [--modules 8]

Prints one JSON object: per module, the load's and the launch's host milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))  # the checkout's root

from device.check_kernels import compile_cubin  # noqa: E402
from device.launch import Gpu  # noqa: E402

SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
"""


def module(i: int) -> str:
    """A small kernel of its own (a distinct module each)."""
    return f'extern "C" __global__ void add_{i}(unsigned* x) {{ x[threadIdx.x] += {i}u; }}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spin-ms", type=float, default=50.0)
    parser.add_argument("--modules", type=int, default=8)
    args = parser.parse_args()
    gpu = Gpu(0)
    arch = gpu.arch + "a" if gpu.arch == "sm_90" else gpu.arch
    spin = gpu.load_cubin(compile_cubin(SPIN, arch)).get_kernel("spin")
    cubins = [compile_cubin(module(i), arch) for i in range(args.modules)]
    x = gpu.to_device(np.zeros(32, np.uint32))
    clock_khz = getattr(gpu.device.properties, "clock_rate", 1_980_000)  # kHz (an H100 SXM's boost clock if unknown)
    cycles = np.int64(args.spin_ms * clock_khz)
    gpu.launch(spin, 1, 1, 0, cycles)  # warm up: the spin kernel's own load
    gpu.sync()
    rows = []
    for i, cubin in enumerate(cubins):
        gpu.launch(spin, 1, 1, 0, cycles)
        started = time.perf_counter()
        kernel = gpu.load_cubin(cubin).get_kernel(f"add_{i}")
        loaded = time.perf_counter()
        gpu.launch(kernel, 1, 32, 0, x)
        launched = time.perf_counter()
        gpu.sync()
        done = time.perf_counter()
        rows.append({"load_ms": round(1e3 * (loaded - started), 3), "launch_ms": round(1e3 * (launched - loaded), 3),
                     "until_done_ms": round(1e3 * (done - started), 3)})
    print(json.dumps({"loading": os.environ.get("CUDA_MODULE_LOADING", "(unset)"), "spin_ms": args.spin_ms,
                      "gpu": gpu.name, "modules": rows}, indent=1))


if __name__ == "__main__":
    main()
