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
import gc
import importlib
import mmap
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from multiprocessing.connection import wait
from queue import Empty
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

from tcgen05_conformance.core.program import Program, dumps
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE
from tcgen05_conformance.harness.judge import CaseResult, profile_for
from tcgen05_conformance.campaign.checker import (
    GpuReference, HostReference, Operands, checker_module, disagreement, model_sample, operands,
)
from tcgen05_conformance.campaign.stream import (
    GPU_IDLE, IDLE_GAPS_MS, GpuStream, StreamBatch, StreamGroup, StreamPrograms, StreamResult, checker_differs, drawn_differently, host_draw,
    idle_gap_key, stream_batch, stream_group, stream_parameters, stream_result,
)
from tcgen05_conformance.harness.stages import CollectorPauses, Stages
from tcgen05_conformance.device.hopper_batch import Batch, pack, pack_d, unpack_d
from tcgen05_conformance.device.kernel_cache import CACHE_ENV, KernelCache, default_directory
from tcgen05_conformance.device.ptx.kernels import HopperForm, UnsupportedProgram, hopper_form, hopper_kernel
from tcgen05_conformance.generators import stream_operands
from tcgen05_conformance.generators.programs import INPUTS, hopper_instructions, hopper_program_sets
from tcgen05_conformance.generators.sampling import draw_examples, seed_only_draws
from tcgen05_conformance.oracles.execute import matrix_products
from tcgen05_conformance.oracles.hopper import instruction_issue
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct, evaluate

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


# --- the reference and the verdict: the campaign's only calls into the judge -----------------------


def expected_states(programs: Sequence[Program], reference: str = DEFAULT_REFERENCE,
                    together: bool = True, profile: str | None = None) -> tuple[list[str], list[Observation]]:
    """The profile that judges each program (`profile`, a name or a profile file, where it applies,
    as for run; None: each program's architecture's own) and the reference's observation of it (the expected
    D, or why there is none); with `together`, the reference observes the programs in one call
    (the oracle evaluates their inner products in vectorised batches), else one at a time."""
    from tcgen05_conformance.harness.runner import reference_observations

    if together:
        observations, profiles = reference_observations(list(programs), reference, profile)
        return profiles, observations
    alone = [reference_observations([p], reference, profile) for p in programs]
    return [profiles[0] for _, profiles in alone], [observations[0] for observations, _ in alone]


def verdict(p: Program, reference: str, expected: Observation, d: np.ndarray) -> CaseResult:
    """The verdict on the D the GPU gave against the reference's, as `run` judges it (a fail
    carries the decoded diff)."""
    from tcgen05_conformance.harness.backends.hopper import observed_state
    from tcgen05_conformance.harness.judge import state_result

    return state_result(p, reference, expected, Observation(p.case_id, state=observed_state(p, d)))


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


