"""A campaign producer's CPU per program, per stage, measured in one process: the chunks FIRST+1 ..
LAST-1 of a run with data sets drawn on the GPU (by default the CLI's: 256 data sets per
instruction, every 512th program cross-checked) each prepared (`prepare_stream`) and spooled
(`write_pickle`) as a producer does it, after chunk FIRST prepared untimed (imports, first-use
caches). The kernel cache must hold the chunks' kernels (a first run fills it), so that
assembling costs nothing.

    python producer_cost.py SEED FIRST LAST OUT.json [DATA_SETS CROSS_CHECK_EVERY]

OUT.json: the settings, the chunks, the programs timed, and per stage its CPU seconds and CPU
milliseconds per program (the campaign report's `cpu_ms_per_program`)."""

from __future__ import annotations

import json
import os
import sys
import tempfile

from tcgen05_conformance.campaign import run as campaign
from tcgen05_conformance.device.kernel_cache import KernelCache, default_directory
from tcgen05_conformance.harness.stages import Stages

DATA_SETS, CROSS_CHECK_EVERY = 256, 512  # the CLI's defaults with --draw gpu


def main() -> int:
    if len(sys.argv) not in (5, 7):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    seed, first, last, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    data_sets, every = (int(x) for x in sys.argv[5:7]) if len(sys.argv) == 7 else (DATA_SETS, CROSS_CHECK_EVERY)
    cache = KernelCache(os.environ.get("TCGEN05_CACHE") or default_directory())
    settings = campaign.Settings(10**9, seed, data_sets, chunk=campaign.chunk_programs_for(campaign.GPU_DRAW, data_sets),
                                 numerics=campaign.CHECKER, cross_check_every=every, draw=campaign.GPU_DRAW,
                                 cache_dir=cache.directory)
    campaign.prepare_stream(first, settings, cache, Stages())
    stages = Stages()
    with tempfile.TemporaryDirectory() as spool:
        for chunk in range(first + 1, last):
            prepared, details = campaign.prepare_stream(chunk, settings, cache, stages)
            launches_file, programs_file = campaign.spool_files(spool, chunk)
            with stages("spool"):
                campaign.write_pickle(programs_file, details)
                campaign.write_pickle(launches_file, prepared)
    programs = sum(settings.chunk_programs(c) for c in range(first + 1, last))
    per_stage = stages.as_dict(programs)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"seed": seed, "data_sets": data_sets, "cross_check_every": every, "chunks": [first + 1, last - 1],
                   "programs": programs, "kernels_assembled": cache.assembled,
                   "stages": {name: {"cpu_seconds": v["cpu_seconds"], "cpu_ms_per_program": v["cpu_ms_per_program"]}
                              for name, v in per_stage.items()},
                   "cpu_ms_per_program": round(sum(v["cpu_ms_per_program"] for v in per_stage.values()), 4)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
