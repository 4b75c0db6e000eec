"""The `blackwell` backend: each tcgen05 program run as one kernel on an sm_100 / sm_103 GPU; it
observes the Tensor Memory image the kernel reads back (the harness diffs it bit for bit with the
reference's, `tcgen05_conformance.harness.judge`).

Per program: the kernel of `tcgen05_conformance.device.ptx.kernels.tcgen05_kernel` is linked for the program's
target by nvJitLink (once per PTX text), launched with 128 threads per CTA, the CTA pair of a
cta_group::2 program as one cluster of 2, and `smem_bytes(p)` bytes of dynamic shared memory;
the inputs are copied in bulk and the TMEM image back (`kernel_images`, `tmem_state`).

Before the first case the backend checks its own plumbing on the GPU
(`tcgen05_conformance.device.tcgen05_inner_products.plumbing_check`: a TMEM alloc / st / ld round trip, then one MMA
whose D is known exactly); when that fails, every case is an error carrying its one-line
diagnosis, instead of thousands of mismatches.

Observations: the state; skip when the GPU is not the program's target (an sm_100a kernel runs
on sm_100 only, an sm_103a one on sm_103 only) or the kernel generator cannot express the
program (tcgen05.ld / st in it); error, with a one-line reason, when the program's CTAs do not
match its CTA group, the kernel does not link, or CUDA fails.

The GPU is held by a worker process (`tcgen05_conformance.device.gpu_worker`): a device fault (illegal instruction,
misaligned address, ...) ends CUDA for the process that ran the kernel, whatever it tries next
(measured on an H100: even a reset primary context cannot be retained again), so a case whose
kernel fails is an error and the next case gets a fresh worker with a fresh CUDA context; one
bad case does not cost the run. A kernel that hangs is not caught here but by `run --timeout`
(`tcgen05_conformance.harness.supervisor`), whose process-group kill ends the worker too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, initial_smem, initial_tmem
from tcgen05_conformance.harness.backends.base import Observation, Progress, observe_each
from tcgen05_conformance.device.gpu_worker import GpuWorker, KernelFailed, Launch
from tcgen05_conformance.device.launch import GpuUnavailable
from tcgen05_conformance.device.tcgen05_inner_products import plumbing_check
from tcgen05_conformance.device.ptx.kernels import THREADS, UnsupportedProgram, cta_group, smem_bytes, tcgen05_kernel

TCGEN05_GPUS = {(10, 0): "sm_100a", (10, 3): "sm_103a"}  # compute capability -> the target it runs
UNWRITTEN = 0xFFFFFFFF  # p_out's words before the kernel runs: a word it never writes cannot match by chance


def reason_for(compute_capability: tuple[int, int], name: str) -> str | None:
    """Why a GPU of this compute capability cannot run the backend's kernels; None when it can."""
    if tuple(compute_capability) in TCGEN05_GPUS:
        return None
    major, minor = compute_capability
    return f"{name} is sm_{major}{minor}; the blackwell backend runs tcgen05 kernels on sm_100 / sm_103 only"


def case_skip_reason(target: str, compute_capability: tuple[int, int], name: str) -> str | None:
    """Why a program for `target` cannot run on this GPU: architecture-specific (`a`) code runs
    on exactly its own architecture. None when it can."""
    major, minor = compute_capability
    if TARGETS[target].sm == 10 * major + minor:
        return None
    return f"the program targets {target}, which runs on sm_{TARGETS[target].sm} only; this GPU ({name}) is sm_{major}{minor}"


@dataclass(frozen=True)
class KernelImages:
    """The kernel's inputs, as its parameters hold them: per CTA, the shared-memory image
    (`p_smem`: smem_bytes(p) bytes, zero outside the program's segments) and the initial TMEM
    image (`p_tmem_in`: 128 lanes x tmem_columns 32-bit words, lane-major, little-endian);
    `p_out` has the TMEM image's shape."""

    smem: np.ndarray  # uint8 [ctas, smem_bytes(p)]
    tmem: np.ndarray  # uint32 [ctas, 128, tmem_columns]


def kernel_images(p: Program) -> KernelImages:
    """The inputs of program `p`'s kernel, from the state the program starts from."""
    smem, _ = initial_smem(p)
    return KernelImages(np.ascontiguousarray(smem[:, :smem_bytes(p)]), initial_tmem(p).astype("<u4"))


