"""Fault isolation: run a backend over programs in child processes under a watchdog, so that a
hung kernel (an mbarrier that never completes), a segfault or a device fault costs one case,
not the run.

Programs go in batches; each batch runs in a fresh child, `python -m tcgen05_conformance.harness.supervisor
REQUEST`, which sets the backend up once and calls `observe([program])` for each program in turn,
writing every observation back as one JSON line as soon as it exists (a state as base64 of its
words, `tcgen05_conformance.core.state.state_to_json`): a hang in case 7 of 10 keeps observations 1-6,
and the case a child was running when it died is known exactly. The supervisor judges nothing:
the parent judges the observations (`tcgen05_conformance.harness.judge`), the reference's as well as
any other backend's. Set-up (imports, device context) is paid once per batch; work a backend
would share across the programs of one `observe` call is not shared. A subprocess rather than a multiprocessing worker, because the parent
needs exactly what a subprocess gives: the child's own stderr (its last line explains a death),
its exit status or signal, a process group to kill whole (helpers the backend started
included), and no fork after CUDA initialisation. The request (backend, profile, programs as
JSON) travels in a temporary file and observations come back over a private copy of the child's
stdout; the child points its own file descriptor 1 at stderr, so anything a backend prints, C
libraries included, cannot garble the results.

Batches run one after another, or with `jobs` > 1 up to that many at once, each child watched
by a thread of its own; observations are settled under one lock, so the caller's callbacks
(journal, progress) see one at a time, and are returned in program order whatever order they
came in. With `devices` (CUDA_VISIBLE_DEVICES values, `run --gpus`) there is one such thread per
device instead, and each child it starts has CUDA_VISIBLE_DEVICES set to its device before the
backend is made: every GPU runs one child at a time, which sees that GPU alone (as its device 0).
A child that hangs or dies holds up its own device only; the other threads go on taking batches.

When a batch's child runs past `timeout_s` (counted from its start, set-up included) it is
killed; when it dies, the status or signal and its last stderr line are kept. Observations it
reported stand. The case it was running is the suspect: it runs again alone, and only when it
fails alone too is it charged with an `error` naming the timeout or the death (when it is
observed alone, that observation stands, with the batch's failure in `data["batch_failure"]`);
the cases the child never started run on as a fresh batch. A hung case thus costs at most twice
`timeout_s`. A child that dies or hangs before its backend is set up has no suspect: every case of its batch
is charged. The child exits when its parent does (its stdin, held open by the parent, reaches
end of file), so a killed run leaves no hung children behind.

A backend is named by any spec `tcgen05_conformance.harness.backends.registry` reads (`oracle`,
`sim:CMD`, `package.module:factory`, ...), made in the child for the profile given.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from tcgen05_conformance.core.program import Program, from_json, to_json
from tcgen05_conformance.harness.backends.base import (
    STATE,
    Backend,
    Observation,
    Progress,
    observation_from_json,
    observation_to_json,
    observes,
)
from tcgen05_conformance.harness.backends.registry import SpecError, backend_from_spec
from tcgen05_conformance.harness.processes import how_it_ended, last_line

DEFAULT_BATCH_SIZE = 20
_IDS_SHOWN = 8

OnObservation = Callable[[Observation], None]


def observe_one_at_a_time(backend: Backend, programs: Sequence[Program], on_observation: OnObservation,
                          progress: Progress | None = None) -> None:
    """`backend.observe([p])` for each program in turn, handing each observation to
    `on_observation` as soon as it exists (none is held here); RuntimeError when the backend
    answers for another case."""
    for k, p in enumerate(programs):
        got = backend.observe([p])
        if len(got) != 1 or got[0].case_id != p.case_id:
            raise RuntimeError(f"backend {backend.name} returned {[o.case_id for o in got]} for case {p.case_id}")
        on_observation(got[0])
        if progress:
            progress(k + 1)


def run_supervised(backend: str, profile: str | None, programs: Sequence[Program], timeout_s: float | None,
                   batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None,
                   on_result: OnObservation | None = None, jobs: int = 1, devices: Sequence[str] = ()) -> list[Observation]:
    """One observation per program by backend spec `backend` made for `profile`, in order, each
    handed to `on_result` as it arrives; a case whose child hung past `timeout_s` (None: no
    watchdog) or died, alone as well as in its batch, is an `error`. Up to `jobs` children run at
    once, each on its own batch, batches then no larger than an even share of the programs; with
    `devices`, one child per device at a time instead, pinned to it (CUDA_VISIBLE_DEVICES), `jobs`
    unused. `on_result` and `progress` are called by one thread at a time.
    An exception in one of them (or an interrupt) stops the run: the children still running are
    killed, and it is raised here."""
    if (timeout_s is not None and not timeout_s > 0) or batch_size < 1 or jobs < 1:
        raise ValueError(f"timeout_s must be positive, batch_size and jobs at least 1 (got {timeout_s}, {batch_size}, {jobs})")
    results: list[Observation | None] = [None] * len(programs)
    slots: list[str | None] = list(devices) or [None] * jobs  # what each worker thread pins its children to
    size = min(batch_size, -(-len(programs) // len(slots))) or 1
    batches = deque(list(range(k, min(k + size, len(programs)))) for k in range(0, len(programs), size))
    earlier_failure: dict[int, str] = {}  # a suspect's index -> how its batch failed
    lock = threading.Condition()
    running, settled = 0, 0
    stopped_by: list[BaseException] = []
    live: set[subprocess.Popen] = set()  # the children running now

    def settle(k: int, r: Observation) -> None:
        nonlocal settled
        with lock:
            if stopped_by:
                raise _Stopped
            if k in earlier_failure:
                r.data["batch_failure"] = earlier_failure.pop(k)
            results[k] = r
            settled += 1
            if on_result:
                on_result(r)
            if progress:
                progress(settled)

    def stop(e: BaseException) -> None:
        with lock:
            if not isinstance(e, _Stopped) and not stopped_by:
                stopped_by.append(e)
            lock.notify_all()
        for proc in list(live):
            _kill(proc)

    def work(device: str | None) -> None:
        """Take batches until none is left or running children can add none, running each in a
        child pinned to `device` (None: left as it is); a failed batch's suspect goes first,
        alone, then the cases its child never started."""
        nonlocal running
        while True:
            with lock:
                while not batches and running and not stopped_by:
                    lock.wait()
                if stopped_by or not batches:
                    return
                batch = batches.popleft()
                running += 1
            try:
                child = _run_child(backend, profile, [programs[k] for k in batch], timeout_s,
                                   lambda j, r: settle(batch[j], r), live, device)
                rest = batch[child.reported:]
                if rest and len(batch) > 1 and child.ready:
                    with lock:
                        earlier_failure[rest[0]] = child.failure
                        batches.extendleft([b for b in (rest[1:], rest[:1]) if b])
                else:
                    for k in rest:
                        settle(k, Observation(programs[k].case_id, error=child.failure))
            except BaseException as e:
                stop(e)
                return
            finally:
                with lock:
                    running -= 1
                    lock.notify_all()

    if len(slots) == 1:
        work(slots[0])
    else:
        for device in slots[:len(batches)]:
            threading.Thread(target=work, args=(device,), name="tcgen05-supervisor", daemon=True).start()
        try:
            with lock:
                while (batches or running) and not stopped_by:
                    lock.wait()
        except BaseException as e:
            stop(e)
    if stopped_by:
        raise stopped_by[0]
    return results


class _Stopped(Exception):
    """Raised in a worker whose run was stopped by an exception elsewhere, to end its child."""


@dataclass
class _Child:
    """What one batch's child did: whether its backend was set up (and what it said of it, asked
    for an empty batch), how many observations it reported (a prefix of the batch), why it reported
    no more (one line), if it stopped early, and why its spec names no backend, if it does not."""

    ready: bool = False
    reported: int = 0
    failure: str = ""
    facts: dict | None = None
    refused: str | None = None


@dataclass
class BackendFacts:
    """What the harness needs of a backend before it observes: its name, what it observes, why it
    cannot run here (None: it can) and why every case of it is an error (None: none is)."""

    name: str
    observes: str = STATE
    unavailable: str | None = None
    broken: str | None = None


def describe(backend: str, profile: str | None, timeout_s: float | None) -> BackendFacts:
    """The facts of backend spec `backend` made for `profile`, made and asked in a watched child
    (killed after `timeout_s`, None: no watchdog), so that no code of its runs in this process; a
    child that dies or hangs before it answers makes the backend broken, saying how. SpecError
    when the spec names no backend."""
    child = _run_child(backend, profile, [], timeout_s, lambda k, o: None, set(), None)
    if child.refused is not None:
        raise SpecError(child.refused)
    if child.facts is None:
        return BackendFacts(backend, broken=f"backend {backend}: {child.failure}")
    facts = child.facts
    return BackendFacts(facts["name"], facts["observes"], facts["unavailable"], facts["broken"])


def _run_child(backend: str, profile: str | None, programs: list[Program], timeout_s: float | None,
               settle: Callable[[int, Observation], None], live: set[subprocess.Popen], device: str | None) -> _Child:
    """Run one batch in a child under the watchdog (none when `timeout_s` is None), settling each
    observation it reports by its index; the child sees GPU `device` alone (None: the GPUs this
    process sees) and is in `live` while it runs."""
    with tempfile.TemporaryDirectory(prefix="tcgen05-supervisor-") as tmp:
        request = os.path.join(tmp, "request.json")
        with open(request, "w", encoding="utf-8") as f:
            json.dump({"backend": backend, "profile": profile, "programs": [to_json(p) for p in programs]}, f)
        stderr_path = os.path.join(tmp, "stderr")
        # The child imports what this process imports (plugin backends from a test tree included).
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        if device is not None:
            env["CUDA_VISIBLE_DEVICES"] = device
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "tcgen05_conformance.harness.supervisor", request], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=stderr, env=env, start_new_session=True)
        live.add(proc)
        child = _Child()
        try:
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            timed_out = _read_results(proc, programs, deadline, child, settle)
        finally:
            _kill(proc)
            proc.wait()
            live.discard(proc)
            proc.stdin.close()
            proc.stdout.close()
        if (child.reported == len(programs) and (programs or child.ready)) or child.failure or child.refused:
            return child
        ids = [p.case_id for p in programs[child.reported:]]
        shown = (", ".join(ids[:_IDS_SHOWN]) + (f" (+{len(ids) - _IDS_SHOWN} more)" if len(ids) > _IDS_SHOWN else "")) or "(none)"
        stage = "" if child.ready else " before its backend was set up"
        batch = f"batch of {len(programs)} case{'s' if len(programs) > 1 else ''}" if programs else "asked what it is"
        if timed_out:
            child.failure = f"timeout: {batch} exceeded {timeout_s:g} s (watchdog){stage}; unfinished case ids {shown}"
        else:
            how = how_it_ended(proc.returncode)
            child.failure = (f"crash: child {how}{stage}; {batch}; unfinished case ids {shown}; "
                             f"last stderr line: {last_line(stderr_path) or '(none)'}")
        return child


def _read_results(proc: subprocess.Popen, programs: list[Program], deadline: float | None, child: _Child,
                  settle: Callable[[int, Observation], None]) -> bool:
    """Hand on the child's observations until it closes its output; True when the deadline (if
    any) came first."""
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return True
            if not selector.select(remaining):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if not _take(line, programs, child, settle):
                    return False
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return True
    return False


def _take(line: bytes, programs: list[Program], child: _Child, settle: Callable[[int, Observation], None]) -> bool:
    """One protocol line: the ready signal or the next case's observation. False on a malformed line."""
    try:
        message = json.loads(line)
        if message.get("ready") is True:
            child.ready, child.facts = True, message.get("facts")
            return True
        if "refused" in message:
            child.refused = str(message["refused"])
            return False
        result = observation_from_json(message["observation"])
        if child.reported >= len(programs) or result.case_id != programs[child.reported].case_id:
            raise ValueError(f"observation of case {result.case_id} out of order")
    except (ValueError, KeyError, TypeError) as e:
        child.failure = f"protocol error: unreadable line from the child ({e}): {line[:120]!r}"
        return False
    settle(child.reported, result)
    child.reported += 1
    return True


