"""Every kernel a Hopper campaign can launch, assembled into the kernel cache ahead of a run
(`cache fill`). A campaign with a cold cache assembles each kernel form the first time a producer
meets it: 6,251 forms in a 12,000,000-program run on an H100's host, whose GPU then waited 26 s of
63 s for them (reports/campaign-throughput/long-run-producer-bound). The forms are finite (`tcgen05_conformance.generators.hopper_forms`), so
assembling them all once, on any machine with nvJitLink (no GPU needed; the folder can be copied to
or shared with the GPU machines), leaves a campaign nothing to assemble."""

from __future__ import annotations

import multiprocessing
import sys
import time
from typing import Callable, TextIO

from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.campaign.run import TARGET
from tcgen05_conformance.device.kernel_cache import KernelCache
from tcgen05_conformance.device.ptx.kernels import hopper_kernel
from tcgen05_conformance.generators.hopper_forms import modelled_hopper_forms

FORMS_PER_TASK = 32
PROGRESS_EVERY_S = 10.0

_cache: KernelCache | None = None  # each worker process's handle on the folder


def _assemble(task: tuple[str, list[WgmmaMma | MmaSp]]) -> tuple[int, int, float, list[str]]:
    """Assemble the kernels of a task's forms (folder, instructions) the folder lacks: (served from
    the folder, assembled, seconds assembling, one line per form that failed)."""
    global _cache
    directory, ops = task
    if _cache is None or _cache.directory != directory:
        _cache = KernelCache(directory)
    hits, assembled, seconds = _cache.hits, _cache.assembled, _cache.assemble_seconds
    failures = []
    for op in ops:
        try:
            _cache.get(hopper_kernel(Program(TARGET, (op,))), TARGET)
        except Exception as e:  # noqa: BLE001 - an assembler's rejection is reported, the other forms go on
            failures.append(f"{op}: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    return _cache.hits - hits, _cache.assembled - assembled, _cache.assemble_seconds - seconds, failures


def fill(directory: str, jobs: int, log: TextIO = sys.stderr,
         forms: Callable[[], list[WgmmaMma | MmaSp]] | None = None) -> dict:
    """Assemble every kernel form of `forms()` (default: `modelled_hopper_forms`) missing from the
    cache in `directory`, with `jobs` processes, printing progress to `log`; what was done: forms, already cached, assembled, failed
    (one line each), seconds and the assembler's CPU seconds."""
    started = time.perf_counter()
    ops = (forms or modelled_hopper_forms)()
    tasks = [ops[i:i + FORMS_PER_TASK] for i in range(0, len(ops), FORMS_PER_TASK)]
    done = {"forms": len(ops), "cached": 0, "assembled": 0, "failed": [], "assemble_cpu_seconds": 0.0}
    last = started
    with multiprocessing.get_context("spawn").Pool(max(1, min(jobs, len(tasks)))) as pool:
        for hits, assembled, seconds, failures in pool.imap_unordered(_assemble, [(directory, t) for t in tasks]):
            done["cached"] += hits
            done["assembled"] += assembled
            done["assemble_cpu_seconds"] += seconds
            done["failed"] += failures
            now = time.perf_counter()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                finished = done["cached"] + done["assembled"] + len(done["failed"])
                print(f"cache fill: {finished:,}/{len(ops):,} forms ({done['assembled']:,} assembled), "
                      f"{now - started:.0f} s", file=log, flush=True)
    done["seconds"] = round(time.perf_counter() - started, 3)
    done["assemble_cpu_seconds"] = round(done["assemble_cpu_seconds"], 3)
    return done

