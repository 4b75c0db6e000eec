"""The main process of a campaign (`Run`): starts the producers and a GPU worker per GPU, hands the
prepared chunks to free workers, restarts a worker that faults, hangs or dies, and adds up."""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections import Counter, deque
from multiprocessing.connection import wait
from dataclasses import dataclass, field
from typing import Sequence

from tcgen05_conformance.campaign.producer import error_entry, frozen_heap, producer, read_pickle
from tcgen05_conformance.campaign.settings import (
    CHUNK_DEATHS, GC_STAGE, IN_FLIGHT_PER_GPU, PROGRESS_EVERY_S, READY_PER_GPU, START_TIMEOUT_S, WORKER_STARTS, Settings,
)
from tcgen05_conformance.campaign.stream import StreamPrograms
from tcgen05_conformance.campaign.worker import BATCH, IDLE, Outcome, gpu_worker
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError


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