def _kill(proc: subprocess.Popen) -> None:
    """Kill a child's whole process group, if it is still running."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- the child --------------------------------------------------------------------------------


def _exit_with_parent() -> None:
    """Block on stdin, which only the parent holds open; end this process when it closes. (On the
    file descriptor: a daemon thread blocked in `sys.stdin` would hold its lock at shutdown.)"""
    while os.read(0, 1 << 12):
        pass
    os._exit(3)


def _child(request_path: str) -> int:
    """The child's side: set the backend up, say so (with what `describe` asks, when the batch is
    empty), then report each program's observation in turn."""
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the backend prints goes to stderr, not into the results
    threading.Thread(target=_exit_with_parent, daemon=True).start()

    def send(message: dict) -> None:
        results.write(json.dumps(message) + "\n")
        results.flush()

    programs = [from_json(p) for p in request["programs"]]
    try:
        backend = backend_from_spec(request["backend"], request["profile"])
    except SpecError as e:
        send({"refused": str(e)})
        return 0
    if not programs:
        reason = backend.unavailable_reason()
        send({"ready": True, "facts": {"name": backend.name, "observes": observes(backend), "unavailable": reason,
                                       "broken": getattr(backend, "broken", None)}})
        return 0
    send({"ready": True})
    observe_one_at_a_time(backend, programs, lambda o: send({"observation": observation_to_json(o)}))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
