"""A large differential run of Hopper programs on every sm_90 GPU of the host, the work spread over
its cores: the `campaign` subcommand.

The run is cut into chunks (`chunk_programs_for`). Producer processes (`jobs` of them) each take
a chunk and draw its instructions (the forms the oracle models: wgmma dense with A in shared
memory or registers and sparse, over every layout the generator reaches, C in registers;
warp-level mma.sp with every operand in registers; chunks alternate exact and discriminating
inputs), each running as `data_sets` programs with data of their own. Where their operands come
from (`draw`):

- GPU_DRAW (`prepare_stream`, `campaign_stream`): each GPU draws them itself from the
  counter-based operand stream; the producer judges each instruction by itself, ships the tables
  that place every byte of its data sets, and rebuilds every `cross_check_every`-th program on
  the host for the Python model (the sample), the integer checker computing every D on the GPU;
- HOST_DRAW (`prepare`, `tcgen05_conformance.generators.programs.hopper_program_sets`): the producer draws them and
  computes the expected D under the profile the judge picks for each (`sm_90a`,
  `sm_90a.mma_sync` for mma.sp) in one of two ways (`numerics`): MODEL, the reference (any
  backend spec that observes states, default the oracle) observes all of them at once
  (`expected_states`); CHECKER, the oracle reads each program's operands
  (`tcgen05_conformance.oracles.execute.matrix_products`) and the GPU worker computes D from them with the integer
  checker (`campaign_checker`), the Python model evaluating every `cross_check_every`-th program.

Any difference between the checker and the model stops the run. The producer then takes each
kernel form's cubin from the kernel cache (`tcgen05_conformance.device.kernel_cache`, assembling the forms it lacks)
and packs the programs of each form into one launch. The prepared chunk goes to a spool file (in
/dev/shm where there is one); only its name travels to the main process, which hands it to a GPU
worker as soon as one is free. Every producer works while at most `READY_PER_GPU` chunks per GPU
wait prepared, so the producers run ahead of the GPUs by a bounded amount.

One GPU worker process per GPU (`devices`), each with its own CUDA context, launches the
chunk's forms (with GPU_DRAW, the whole chunk as one batch, `StreamBatch`, queued before the
previous chunk's batch is collected; with HOST_DRAW one form after another) and compares the
words the kernel stored with the expected D packed the same way, bit for bit, judging a failing
program as `run` does (`verdict`: the decoded first mismatches; with GPU_DRAW the program is
rebuilt from its tile first). A CUDA error costs the cases of the launch that raised it: the
worker reports it and is stopped (CUDA refuses every later call in its process), the main
process starts a new worker on that GPU and hands the rest of the chunk out again. A launch that
runs past `timeout_s`, or a worker that dies, costs the same: the main process kills the worker,
charges the cases of the launch it was running (as errors naming the GPU and what happened) and
hands the chunk's other launches out again. A batch names no launch: when one fails, its chunks
run again one launch group at a time (`ChunkState.careful`), where a group that fails again is
charged alone. The other GPUs keep working meanwhile.

Every stage is timed (`tcgen05_conformance.harness.stages`): in the producers draw, reference (with
HOST_DRAW and the checker, the operands), kernel text, assemble, pack, model (the checker's
sample), spool and wait (blocked on the bound); in the GPU workers wait (idle, no chunk handed
to it), read (the spool file), load (kernels), draw (GPU_DRAW), copy in, launch, read back,
reference (the checker) and compare; in the main process, dispatch; in each, gc (the garbage
collector's pauses, within the other stages). The report holds them with
the GPUs (programs, launches, busy seconds, idle seconds between batches, restarts), the reference, the programs per judging
profile, programs and inner products per input format and form, mismatches, errors, the kernel
cache's hits and assemblies, seconds, startup and throughput, end to end and GPU side.

`launcher` chooses what runs the launches: "gpu" (`GpuLauncher`), "host-only" (`HostOnlyLauncher`:
every host stage runs, and D is the reference's own, packed as the GPU would store it, the
checker running on the CPU: this measures the host side without a GPU), or a `package.module:factory` path called with the
worker's index (tests use stand-ins that hang, fault or change a word).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
import time
from typing import Sequence

from tcgen05_conformance.device.kernel_cache import KernelCache
# the campaign's names, importable from here as before it was split by idea
from tcgen05_conformance.campaign.judging import expected_states  # noqa: F401
from tcgen05_conformance.campaign.launchers import GpuLauncher, HostOnlyLauncher  # noqa: F401
from tcgen05_conformance.campaign.main_process import NoWorkerCouldRun, Run  # noqa: F401
from tcgen05_conformance.campaign.producer import (  # noqa: F401
    SPOOL_ALIGN, draw_chunk, draw_instructions, expected_of, prepare, prepare_stream, producer, read_pickle, spool_files,
    write_pickle,
)
from tcgen05_conformance.campaign.report import report, stage_table  # noqa: F401
from tcgen05_conformance.campaign.settings import (  # noqa: F401
    CHECKER, CHUNK, DEFAULT_CROSS_CHECK_EVERY, DEFAULT_DATA_SETS, DEFAULT_TIMEOUT_S, FORMS, GC_STAGE, GPU_DRAW, GPU_LAUNCHER,
    GPU_STAGES, HOST_DRAW, HOST_ONLY, MODEL, TARGET, Settings, chunk_programs_for, input_formats,
)
from tcgen05_conformance.campaign.worker import gpu_worker  # noqa: F401


# --- the whole run ----------------------------------------------------------------------------------


def spool_folder() -> str:
    """A fresh folder for prepared chunks: in memory (/dev/shm) where there is one."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="tcgen05-campaign-", dir=base)


def campaign(settings: Settings, jobs: int, devices: Sequence[str | None], launcher: str = GPU_LAUNCHER,
             cases_dir: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, keep_cache: bool = True,
             log=sys.stderr) -> dict:
    """Run the chunks of `settings` with `jobs` producer processes and one GPU worker per entry of
    `devices` (a CUDA_VISIBLE_DEVICES value each, None to leave it); `keep_cache`: the kernel cache
    is `settings.cache_dir`, kept (and trimmed to its limit) across runs, else a folder of this
    run only. The report (JSON-able); progress on `log`."""
    spool = spool_folder()
    if not keep_cache:
        settings = dataclasses.replace(settings, cache_dir=os.path.join(spool, "kernels"))
    run = Run(settings, jobs, devices, launcher, timeout_s, log)
    started = time.perf_counter()
    try:
        run.start(spool)
        run.run()
    finally:
        run.shutdown()
        shutil.rmtree(spool, ignore_errors=True)
    seconds = time.perf_counter() - started
    evicted = KernelCache(settings.cache_dir).trim() if keep_cache else 0
    write_cases(run.outcome.failures, cases_dir)
    return report(run, seconds, evicted, keep_cache)


def write_cases(failures: list[dict], cases_dir: str | None) -> None:
    """Each failing program as DIR/<case id>.json, for `replay`."""
    if not cases_dir or not failures:
        return
    os.makedirs(cases_dir, exist_ok=True)
    for f in failures:
        with open(os.path.join(cases_dir, f"{f['case_id']}.json"), "w", encoding="utf-8") as out:
            out.write(f["program"] + "\n")
