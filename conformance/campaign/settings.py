"""What a campaign is: its constants, its settings (`Settings`) and chunk plan, and the forms and input
formats it counts programs by."""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE


CHUNK = 200  # programs per producer task
DEFAULT_DATA_SETS = 32  # operand data sets (programs) per drawn instruction (the command line's for --draw host)
DEFAULT_TIMEOUT_S = 300.0  # a launch still running after this long is a hang
START_TIMEOUT_S = 300.0  # a GPU worker not ready after this long (imports, CUDA context) has hung
READY_PER_GPU = 4  # prepared chunks waiting per GPU worker: how far the producers run ahead
# batches a GPU worker keeps queued on its GPU while it waits for the oldest: the GPU runs the others
# while the worker settles that one and queues the next
GPU_BATCHES_QUEUED = 2
# chunks handed to one GPU worker at once: its queued batches and the next order already waiting,
# so that the worker never collects its only queued batch for want of an order (with one order
# fewer, the GPU drained at every other chunk while the main process answered the worker's "done")
IN_FLIGHT_PER_GPU = GPU_BATCHES_QUEUED + 1
FAILURES_KEPT = 50  # failures listed in the report (every failing program goes to --cases)
WORKER_STARTS = 3  # attempts to start a GPU's worker in a row before the GPU is given up
CHUNK_DEATHS = 3  # worker deaths outside a launch a chunk may cause before its remaining cases are charged
PROGRESS_EVERY_S = 10.0
TARGET = "sm_90a"  # wgmma is sm_90a only (PTX ISA 9.7.15, Target ISA Notes); the mma.sp kernels share it
GPU_LAUNCHER, HOST_ONLY = "gpu", "host-only"
GPU_STAGES = ("draw", "copy_in", "launch", "read_back", "reference")  # the launcher's seconds: the GPU's busy time
CHECKER, MODEL = "checker", "model"  # what computes the expected D's inner products
HOST_DRAW, GPU_DRAW = "host", "gpu"  # where each data set's operands are drawn
DEFAULT_CROSS_CHECK_EVERY = 64  # with the checker, every 64th program of a chunk is also evaluated by the model
STREAM_CHUNK_INSTRUCTIONS = 32  # instructions per chunk when the GPU draws the data sets
GC_STAGE = "gc"  # seconds in the garbage collector, within the other stages' (`CollectorPauses`)
PRODUCER_NICENESS = 19  # producers take only the CPU the GPU workers leave: a worker slowed by them idles its GPU


def chunk_programs_for(draw: str, data_sets: int) -> int:
    """Programs per chunk: CHUNK; with data sets drawn on the GPU, STREAM_CHUNK_INSTRUCTIONS
    instructions' worth (a chunk's host work is then mostly per instruction, and Hypothesis
    starts once per chunk)."""
    return max(CHUNK, STREAM_CHUNK_INSTRUCTIONS * data_sets) if draw == GPU_DRAW else CHUNK

# --- what a run is -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """What every process of a run needs: the programs (count, seed, data sets per instruction),
    whether the reference observes a chunk together, the kernel cache's folder, the shard (index,
    count) of the run this process runs, the programs per chunk, the reference and the judging
    profile, and what computes the expected D's inner products: the reference itself (MODEL), or,
    with the oracle as the reference, the integer checker on the GPU from the oracle's operands
    (CHECKER), the model evaluating every `cross_check_every`-th program of each chunk."""

    programs: int
    seed: int
    data_sets: int = DEFAULT_DATA_SETS
    batch_reference: bool = True
    cache_dir: str = ""
    shard: tuple[int, int] = (1, 1)
    chunk: int = CHUNK
    reference: str = DEFAULT_REFERENCE
    profile: str | None = None
    numerics: str = MODEL
    cross_check_every: int = DEFAULT_CROSS_CHECK_EVERY
    draw: str = HOST_DRAW

    def __post_init__(self):
        if self.draw == GPU_DRAW and self.numerics != CHECKER:
            raise ValueError("data sets drawn on the GPU are checked by the integer checker: --draw gpu needs --numerics checker")

    def chunks(self) -> list[int]:
        """The chunks of this shard: chunk c belongs to shard c mod count (1-based), so the shards
        of a run divide its chunks among them and each draws only its own."""
        index, count = self.shard
        return [c for c in range(-(-self.programs // self.chunk)) if c % count == index - 1]

    def chunk_programs(self, chunk: int) -> int:
        return min(self.chunk, self.programs - chunk * self.chunk)


def input_formats(p: Program) -> tuple[str, ...]:
    """The input formats of a program's MMA (one for A = B, two for a mixed pair)."""
    op = p.ops[0]
    return (op.atype,) if op.atype == op.btype else (op.atype, op.btype)


FORMS = ("wgmma dense, A in shared memory", "wgmma dense, A in registers", "wgmma sparse, A in shared memory",
         "mma.sp (warp-level)")


def form_of(p: Program) -> str:
    op = p.ops[0]
    if op.OP == "mma.sp":
        return FORMS[3]
    return FORMS[2] if op.sparse else FORMS[1] if op.a_in_registers else FORMS[0]
