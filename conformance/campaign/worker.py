"""The GPU worker process (`gpu_worker`): runs the chunks the main process orders, compares the words
the kernels stored with the expected ones and judges the programs that differ."""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections import Counter, deque
from queue import Empty
from dataclasses import dataclass, field

import numpy as np

from tcgen05_conformance.core.program import Program, dumps
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.campaign.checker import disagreement
from tcgen05_conformance.campaign.judging import expected_states, verdict
from tcgen05_conformance.campaign.launchers import make_launcher
from tcgen05_conformance.campaign.producer import Group, frozen_heap, read_pickle
from tcgen05_conformance.campaign.settings import GC_STAGE, GPU_BATCHES_QUEUED
from tcgen05_conformance.campaign.stream import StreamGroup, StreamResult, checker_differs, drawn_differently, stream_batch
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.hopper_batch import unpack_d
from tcgen05_conformance.device.kernel_cache import CACHE_ENV
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError


# --- GPU workers ----------------------------------------------------------------------------------


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
