"""Stand-in GPU backends for `run --gpus` (tests/test_run_gpus.py), loaded as `tests.gpu_backends:NAME`.

They declare `uses_gpu`, so a run spreads their batches over the GPUs it is given, and each case
they start appends `<CUDA_VISIBLE_DEVICES> <pid> <case id>` to $GPU_LOG (`-` for an unset
CUDA_VISIBLE_DEVICES): which device each child process was pinned to, and what it ran. Otherwise
they are `tests.fault_backends`' `Planted` (faults by label) and `Perturbed` (a planted bug)."""

from __future__ import annotations

import os

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tests.fault_backends import Perturbed, Planted

NO_DEVICE = "-"  # logged when CUDA_VISIBLE_DEVICES is not set


class _OnGpu:
    uses_gpu = True

    def observe_one(self, p: Program) -> Observation:
        with open(os.environ["GPU_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{os.environ.get('CUDA_VISIBLE_DEVICES', NO_DEVICE)} {os.getpid()} {p.case_id}\n")
        return super().observe_one(p)


class PlantedGpu(_OnGpu, Planted):
    name = "planted-gpu"


class PerturbedGpu(_OnGpu, Perturbed):
    name = "perturbed-gpu"
