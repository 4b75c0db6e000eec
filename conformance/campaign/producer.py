"""The producers: a chunk drawn, its expected D (or the checker's operands) computed, its kernels
assembled and packed, and handed to the main process as spool files (`write_pickle`, `read_pickle`)."""

from __future__ import annotations

import gc
import mmap
import os
import pickle
import traceback
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tcgen05_conformance.core.program import Program, dumps
from tcgen05_conformance.harness.judge import profile_for
from tcgen05_conformance.campaign.checker import Operands, model_sample, operands
from tcgen05_conformance.campaign.judging import expected_states
from tcgen05_conformance.campaign.settings import (
    CHECKER, GC_STAGE, GPU_DRAW, MODEL, PRODUCER_NICENESS, TARGET, Settings, form_of, input_formats,
)
from tcgen05_conformance.campaign.stream import StreamPrograms, stream_batch, stream_group, stream_parameters
from tcgen05_conformance.harness.stages import CollectorPauses, Stages
from tcgen05_conformance.device.hopper_batch import Batch, pack, pack_d
from tcgen05_conformance.device.kernel_cache import KernelCache
from tcgen05_conformance.device.ptx.kernels import HopperForm, UnsupportedProgram, hopper_form, hopper_kernel
from tcgen05_conformance.generators import stream_operands
from tcgen05_conformance.generators.programs import INPUTS, hopper_instructions, hopper_program_sets
from tcgen05_conformance.generators.sampling import draw_examples, seed_only_draws
from tcgen05_conformance.oracles.execute import matrix_products
from tcgen05_conformance.oracles.hopper import instruction_issue
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct, evaluate


# --- producers: one chunk drawn, evaluated, assembled and packed ---------------------------------


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