def draw_chunk(chunk: int, settings: Settings) -> tuple[str, list[Program]]:
    """The inputs ("exact" or "discriminating", alternating by chunk) and programs of one chunk:
    instructions drawn from the run's seed and the chunk's index alone, `data_sets` programs each."""
    inputs = INPUTS[chunk % len(INPUTS)]
    count = settings.chunk_programs(chunk)
    strategy = hopper_program_sets(inputs=inputs, forms="modelled", data_sets=settings.data_sets)
    with seed_only_draws():
        sets = draw_examples(strategy, -(-count // settings.data_sets), settings.seed * 1_000_003 + chunk)
    return inputs, [p for programs in sets for p in programs][:count]


def draw_instructions(chunk: int, settings: Settings) -> tuple[str, list]:
    """The inputs and instructions of one chunk whose data sets are drawn on the GPU (`--draw
    gpu`): instructions from the run's seed and the chunk's index alone, `data_sets` programs each."""
    inputs = INPUTS[chunk % len(INPUTS)]
    with seed_only_draws():
        ops = draw_examples(hopper_instructions(forms="modelled"), -(-settings.chunk_programs(chunk) // settings.data_sets),
                            settings.seed * 1_000_003 + chunk)
    return inputs, ops


# --- producers: one chunk drawn, evaluated, assembled and packed ---------------------------------


@dataclass
class Group:
    """The programs of a chunk that share one kernel form, packed for one launch: the form's PTX
    text and cubin, the kernel's inputs, the words [B, threads, words out] the kernel must store
    (each program's expected D packed as it stores D; None until the checker has computed them
    from `operands`), and what the report counts them by (their form, input formats,
    accumulator and judging profile, which the kernel form fixes)."""

    text: str
    cubin: bytes
    batch: Batch
    expected: np.ndarray | None
    form: str
    input_formats: tuple[str, ...]
    accumulator: str
    profile: str
    operands: Operands | None = None


def error_entry(p: Program, detail: str, inputs: str) -> dict:
    """A failure of the report for a program that could not run: an error with its reason."""
    return {"case_id": p.case_id, "status": "error", "detail": detail, "label": p.label, "inputs": inputs,
            "program": dumps(p)}


def reference_inputs(programs: Sequence[Program], settings: Settings) -> tuple[list[str], list]:
    """The judging profile of each program and what its expected D comes from: with MODEL, the
    reference's observation (its expected state, or why there is none); with CHECKER, the
    oracle's matrix product (operands read, inner products not evaluated), or None when the
    oracle gives none (a program it does not model, or whose behaviour is undefined)."""
    if settings.numerics == MODEL:
        return expected_states(programs, settings.reference, settings.batch_reference, settings.profile)
    profiles = [profile_for(p, settings.profile) for p in programs]
    products: list = [None] * len(programs)
    for profile in sorted(set(profiles)):
        members = [i for i, q in enumerate(profiles) if q == profile]
        for i, product in zip(members, matrix_products([programs[i] for i in members], profile)):
            products[i] = None if isinstance(product, Exception) else product
    return profiles, products


def expected_of(members: list[int], made: list, sample: dict[int, np.ndarray], form: HopperForm
                ) -> tuple[np.ndarray | None, Operands | None]:
    """A launch group's expected words (its expected D [B, M, N], from the reference's states,
    packed as kernel form `form` stores D), or, with products, the operands the checker computes
    them from (with the model's D of those of its programs in the chunk's `sample`); where the
    checker cannot compute them (e.g. the `exact` profile), the model evaluates them all
    (ValueError when it cannot either)."""
    if not isinstance(made[members[0]], MatrixProduct):
        return pack_d(form, np.stack([made[i].state.hopper_d for i in members])), None
    products = [made[i] for i in members]
    try:
        return None, operands(products, {j: sample[i] for j, i in enumerate(members) if i in sample})
    except ValueError:
        return pack_d(form, np.stack(evaluate(products))), None


def prepare(chunk: int, settings: Settings, cache: KernelCache, stages: Stages) -> tuple[dict, list]:
    """One chunk ready to launch, in two parts: what the launches need (its inputs, launch groups,
    the count of programs the reference gave no state for (not run), the errors of programs no
    kernel can express, the count of instructions drawn), and per group its programs and the
    reference's observations of them (None with the checker: a mismatch is judged by observing
    the program then)."""
    with stages("draw"):
        inputs, programs = draw_chunk(chunk, settings)
    with stages("reference"):
        profiles, made = reference_inputs(programs, settings)
    runnable = [isinstance(m, MatrixProduct) or (m is not None and m.state is not None) for m in made]
    texts: dict[str, list[int]] = {}
    errors = []
    with stages("kernel text"):
        for i, p in enumerate(programs):
            if not runnable[i]:
                continue
            try:
                texts.setdefault(hopper_kernel(hopper_form(p)), []).append(i)
            except UnsupportedProgram as err:
                errors.append(error_entry(p, str(err), inputs))
    with stages("assemble"):
        cubins = {text: cache.get(text, TARGET) for text in texts}
    sample: dict[int, np.ndarray] = {}
    if settings.numerics == CHECKER:
        with stages("model"):
            sample = model_sample([m if runnable[i] else None for i, m in enumerate(made)], settings.cross_check_every)
    groups, details = [], []
    for text, members in texts.items():
        group_programs = [programs[i] for i in members]
        with stages("pack"):
            try:
                batch = pack(group_programs)
            except UnsupportedProgram as err:
                errors += [error_entry(p, str(err), inputs) for p in group_programs]
                continue
        with stages("pack" if settings.numerics == CHECKER else "reference"):  # the checker's operands are packed
            try:
                expected, group_operands = expected_of(members, made, sample, batch.form)
            except ValueError as err:  # e.g. a profile with no datapath for the group's formats
                errors += [error_entry(p, str(err), inputs) for p in group_programs]
                continue
        first = group_programs[0]
        groups.append(Group(text, cubins[text], batch, expected, form_of(first), input_formats(first),
                            first.ops[0].dtype, profiles[members[0]], group_operands))
        details.append((group_programs, None if settings.numerics == CHECKER else [made[i] for i in members]))
    return ({"chunk": chunk, "inputs": inputs, "reference": settings.reference, "profile": settings.profile,
             "groups": groups, "not_run": runnable.count(False), "errors": errors,
             "instructions": -(-len(programs) // settings.data_sets)}, details)


def stream_sample(sources: dict[str, StreamPrograms], profiles: dict[str, str], first_tile: np.uint64, every: int
                  ) -> tuple[dict[str, dict[int, Program]], dict[str, dict[int, np.ndarray]]]:
    """The sample of a chunk's launch groups (`sources`, by kernel text; `profiles`, each group's
    judging profile): every program whose place in the chunk (its tile less `first_tile`) is a
    multiple of `every`, rebuilt on the host and read by the oracle, and the model's D of each,
    evaluated for the whole chunk at once (one call of the model per key, however many groups
    share it: the model computes each inner product on its own, so this changes no result). Per
    group, by position in it: the rebuilt programs, and the model's D of those it evaluated."""
    rebuilt: dict[str, dict[int, Program]] = {}
    products, owners = [], []
    for text, group_source in sources.items():
        sampled = np.flatnonzero((group_source.tiles - first_tile) % np.uint64(every) == 0).tolist()
        rebuilt[text] = dict(zip(sampled, group_source.programs(sampled))) if sampled else {}
        if not sampled:
            continue
        for k, product in zip(sampled, matrix_products(list(rebuilt[text].values()), profiles[text])):
            if isinstance(product, MatrixProduct):
                products.append(product)
                owners.append((text, k))
    sample: dict[str, dict[int, np.ndarray]] = {text: {} for text in sources}
    for i, d in model_sample(products, 1).items():
        text, k = owners[i]
        sample[text][k] = d
    return rebuilt, sample


def prepare_stream(chunk: int, settings: Settings, cache: KernelCache, stages: Stages) -> tuple[dict, list]:
    """`prepare` for data sets drawn on the GPU (`campaign_stream`): the chunk's instructions are
    drawn, each judged by its instruction alone (its judging profile; whether the oracle models it,
    `instruction_issue`), and every `cross_check_every`-th program of the chunk is rebuilt on the
    host, read by the oracle and evaluated by the model (the sample); each kernel form becomes one
    StreamGroup of tables. Program k of the chunk is instruction k // data_sets with stream tile
    chunk * chunk size + k."""
    with stages("draw"):
        inputs, ops = draw_instructions(chunk, settings)
    count = settings.chunk_programs(chunk)
    instruction_of = np.arange(count) // settings.data_sets
    tiles = (chunk * settings.chunk + np.arange(count)).astype(np.uint64)
    own_profile = "exact" if inputs == "exact" else "sm_90a"  # as hopper_data_sets gives its programs

    def source(members: list[int]) -> StreamPrograms:
        """The programs of instructions `members` of the chunk."""
        positions = np.flatnonzero(np.isin(instruction_of, members))
        local = np.searchsorted(members, instruction_of[positions]).astype(np.int32)
        op = ops[members[0]]
        spec = stream_operands.spec_for(settings.seed, op.atype, op.btype, op.dtype, inputs)
        return StreamPrograms(tuple(ops[i] for i in members), local, tiles[positions], spec, TARGET, own_profile)

    texts: dict[str, list[int]] = {}
    errors, not_run, profiles = [], 0, {}
    skeletons = [Program(TARGET, (op,), profile=own_profile) for op in ops]  # an instruction without data
    with stages("kernel text"):
        for i, (op, skeleton) in enumerate(zip(ops, skeletons)):
            profiles[i] = profile_for(skeleton, settings.profile)
            if instruction_issue(op, profiles[i]) is not None:
                not_run += int(np.count_nonzero(instruction_of == i))
                continue
            try:
                texts.setdefault(hopper_kernel(hopper_form(skeleton)), []).append(i)
            except UnsupportedProgram as err:
                errors += [error_entry(p, str(err), inputs) for p in source([i]).programs()]
    with stages("assemble"):
        cubins = {text: cache.get(text, TARGET) for text in texts}
    sources = {text: source(members) for text, members in texts.items()}
    with stages("model"):
        rebuilt, sample = stream_sample(sources, {text: profiles[members[0]] for text, members in texts.items()},
                                        tiles[0], settings.cross_check_every)
    groups, details = [], []
    for text, members in texts.items():
        group_source, profile = sources[text], profiles[members[0]]
        op, skeleton = ops[members[0]], skeletons[members[0]]
        labels = (form_of(skeleton), input_formats(skeleton), op.dtype, profile)
        with stages("pack"):
            try:
                parameters = stream_parameters(op, profile)
            except ValueError as err:  # e.g. a profile with no datapath for the group's formats
                errors += [error_entry(p, str(err), inputs) for p in group_source.programs()]
                continue
            group = stream_group(text, cubins[text], hopper_form(skeleton), group_source, parameters, sample[text],
                                 rebuilt[text], labels)
        groups.append(group)
        details.append((group_source, None))
    with stages("pack"):
        batch = stream_batch(groups) if groups else None
    return ({"chunk": chunk, "inputs": inputs, "reference": settings.reference, "profile": settings.profile,
             "groups": groups, "batch": batch, "not_run": not_run, "errors": errors, "instructions": len(ops)}, details)


def spool_files(spool: str, chunk: int) -> tuple[str, str]:
    """The two files of a prepared chunk: its launches, and its programs with their expected states."""
    path = os.path.join(spool, f"chunk-{chunk}")
    return path + ".launches.pickle", path + ".programs.pickle"


SPOOL_ALIGN = 64  # bytes: where each array's data starts in a spool file


def write_pickle(path: str, value: object) -> None:
    """`value` pickled with its arrays' data out of band (pickle protocol 5), each array's bytes
    written raw after the pickle, aligned, so that `read_pickle` maps them instead of copying:
    header (pickle length, array count, each array's offset and length), pickle, arrays."""
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    header_size = 16 + 16 * len(views)
    offset = -(-(header_size + len(meta)) // SPOOL_ALIGN) * SPOOL_ALIGN
    placed = []
    for view in views:
        placed.append((offset, view.nbytes))
        offset += -(-view.nbytes // SPOOL_ALIGN) * SPOOL_ALIGN
    header = np.array([len(meta), len(views), *(x for pair in placed for x in pair)], dtype="<u8").tobytes()
    with open(path + ".tmp", "wb") as f:
        f.write(header)
        f.write(meta)
        for (at, _), view in zip(placed, views):
            f.seek(at)
            f.write(view)
        f.truncate(offset)
    os.replace(path + ".tmp", path)


def read_pickle(path: str):
    """What `write_pickle` wrote, its arrays read-only views of the file mapped in memory (they
    keep the mapping alive; the file may go meanwhile)."""
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    whole = memoryview(mapped)
    meta_size, count = np.frombuffer(whole[:16], "<u8")
    placed = np.frombuffer(whole[16:16 + 16 * int(count)], "<u8").reshape(-1, 2)
    start = 16 + 16 * int(count)
    buffers = [whole[int(at):int(at) + int(size)] for at, size in placed]
    return pickle.loads(whole[start:start + int(meta_size)], buffers=buffers)


def frozen_heap() -> CollectorPauses:
    """Move what this process holds once started (its imports, a worker's CUDA context) out of the
    garbage collector's reach (gc.freeze), so that a full collection walks only what the run made
    since, and count the collector's pauses from now on. Unfrozen, a collection stopped a GPU
    worker for 10 ms or more, idling its GPU (reports/campaign-throughput/frozen-heap)."""
    gc.freeze()
    return CollectorPauses()


def producer(settings: Settings, tasks, slots, spool: str, pipe) -> None:
    """A producer process: prepares the chunks it takes from `tasks` (None: stop), each after
    taking one of the `slots` (released when a GPU has finished the chunk), and hands each over
    as a spool file named in a ("ticket", ...) message on `pipe`, its own connection to the main
    process."""
    try:
        os.nice(PRODUCER_NICENESS)
        cache = KernelCache(settings.cache_dir)
        pauses = frozen_heap()  # until the process ends
        while (chunk := tasks.get()) is not None:
            stages = Stages()
            with stages("wait"):
                slots.acquire()
            hits, assembled, assembling = cache.hits, cache.assembled, cache.assemble_seconds
            prepared, details = (prepare_stream if settings.draw == GPU_DRAW else prepare)(chunk, settings, cache, stages)
            launches, programs = spool_files(spool, chunk)
            with stages("spool"):
                write_pickle(programs, details)
                write_pickle(launches, prepared)
            stages.add(GC_STAGE, pauses.take())
            pipe.send(("ticket", chunk, prepared["inputs"], (launches, programs), len(prepared["groups"]),
                       prepared["not_run"], prepared["errors"],
                       prepared["instructions"], stages,
                       (cache.hits - hits, cache.assembled - assembled, cache.assemble_seconds - assembling)))
    except BaseException:  # noqa: BLE001 - every failure is the run's: the main process stops it
        pipe.send(("crash", "producer", traceback.format_exc()))


# --- GPU workers ----------------------------------------------------------------------------------


class Launcher(Protocol):
    """What runs a GPU worker's launches: `name` names the GPU; `seconds` adds up copy in,
    launch, read back and the checker's reference."""

    name: str
    seconds: Counter

    def load(self, text: str, cubin: bytes) -> None: ...

    def reference(self, group: Group) -> np.ndarray:
        """The words the group's kernel must store, computed by the checker from its operands."""

    def launch(self, group: Group) -> np.ndarray:
        """The words [B, threads, words_out] the kernel stores for the group's programs."""

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> object:
        """Queue groups of data sets drawn on the GPU, launched and checked there as `batch` plans
        (`campaign_stream`)."""

    def stream_collect(self, queued: object) -> list[StreamResult]:
        """What queued stream groups gave, a result per group."""


class GpuLauncher:
    """The worker's GPU (the one CUDA_VISIBLE_DEVICES leaves it), which must run sm_90a code."""

    def __init__(self, index: int):
        from tcgen05_conformance.device.target_gpu import hopper_gpu
        from tcgen05_conformance.device.hopper_batch import HopperRunner

        self.gpu = hopper_gpu("campaign")
        self.runner = HopperRunner(self.gpu, TARGET)
        self.name, self.seconds = self.gpu.name, self.runner.seconds
        module = checker_module(self.gpu, TARGET, default_directory())  # while the producers prepare the first chunks
        self.checker, self.streams = GpuReference(self.gpu, module, self.seconds), GpuStream(self.gpu, module, self.seconds)

    def load(self, text: str, cubin: bytes) -> None:
        if text not in self.runner.kernels:
            self.runner.load_cubin(text, cubin)

    def launch(self, group: Group) -> np.ndarray:
        return self.runner.launch_batch(group.batch)

    def reference(self, group: Group) -> np.ndarray:
        return self.checker(group.operands, group.batch.form)

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> object:
        return self.streams.submit(groups, batch, [self.runner.kernels[g.text] for g in groups])

    def stream_collect(self, queued: object) -> list[StreamResult]:
        return self.streams.collect(queued)


class HostOnlyLauncher:
    """No GPU: the words are those of the expected D, packed as the kernel stores them, so that
    every host stage runs (unpacking and comparing included) and the host side can be measured."""

    name = "none (host only: D is the reference's)"

    def __init__(self, index: int):
        self.seconds: Counter = Counter()
        self.checker: HostReference | None = None

    def load(self, text: str, cubin: bytes) -> None:
        pass

    def reference(self, group: Group) -> np.ndarray:
        if self.checker is None:  # compiled (g++) when first needed
            self.checker = HostReference()
        return self.checker(group.operands, group.batch.form)

    def launch(self, group: Group) -> np.ndarray:
        return group.expected

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> list[StreamResult]:
        """The whole launch of every group, on the CPU, at once."""
        results = []
        for group in groups:
            images, registers, ops = host_draw(group)
            expected = self.stream_reference(ops, group.form)
            results.append(stream_result(group, images, registers, expected, self.stream_launch(group, expected)))
        return results

    def stream_collect(self, queued: list[StreamResult]) -> list[StreamResult]:
        return queued

    def stream_reference(self, ops: Operands, form: HopperForm) -> np.ndarray:
        """The checker's words for a stream group's operands (on the CPU)."""
        if self.checker is None:  # compiled (g++) when first needed
            self.checker = HostReference()
        return self.checker(ops, form)

    def stream_launch(self, group: StreamGroup, expected: np.ndarray) -> np.ndarray:
        """The tensor core's words for a stream group: the checker's own."""
        return expected


def make_launcher(spec: str, index: int) -> Launcher:
    """The launcher `spec` names ("gpu", "host-only" or package.module:factory) for worker `index`."""
    if spec == GPU_LAUNCHER:
        return GpuLauncher(index)
    if spec == HOST_ONLY:
        return HostOnlyLauncher(index)
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)(index)


def one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


@dataclass
class Outcome:
    """What a GPU worker reports for (part of) a chunk: counters, failures (each failing program
    with its JSON), the groups it finished, its stage times and the launcher's seconds."""

    counts: Counter = field(default_factory=Counter)
    profiles: Counter = field(default_factory=Counter)
    inner_products: Counter = field(default_factory=Counter)
    per_accumulator: Counter = field(default_factory=Counter)
    per_form_and_formats: Counter = field(default_factory=Counter)  # programs per (form, "A" or "A x B")
    failures: list[dict] = field(default_factory=list)
    groups_done: list[int] = field(default_factory=list)
    launches: int = 0
    stages: Stages = field(default_factory=Stages)
    gpu_seconds: Counter = field(default_factory=Counter)


def settle(group: Group, words: np.ndarray, chunk: dict, outcome: Outcome, details) -> None:
    """Count a launched group and compare the words each program's kernel stored with the
    expected ones; `details()` gives the group's programs and the reference's observations (None
    with the checker: the reference observes a mismatching program then), to judge a mismatch
    on D, unpacked."""
    count_launched(group.form, group.batch.form.op, group.input_formats, group.accumulator, group.profile, len(words),
                   chunk["inputs"], outcome)
    for i in np.flatnonzero((words != group.expected).reshape(len(words), -1).any(axis=1)):
        programs, expected = details()
        observed = expected[i] if expected is not None else None
        judge_mismatch(programs[i], observed, unpack_d(group.batch.form, words[i:i + 1])[0], chunk, outcome)


def count_launched(form: str, op, formats: tuple[str, ...], accumulator: str, profile: str, count: int, inputs: str,
                   outcome: Outcome) -> None:
    """Count `count` launched programs of one kernel form (instruction `op`) by form, inputs,
    judging profile, form and input formats (A's, or "A x B" for a mixed pair), and their inner
    products by input format and accumulator."""
    outcome.profiles[profile] += count
    outcome.counts[f"programs ({inputs})"] += count
    outcome.counts[f"form {form}"] += count
    outcome.per_form_and_formats[form, " x ".join(formats)] += count
    outcome.counts["programs"] += count
    ips = (16 * 8 if op.OP == "mma.sp" else 64 * op.n) * count  # D's elements (PTX ISA 9.7.14.6, 9.7.15.5)
    for f in formats:
        outcome.inner_products[f] += ips
    outcome.per_accumulator[accumulator] += ips


def judge_mismatch(p: Program, observed: Observation | None, d: np.ndarray, chunk: dict, outcome: Outcome) -> None:
    """Judge a program whose D differs from the checker's or the reference's, as `run` does
    (`observed`: the reference's observation, None to observe it now); a pass means the checker
    was wrong where the GPU was right (CrossCheckError)."""
    inputs, reference = chunk["inputs"], chunk["reference"]
    if observed is None:
        observed = expected_states([p], reference, profile=chunk["profile"])[1][0]
    result = verdict(p, reference, observed, d)
    if result.status == "pass":  # the GPU agrees with the model: the checker got this program wrong
        raise CrossCheckError(f"case {p.case_id}: the integer checker's D differs from the Python model's, which "
                              "the GPU's D equals")
    outcome.counts["mismatched programs"] += 1
    outcome.counts["mismatched words"] += result.data["diff"]["mismatched"]
    outcome.failures.append({"case_id": p.case_id, "status": result.status, "detail": result.detail,
                             "label": p.label, "inputs": inputs, "diff": result.data["diff"], "program": dumps(p)})


def settle_stream(group: StreamGroup, result: StreamResult, chunk: dict, outcome: Outcome, label: str) -> None:
    """Check a stream launch (the GPU drew what the host rebuilds, the checker agrees with the
    model on the sample: CrossCheckError otherwise), count it, and judge each program whose D
    differs from the checker's, rebuilt on the host."""
    problem = drawn_differently(group, result, label) or checker_differs(group, result, label)
    if problem:
        raise CrossCheckError(problem)
    outcome.counts["cross-checked programs"] += len(group.sample)
    outcome.counts["cross-checked inner products"] += len(group.sample) * group.shape[0] * group.shape[1]
    count_launched(group.form_name, group.form.op, group.input_formats, group.accumulator, group.profile,
                   group.programs, chunk["inputs"], outcome)
    programs = group.source.programs(result.flagged) if result.flagged.size else []
    for p, words in zip(programs, result.flagged_words):
        judge_mismatch(p, None, unpack_d(group.form, words[None])[0], chunk, outcome)


def cross_check(group: Group, label: str, outcome: Outcome) -> None:
    """With the checker, its D of the group's sampled programs must equal the model's
    (CrossCheckError otherwise)."""
    if group.operands is None:
        return
    differs = disagreement(group.operands, group.batch.form, group.expected, label)
    if differs:
        raise CrossCheckError(differs)
    outcome.counts["cross-checked programs"] += len(group.operands.sample)
    outcome.counts["cross-checked inner products"] += int(group.operands.sample_d.size)


IDLE, BATCH = -1, -2  # a worker's progress[1] between launches, and while a chunk's batch is queued


class ChunkWork:
    """A chunk in a GPU worker: its order (dispatch token, spool files, groups to skip, careful),
    the launches read from the spool, the programs file read when first needed, and its outcome."""

    def __init__(self, order: tuple, waited: float):
        self.token, (launches, self.programs_file), self.skip, self.careful = order
        self.outcome = Outcome()
        self.outcome.stages.add("wait", waited)  # idle before the order came: no prepared chunk
        with self.outcome.stages("read"):
            self.chunk = read_pickle(launches)
        self.details: list = []

    def group_details(self, k: int):
        if not self.details:
            self.details.extend(read_pickle(self.programs_file))
        return self.details[k]

    def label(self, k: int) -> str:
        group = self.chunk["groups"][k]
        return f"chunk {self.chunk['chunk']}, launch {k} ({group.form_name if isinstance(group, StreamGroup) else group.form})"

    @property
    def batched(self) -> bool:
        """Whether the chunk's groups go to the GPU as one batch: a chunk of stream groups, none
        skipped, not rerun one group at a time after a batch of it failed."""
        return self.chunk.get("batch") is not None and not self.skip and not self.careful


def gpu_worker(index: int, device: str | None, launcher_spec: str, cache_dir: str, orders, progress, pipe) -> None:
    """A GPU worker process: opens its launcher (on `device`, as CUDA_VISIBLE_DEVICES, when given;
    the run's kernel cache, `cache_dir`, as $TCGEN05_CACHE), then runs the chunks ordered on
    `orders` ((dispatch token, spool files, groups to skip, careful); None: stop), reporting
    ("done", ...) per chunk on `pipe`, its own connection to the main process (no lock shared with
    other processes, which a killed worker could leave taken).

    A chunk of stream groups goes to the GPU as one batch (`StreamBatch`), queued before the
    previous chunk's batch is collected, so that the GPU has the next chunk while the worker
    settles the last. A careful chunk (a batch of it failed), a chunk with groups to skip, and a
    chunk drawn on the host run one launch group at a time. Before each submission it writes
    (token, group or BATCH, start time) to `progress`, so that the main process knows which launch
    hung or killed it. After a launch raised (a CUDA error leaves the process without a usable
    context), or when the launcher cannot start, it reports that and waits to be stopped. Its
    "ready" says when it began (the epoch second, after the spawn and its imports) and how long
    opening the launcher took (for a GPU: its CUDA context, and the checker's module)."""
    began = time.time()
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    os.environ[CACHE_ENV] = cache_dir

    def stopped() -> None:
        while orders.get() is not None:
            pass

    try:
        opening = time.perf_counter()
        launcher = make_launcher(launcher_spec, index)
    except Exception as e:  # noqa: BLE001 - e.g. GpuUnavailable, a driver error: this GPU cannot run
        pipe.send(("unusable", index, one_line(e)))
        return stopped()
    pipe.send(("ready", index, launcher.name, began, time.perf_counter() - opening))
    pauses = frozen_heap()  # until the process ends

    def fault(work: ChunkWork, k: int, e: Exception) -> None:
        progress[1] = IDLE
        pipe.send(("fault", index, work.token, k, one_line(e), work.outcome))

    def settled(work: ChunkWork, k: int, check) -> bool:
        """Run a launched group's checks and judgement; False (the run stops) on a cross-check failure."""
        work.outcome.launches += 1
        try:
            with work.outcome.stages("compare"):
                check()
        except CrossCheckError as e:
            pipe.send(("disagree", index, str(e)))
            return False
        work.outcome.groups_done.append(k)
        return True

    def settled_stream(work: ChunkWork, k: int, result: StreamResult) -> bool:
        group = work.chunk["groups"][k]
        return settled(work, k, lambda: settle_stream(group, result, work.chunk, work.outcome, work.label(k)))

    def submitted(work: ChunkWork, ks: list[int], handle_of) -> object | None:
        """Load the groups' kernels and queue them (`handle_of(groups)`); None after a fault (reported)."""
        groups = [work.chunk["groups"][k] for k in ks]
        running = BATCH if work.batched else ks[0]
        progress[0], progress[1], progress[2] = work.token, running, time.time()
        try:
            with work.outcome.stages("load"):
                for group in groups:
                    launcher.load(group.text, group.cubin)
            return handle_of(groups)
        except Exception as e:  # noqa: BLE001 - a CUDA error: this process's context is lost
            fault(work, running, e)
            return None

    def collected(work: ChunkWork, ks: list[int], handle) -> bool:
        """Wait for queued stream groups and settle them; False (the run stops) on a fault or a
        cross-check failure."""
        before = Counter(launcher.seconds)
        try:
            results = launcher.stream_collect(handle)
        except Exception as e:  # noqa: BLE001 - a CUDA error: this process's context is lost
            fault(work, BATCH if work.batched else ks[0], e)
            return False
        work.outcome.gpu_seconds.update(Counter(launcher.seconds) - before)
        return all(settled_stream(work, k, result) for k, result in zip(ks, results))

    def one_at_a_time(work: ChunkWork) -> bool:
        """Run a chunk one launch group at a time; False (the run stops) on a fault or a cross-check failure."""
        before = Counter(launcher.seconds)
        for k, group in enumerate(work.chunk["groups"]):
            if k in work.skip:
                continue
            if isinstance(group, StreamGroup):
                handle = submitted(work, [k], lambda g: launcher.stream_submit(g, stream_batch(g)))
                if handle is None or not collected(work, [k], handle):
                    return False
                continue

            def launched(groups: list[Group]) -> tuple[Group, np.ndarray]:
                """The group (with the checker, its expected D computed on the GPU first) and its words."""
                group = groups[0]
                if group.operands is not None:
                    group = dataclasses.replace(group, expected=launcher.reference(group))
                return group, launcher.launch(group)

            ran = submitted(work, [k], launched)
            if ran is None:
                return False
            group, words = ran

            def judge(k: int = k, group: Group = group, words: np.ndarray = words) -> None:
                cross_check(group, work.label(k), work.outcome)
                settle(group, words, work.chunk, work.outcome, lambda: work.group_details(k))

            if not settled(work, k, judge):
                return False
        work.outcome.gpu_seconds = Counter(launcher.seconds) - before  # the whole chunk's, `collected`'s included
        return True

    def done(work: ChunkWork) -> None:
        work.outcome.stages.add(GC_STAGE, pauses.take())
        pipe.send(("done", index, work.token, work.outcome))

    try:
        queued: deque = deque()  # chunks whose batch is on the GPU, oldest first: (work, groups, handle)

        def settle_oldest() -> bool:
            work, ks, handle = queued.popleft()
            if not collected(work, ks, handle):
                return False
            progress[1] = IDLE if not queued else progress[1]
            done(work)
            return True

        while True:
            waiting = time.perf_counter()
            try:  # with a batch on the GPU, settle it rather than wait for the next order
                order = orders.get(block=not queued)
            except Empty:
                if not settle_oldest():
                    return stopped()
                continue
            if order is None:
                break
            work = ChunkWork(order, time.perf_counter() - waiting)
            if not work.batched:
                while queued:
                    if not settle_oldest():
                        return stopped()
                if not one_at_a_time(work):
                    return stopped()
                progress[1] = IDLE
                done(work)
                continue
            ks = list(range(len(work.chunk["groups"])))
            handle = submitted(work, ks, lambda groups: launcher.stream_submit(groups, work.chunk["batch"]))
            if handle is None:
                return stopped()
            queued.append((work, ks, handle))
            while len(queued) >= GPU_BATCHES_QUEUED:
                if not settle_oldest():
                    return stopped()
        while queued:
            if not settle_oldest():
                return stopped()
        progress[1] = IDLE
    except BaseException:  # noqa: BLE001 - a bug, not the GPU: the main process stops the run
        pipe.send(("crash", f"GPU worker {index}", traceback.format_exc()))


# --- the main process: hands chunks to GPU workers, watches them, adds up ---------------------------


class CampaignError(RuntimeError):
    """A process of the run hit a bug (its traceback in the message): the run stops."""


class NoWorkerCouldRun(RuntimeError):
    """Every GPU's worker failed to start (the message says why, on one line)."""


@dataclass
class Worker:
    """The main process's view of one GPU's worker."""

    index: int
    device: str | None
    process: multiprocessing.Process | None = None
    pipe: object = None  # the main process's end of the worker's connection
    orders: object = None
    progress: object = None
    started: float = 0.0
    ready: bool = False
    failed_starts: int = 0
    name: str = ""
    assigned: deque = field(default_factory=deque)  # dispatch tokens, in order
    dispatched: int = 0
    programs: int = 0
    launches: int = 0
    gpu_seconds: Counter = field(default_factory=Counter)
    restarts: int = 0
    incidents: list[str] = field(default_factory=list)
    gone: str | None = None  # why this GPU was given up


@dataclass
class ChunkState:
    """A prepared chunk: its inputs, its spool files (launches, programs), its count of launch
    groups, those settled (launched or charged), the token of its current dispatch, how often a
    worker died with it outside a launch, and whether it runs one launch group at a time."""

    inputs: str
    files: tuple[str, str]
    groups: int
    skip: set = field(default_factory=set)
    token: int | None = None
    deaths: int = 0
    careful: bool = False  # run one launch group at a time: a batch of it failed


class Run:
    """The main process of one campaign: starts the producers and a worker per GPU, hands the
    prepared chunks to free workers, watches them and adds their outcomes up."""

    def __init__(self, settings: Settings, jobs: int, devices: Sequence[str | None], launcher: str, timeout_s: float, log):
        self.settings, self.jobs, self.launcher, self.timeout_s, self.log = settings, jobs, launcher, timeout_s, log
        self.context = multiprocessing.get_context("spawn")  # no fork: workers hold CUDA contexts
        self.pipes: dict = {}  # the main process's end of each child's connection -> the worker, or None for a producer
        self.tasks = self.context.Queue()
        # A slot per chunk being prepared, waiting prepared or in flight: every producer can work
        # while READY_PER_GPU chunks per GPU wait (with slots only for the waiting chunks, 16
        # producers on one GPU kept 6 cores busy: 769 programs/s on the H100).
        self.slots = self.context.Semaphore(jobs + (READY_PER_GPU + IN_FLIGHT_PER_GPU) * len(devices))
        self.workers = [Worker(i, device) for i, device in enumerate(devices)]
        self.producers: list[multiprocessing.Process] = []
        self.chunks: dict[int, ChunkState] = {}
        self.tokens: dict[int, int] = {}  # dispatch token -> chunk
        self.next_token = 0
        self.waiting: deque[int] = deque()
        self.pending = set(settings.chunks())
        self.outcome = Outcome()
        self.producer_stages, self.main_stages = Stages(), Stages()
        self.cache: Counter = Counter()
        self.instructions = 0
        self.not_run = 0
        self.started, self.started_epoch = time.perf_counter(), time.time()
        self.first_dispatch: float | None = None  # seconds from the start to the first chunk handed to a GPU worker
        self.first_prepared: float | None = None  # ... to the first chunk prepared
        self.first_ready: float | None = None  # ... to the first GPU worker ready
        self.first_worker: dict[str, float] = {}  # that worker's start: spawned, its spawn and imports, its launcher

    # --- processes ---

    def connect(self, target, args: tuple, worker: Worker | None) -> tuple[multiprocessing.Process, object]:
        """Start a child process running `target(*args, pipe)`, `pipe` its own connection to this
        process (whose end here is returned, and remembered with the `worker` it belongs to)."""
        ours, theirs = self.context.Pipe(duplex=False)
        process = self.context.Process(target=target, args=args + (theirs,), daemon=True)
        process.start()
        theirs.close()
        self.pipes[ours] = worker
        return process, ours

    def start_worker(self, w: Worker) -> None:
        w.orders = self.context.Queue()
        w.progress = self.context.Array("d", [-1.0, -1.0, 0.0], lock=False)
        w.started, w.ready = time.time(), False
        w.process, w.pipe = self.connect(gpu_worker, (w.index, w.device, self.launcher, self.settings.cache_dir, w.orders,
                                                       w.progress), w)

    def stop_worker(self, w: Worker) -> None:
        """Kill the worker and forget its connection: nothing it sent afterwards is read."""
        if w.process is not None:
            w.process.kill()
            w.process.join(30)
        if w.pipe is not None:
            self.pipes.pop(w.pipe, None)
            w.pipe.close()
        w.process, w.pipe, w.ready = None, None, False

    def start(self, spool: str) -> None:
        """Start the GPU workers, then the producers: a worker's start (its imports, then its CUDA
        context) is the longer, and it should not queue behind every producer's spawn."""
        for w in self.workers:
            self.start_worker(w)
        for c in sorted(self.pending):
            self.tasks.put(c)
        for _ in range(self.jobs):
            self.tasks.put(None)
            process, _ = self.connect(producer, (self.settings, self.tasks, self.slots, spool), None)
            self.producers.append(process)

    def shutdown(self) -> None:
        """Stop every process: workers are asked to, then anything still running is killed."""
        for w in self.workers:
            if w.process is not None and w.process.is_alive():
                w.orders.put(None)
        deadline = time.time() + 30
        for process in [w.process for w in self.workers if w.process is not None] + self.producers:
            process.join(max(0.0, deadline - time.time()))
            if process.is_alive():
                process.kill()
                process.join(10)

    # --- the loop ---

    def run(self) -> None:
        try:
            with frozen_heap() as pauses:
                self.loop()
                self.main_stages.add(GC_STAGE, pauses.take())
        finally:  # for the loop alone: this process may go on to other work
            gc.unfreeze()

    def loop(self) -> None:
        last_report = started = time.time()
        while self.pending:
            ready = wait(list(self.pipes), timeout=0.2)
            with self.main_stages("dispatch"):
                for pipe in ready:
                    if pipe not in self.pipes:  # a worker stopped while handling an earlier message
                        continue
                    try:
                        message = pipe.recv()
                    except (EOFError, OSError):  # the child exited; watch() sees to a worker that died
                        self.pipes.pop(pipe)
                        pipe.close()
                        continue
                    self.handle(message)
                self.watch()
                self.dispatch()
            if time.time() - last_report >= PROGRESS_EVERY_S:
                last_report = time.time()
                self.print_progress(last_report - started)
        self.print_progress(time.time() - started)

    def print_progress(self, elapsed: float) -> None:
        c = self.outcome.counts
        print(f"{c['programs']} programs, {c['mismatched programs']} mismatched, {c['errors']} errors, {elapsed:.0f} s, "
              f"{c['programs'] / max(elapsed, 1e-9):.0f} programs/s", file=self.log, flush=True)

    def handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "crash":
            raise CampaignError(f"{message[1]} failed:\n{message[2]}")
        if kind == "disagree":
            raise CrossCheckError(message[2])
        if kind == "ticket":
            _, chunk, inputs, files, groups, not_run, errors, instructions, stages, (hits, assembled, seconds) = message
            self.chunks[chunk] = ChunkState(inputs, files, groups)
            self.not_run += not_run
            self.instructions += instructions
            self.outcome.counts["errors"] += len(errors)
            self.outcome.failures += errors
            self.producer_stages.merge(stages)
            self.cache.update({"hits": hits, "assembled": assembled})
            self.cache["assemble_seconds"] += seconds
            self.waiting.append(chunk)
            if self.first_prepared is None:
                self.first_prepared = time.perf_counter() - self.started
            if groups == 0:
                self.finish(chunk)
            return
        w = self.workers[message[1]]
        if kind == "ready":
            _, _, w.name, began, opening_s = message
            w.ready, w.failed_starts = True, 0
            if self.first_ready is None:
                self.first_ready = time.perf_counter() - self.started
                self.first_worker = {"spawned_s": w.started - self.started_epoch, "spawn_and_imports_s": began - w.started,
                                     "launcher_s": opening_s}
        elif kind == "unusable":
            self.stop_worker(w)
            self.restart_or_give_up(w, f"its worker could not start: {message[2]}")
        elif kind == "done":
            _, _, token, outcome = message
            chunk = self.tokens.pop(token)
            w.assigned.remove(token)
            self.account(w, outcome)
            self.finish(chunk)
        elif kind == "fault":
            _, _, token, k, detail, outcome = message
            self.account(w, outcome)
            self.chunks[self.tokens[token]].skip.update(outcome.groups_done)
            self.lose_worker(w, token, k, f"the launch raised {detail}")

    def account(self, w: Worker, outcome: Outcome) -> None:
        o = self.outcome
        o.counts.update(outcome.counts)
        o.profiles.update(outcome.profiles)
        o.inner_products.update(outcome.inner_products)
        o.per_accumulator.update(outcome.per_accumulator)
        o.per_form_and_formats.update(outcome.per_form_and_formats)
        o.failures += outcome.failures
        o.launches += outcome.launches
        o.stages.merge(outcome.stages)
        o.gpu_seconds.update(outcome.gpu_seconds)
        w.programs += outcome.counts["programs"]
        w.launches += outcome.launches
        w.gpu_seconds.update(outcome.gpu_seconds)

    def finish(self, chunk: int) -> None:
        """The chunk is done: its file goes, and a producer may prepare another."""
        state = self.chunks.pop(chunk)
        if chunk in self.waiting:
            self.waiting.remove(chunk)
        for path in state.files:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        self.pending.discard(chunk)
        self.slots.release()

    def watch(self) -> None:
        """Kill a worker whose launch runs past the timeout; notice one that died or never started,
        and a producer that died."""
        now = time.time()
        for w in self.workers:
            if w.gone or w.process is None:
                continue
            token, k, since = int(w.progress[0]), int(w.progress[1]), w.progress[2]
            running = token if k != IDLE and token in w.assigned else None
            if not w.process.is_alive():
                self.lose_worker(w, running, k, f"its worker died (exit status {w.process.exitcode})")
            elif running is not None and now - since > self.timeout_s:
                self.lose_worker(w, running, k, f"no result after {self.timeout_s:g} s (a hang): its worker was killed")
            elif not w.ready and now - w.started > START_TIMEOUT_S:
                self.stop_worker(w)
                self.restart_or_give_up(w, f"its worker did not start within {START_TIMEOUT_S:g} s")
        for process in self.producers:
            if process.exitcode not in (None, 0):
                raise CampaignError(f"a producer process died (exit status {process.exitcode})")

    def lose_worker(self, w: Worker, token: int | None, k: int, what: str) -> None:
        """Worker `w` is gone while running launch `k` of the chunk dispatched as `token` (None: not
        in a launch): charge that launch's cases, hand its chunks out again, start a new worker.
        With k == BATCH (a batch of launches queued), nothing is charged: its chunks run again
        one launch at a time, where a launch that fails again is charged alone."""
        was_ready = w.ready
        self.stop_worker(w)
        if not was_ready:  # it died starting: nothing was handed to it
            return self.restart_or_give_up(w, what)
        running = self.tokens.get(token) if token is not None else None
        chunks = [self.tokens.pop(t) for t in w.assigned]  # in the order the worker runs them
        w.assigned.clear()
        for chunk in chunks:
            self.chunks[chunk].token = None
        self.waiting.extendleft(reversed(chunks))
        if running is not None and k == BATCH:  # which launch of the batches it had queued is not known
            w.incidents.append(f"chunk {running}, a batch of launches: {what}; chunks {', '.join(map(str, chunks))} run "
                               "again one launch at a time")
            for chunk in chunks:
                self.chunks[chunk].careful = True
        elif running is not None:
            w.incidents.append(f"chunk {running}, launch {k}: {what}")
            self.charge(running, [k], f"GPU {w.index} ({w.name or w.device}): {what}")
        else:
            w.incidents.append(what)
            if chunks:  # it died reading the first of them, or between launches
                state = self.chunks[chunks[0]]
                state.deaths += 1
                if state.deaths >= CHUNK_DEATHS:
                    self.charge(chunks[0], [g for g in range(state.groups) if g not in state.skip],
                                f"GPU workers died {CHUNK_DEATHS} times with this chunk, outside its launches ({what})")
        w.restarts += 1
        self.start_worker(w)

    def restart_or_give_up(self, w: Worker, why: str) -> None:
        """A worker failed to start: start another, unless this GPU failed WORKER_STARTS times in a row."""
        w.incidents.append(why)
        w.failed_starts += 1
        if w.failed_starts < WORKER_STARTS:
            return self.start_worker(w)
        w.gone = why
        if all(x.gone for x in self.workers):
            raise NoWorkerCouldRun(f"no GPU worker could run: GPU {w.index}: {why}")

    def charge(self, chunk: int, groups: list[int], detail: str) -> None:
        """Charge the cases of launch groups of a chunk as errors; the chunk is finished when
        nothing of it is left to run."""
        state = self.chunks[chunk]
        details = read_pickle(state.files[1])
        for k in groups:
            programs = details[k][0]
            for p in programs.programs() if isinstance(programs, StreamPrograms) else programs:
                self.outcome.counts["errors"] += 1
                self.outcome.failures.append(error_entry(p, detail, state.inputs))
        state.skip.update(groups)
        if len(state.skip) >= state.groups:
            self.finish(chunk)

    def dispatch(self) -> None:
        """Hand waiting chunks to the ready workers, the least loaded first (then the one given
        the fewest chunks so far)."""
        while self.waiting:
            free = [w for w in self.workers if w.ready and not w.gone and len(w.assigned) < IN_FLIGHT_PER_GPU]
            if not free:
                return
            w = min(free, key=lambda x: (len(x.assigned), x.dispatched, x.index))
            chunk = self.waiting.popleft()
            state = self.chunks[chunk]
            token, self.next_token = self.next_token, self.next_token + 1
            state.token, self.tokens[token] = token, chunk
            w.orders.put((token, state.files, frozenset(state.skip), state.careful))
            if self.first_dispatch is None:
                self.first_dispatch = time.perf_counter() - self.started
            w.assigned.append(token)
            w.dispatched += 1


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


def rounded(seconds: float | None) -> float | None:
    return round(seconds, 3) if seconds is not None else None


def report(run: Run, seconds: float, evicted: int, keep_cache: bool) -> dict:
    o, s = run.outcome, run.settings
    programs = o.counts["programs"]
    total_ips = sum(o.per_accumulator.values())
    busy = [sum(w.gpu_seconds[k] for k in GPU_STAGES) for w in run.workers]
    gpus = [{"index": w.index, "device": w.device, "name": w.name, "programs": w.programs, "launches": w.launches,
             "busy_seconds": round(b, 3), **{f"{k}_seconds": round(w.gpu_seconds[k], 3) for k in GPU_STAGES},
             "idle_between_batches_seconds": round(w.gpu_seconds[GPU_IDLE], 3),
             "idle_between_batches_by_gap_seconds": {label: round(w.gpu_seconds[idle_gap_key(label)], 3)
                                                     for _, label in IDLE_GAPS_MS},
             "programs_per_s_busy": round(w.programs / b, 1) if b else None,
             "restarts": w.restarts, "incidents": w.incidents, "given_up": w.gone} for w, b in zip(run.workers, busy)]
    gpu_rate = sum(w.programs / b for w, b in zip(run.workers, busy) if b)
    gpu_ips = total_ips / programs * gpu_rate if programs else 0.0
    stages = Stages()
    stages.merge(run.producer_stages)
    gpu_stages = Stages()
    gpu_stages.merge(o.stages)
    for k in GPU_STAGES:
        gpu_stages.add(k, o.gpu_seconds[k])
    failures = sorted(o.failures, key=lambda f: f["case_id"])
    return {
        "gpu": ", ".join(sorted({w.name for w in run.workers if w.name})),
        "gpus": gpus,
        "arch": TARGET,
        "reference": s.reference,
        "profile": ", ".join(sorted(o.profiles)),
        "profiles": dict(sorted(o.profiles.items())),
        "seed": s.seed,
        "shard": f"{s.shard[0]}/{s.shard[1]}",
        "settings": {"chunk": s.chunk, "data_sets": s.data_sets, "batch_reference": s.batch_reference,
                     "numerics": s.numerics, "cross_check_every": s.cross_check_every if s.numerics == CHECKER else None,
                     "draw": s.draw,
                     "kernel_cache": s.cache_dir if keep_cache else None, "jobs": run.jobs, "launcher": run.launcher,
                     "timeout_s": run.timeout_s},
        "programs": programs,
        "instructions": run.instructions,
        "programs_by_inputs": {i: o.counts[f"programs ({i})"] for i in INPUTS},
        "programs_by_form": {f: o.counts[f"form {f}"] for f in FORMS},
        "programs_by_form_and_formats": {f: dict(sorted((formats, n) for (form, formats), n in o.per_form_and_formats.items()
                                                        if form == f)) for f in FORMS},
        "launches": o.launches,
        "kernel_cache": {"hits": run.cache["hits"], "assembled": run.cache["assembled"],
                         "assemble_seconds": round(run.cache["assemble_seconds"], 3), "evicted": evicted},
        "inner_products": dict(sorted(o.inner_products.items())),
        "inner_products_by_accumulator": dict(sorted(o.per_accumulator.items())),
        "inner_products_total": total_ips,
        "cross_checked": {"programs": o.counts["cross-checked programs"],
                          "inner_products": o.counts["cross-checked inner products"]},
        "mismatches": o.counts["mismatched programs"],
        "mismatched_words": o.counts["mismatched words"],
        "errors": o.counts["errors"],
        "not_run": run.not_run,
        "seconds": round(seconds, 3),
        "startup_seconds": rounded(run.first_dispatch),
        "startup": {"first_chunk_prepared_s": rounded(run.first_prepared), "first_worker_ready_s": rounded(run.first_ready),
                    "first_dispatch_s": rounded(run.first_dispatch),
                    "first_worker": {name: round(s, 3) for name, s in run.first_worker.items()}},
        "gpu_seconds": round(sum(busy), 3),
        "stages": {"producers": stages.as_dict(programs), "gpu_workers": gpu_stages.as_dict(programs),
                   "main": run.main_stages.as_dict(programs)},
        "throughput": {
            "programs_per_s_end_to_end": round(programs / seconds, 1),
            "programs_per_s_after_startup": (round(programs / (seconds - run.first_dispatch), 1)
                                             if run.first_dispatch is not None and seconds > run.first_dispatch else None),
            "inner_products_per_s_end_to_end": round(total_ips / seconds),
            "programs_per_s_gpu": round(gpu_rate, 1) if gpu_rate else None,
            "inner_products_per_s_gpu": round(gpu_ips) if gpu_rate else None,
            # the issue's measure: how near the GPUs' own rate the run came (1 with no GPU ever waiting)
            "end_to_end_over_gpu": round(programs / seconds / gpu_rate, 4) if gpu_rate else None,
        },
        "failures": [{k: v for k, v in f.items() if k != "program"} for f in failures[:FAILURES_KEPT]],
    }


def stage_table(report: dict) -> str:
    """The report's stages as an aligned text table (where, stage, seconds, CPU seconds, ms per program)."""
    rows = [(where, name, v["seconds"], v["cpu_seconds"], v["ms_per_program"])
            for where, stages in report["stages"].items() for name, v in stages.items()]
    lines = [f"{'where':<12} {'stage':<12} {'seconds':>10} {'cpu s':>10} {'ms/program':>11}"]
    lines += [f"{w:<12} {n:<12} {s:>10.3f} {c:>10.3f} {m:>11.4f}" for w, n, s, c, m in rows]
    return "\n".join(lines)
