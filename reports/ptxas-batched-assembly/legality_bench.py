"""Benchmark: assembler throughput of the legality check, batched (many `.entry` per module, as
`legality` does) beside one module per instruction, in the same run on the same instructions.

    python reports/ptxas-batched-assembly/legality_bench.py [--arch sm_100a] [--count 1000] [--json]

Prints programs per second for both and their ratio, and the time spent drawing the
instructions with Hypothesis (which `legality` also pays)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from conformance.harness.against_assembler import BATCH, assemble_instructions
from device.ptx.kernels import MODULE_PREAMBLE, entry_for
from device.assembler import assemble_entries, assembler_version
from generators.instructions import legal_instructions
from generators.sampling import draw_examples


def bench(arch: str, count: int) -> dict:
    t0 = time.perf_counter()
    instrs = draw_examples(legal_instructions(arch), count, seed=0)
    drawing = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = assemble_instructions(instrs, arch)
    batched_s = time.perf_counter() - t0
    single = instrs[: max(1, count // 5)]
    t0 = time.perf_counter()
    alone = [assemble_entries([entry_for(i, 0)], arch, MODULE_PREAMBLE)[0] for i in single]
    alone_s = time.perf_counter() - t0
    assert all(r.ok for r in batched) and all(r.ok for r in alone)
    return {
        "arch": arch,
        "assembler": f"nvJitLink {assembler_version()}",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "instructions": count,
        "batch_size": BATCH,
        "draw_seconds": round(drawing, 3),
        "batched_programs_per_second": round(count / batched_s, 1),
        "one_module_each_programs_per_second": round(len(single) / alone_s, 1),
        "speedup": round((count / batched_s) / (len(single) / alone_s), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_100a")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = bench(args.arch, args.count)
    print(json.dumps(result, indent=1) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