def tmem_state(p: Program, out: np.ndarray) -> MachineState:
    """The machine state a kernel read back: its `p_out` words (any shape holding ctas x 128 x
    tmem_columns little-endian words, or those bytes) as an oracle-shaped TMEM image."""
    words = np.ascontiguousarray(out).view("<u4").reshape(p.ctas, dm.TMEM_LANES, p.tmem_columns)
    return MachineState(tmem=words.astype(np.uint32), loads=[])


@dataclass(frozen=True)
class PreparedCase:
    """What running a program needs besides the GPU: the kernel's PTX text and the cluster size
    to launch it with (None: CTAs launched on their own)."""

    ptx: str
    cluster: int | None


def prepare_case(p: Program) -> PreparedCase | Observation:
    """The kernel of `p`, or the observation that replaces running it: skip when the kernel
    generator cannot express the program, error when its CTAs do not match its CTA group."""
    try:
        ptx = tcgen05_kernel(p)
        group = cta_group(p)
    except UnsupportedProgram as e:  # not a failure of the GPU: the kernel generator cannot express it
        return Observation(p.case_id, skip=f"no kernel: {e}")
    if group != p.ctas:
        return Observation(p.case_id, error=f"no kernel: the program has {p.ctas} CTAs but issues cta_group::{group} "
                                            "operations; the kernel runs one CTA per member of the CTA group")
    return PreparedCase(ptx, 2 if group == 2 else None)


def run_program_kernel(worker: GpuWorker, ptx: str, target: str, images: KernelImages, cluster: int | None) -> np.ndarray:
    """Run a kernel with the (p_smem, p_tmem_in, p_out) interface, entry `program`, linked for
    `target`: one CTA of THREADS threads per image, in clusters of `cluster`; p_out read back.
    KernelFailed when it does not link or run."""
    ctas, shared = images.smem.shape
    out = np.full(images.tmem.shape, UNWRITTEN, dtype="<u4")
    return worker.run(Launch(ptx, target, "program", ctas, THREADS, shared, (images.smem, images.tmem), out, cluster))


class BlackwellBackend:
    name = "blackwell"
    uses_gpu = True  # run --gpus: its batches run in child processes pinned to one GPU each

    def __init__(self, profile: str | None = None):
        """`profile` is not used: the GPU computes as it does."""
        self._worker: GpuWorker | None = None
        self._gpu: tuple[str, tuple[int, int]] | None = None  # name, compute capability
        self._unavailable: str | None = None
        self._lost: str | None = None  # why the GPU can no longer be used

    def unavailable_reason(self) -> str | None:
        if self._gpu is None and self._unavailable is None:
            self._open()
        return self._unavailable

    def _open(self) -> None:
        try:
            import cuda.core  # noqa: F401
        except ImportError:
            self._unavailable = "cuda.core is not installed (pip install cuda-core): the blackwell backend launches kernels through it"
            return
        worker = GpuWorker()
        try:
            name, capability = worker.describe()
        except GpuUnavailable as e:
            self._unavailable = str(e)
            return
        self._unavailable = reason_for(capability, name)
        if self._unavailable:
            worker.close()
            return
        self._worker, self._gpu = worker, (name, capability)
        check = plumbing_check(worker, TCGEN05_GPUS[tuple(capability)])
        if not check.ok:  # every case would mismatch: one diagnosis instead
            self._lost = f"not run: the Blackwell plumbing check failed at its {check.step} step: {check.diagnosis}"

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        reason = self.unavailable_reason()
        if reason:
            return observe_each(lambda p: Observation(p.case_id, skip=reason), programs, progress)
        return observe_each(self._observe_one, programs, progress)

    def _observe_one(self, p: Program) -> Observation:
        if self._lost:
            return Observation(p.case_id, error=self._lost)
        name, capability = self._gpu
        reason = case_skip_reason(p.target, capability, name)
        if reason:
            return Observation(p.case_id, skip=reason)
        case = prepare_case(p)
        if isinstance(case, Observation):
            return case
        try:
            out = run_program_kernel(self._worker, case.ptx, p.target, kernel_images(p), case.cluster)
        except KernelFailed as e:
            if e.stage == "link":
                return Observation(p.case_id, error=f"the kernel did not link for {p.target}: {e}")
            return Observation(p.case_id, error=f"CUDA error: {e} (the next case gets a fresh GPU worker process)")
        except GpuUnavailable as e:  # a fresh worker could not open the GPU
            self._lost = f"not run: the GPU worker process could not be restarted ({e})"
            return Observation(p.case_id, error=self._lost)
        return Observation(p.case_id, state=tmem_state(p, out))
