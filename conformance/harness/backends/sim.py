"""The `sim:CMD` backend: a third-party simulator driven over a line protocol (docs/simulators.md).

The simulator is the command CMD (split as a shell would, run in the current directory), started
at the first case a backend object is given and kept running across its `observe` calls (one at a
time with `--journal`, whole lists without): it is stopped when the backend is closed or
collected, or the process ends. Under `--timeout` or `--jobs` each batch runs in a child process
of its own (`tcgen05_conformance.harness.supervisor`), so the simulator is started once per batch. For
each case this backend writes the case in the
export format (`tcgen05_conformance.harness.export`: case.json with the program, the numeric profile the
harness chose and the state files to write, all computed from the program) and sends one request
line on the simulator's stdin:

    {"case_id": "<id>", "case": "<path of case.json>", "out": "<directory>"}

The simulator writes its final state into `out`, in the files case.json's `state` lists (raw
little-endian uint32), and answers with one line on stdout:

    {"case_id": "<id>", "status": "ok"}                       the state is in `out`
    {"case_id": "<id>", "status": "unsupported", "reason": "..."}   skipped, with the reason
    {"case_id": "<id>", "status": "error", "reason": "..."}         reported as an error

It ends when its stdin closes. The state read back is the case's observation; the harness
compares it (`tcgen05_conformance.harness.judge`), so a simulator may be the reference as well as a
device under test. A simulator that gives no answer within the case timeout
(TCGEN05_SIM_TIMEOUT seconds, default 60) is killed; one that answers with anything but such a
line is killed; one that exits without answering is started again and given the case once more.
Each of these costs one case an `error` naming it and what happened, and the next case gets a
fresh simulator. A simulator that says more than one line for a case (a second answer) has it
noticed before the next request, or when the line arrives as the next case's answer: it is
restarted and the next case runs on the fresh one, so the next case is not blamed for it.
Answer lines are read bounded in size (MAX_ANSWER_BYTES) and in JSON nesting
(`tcgen05_conformance.core.inputs.parse_json`), and state files by their expected size
(`tcgen05_conformance.harness.export.read_state`).
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from typing import Sequence

from tcgen05_conformance.core.inputs import InputError, parse_json, printable, quoted
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation, Progress, observe_each
from tcgen05_conformance.harness.backends.registry import SIM_PREFIX
from tcgen05_conformance.harness.export import VectorsError, read_state, state_layout, write_case
from tcgen05_conformance.harness.processes import how_it_ended, last_line

TIMEOUT_ENV = "TCGEN05_SIM_TIMEOUT"
DEFAULT_CASE_TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 1 << 20  # an answer line longer than this is garbage
STOP_GRACE_S = 2.0  # how long a simulator may take to exit once its stdin is closed
_SHOWN_BYTES = 120


def command_problem(command: str) -> str | None:
    """Why `command` cannot start a simulator (empty, unbalanced quotes, program not found), or None."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        return f"simulator command {command!r} does not parse ({e})"
    if not argv:
        return "the simulator command is empty (give sim:CMD, e.g. sim:'./mysim --fast')"
    if shutil.which(argv[0]) is None:
        return f"simulator program {argv[0]!r} not found (not on PATH, or not an executable file)"
    return None


def case_timeout_from_env() -> float:
    """The per-case timeout: TCGEN05_SIM_TIMEOUT seconds when set, else the default."""
    text = os.environ.get(TIMEOUT_ENV)
    if text is None:
        return DEFAULT_CASE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds")
    return value


class SimulatorFault(Exception):
    """The simulator did not answer a request properly (one line: what it did; it has been
    stopped); `retry`: it died without answering, so the case may run again on a fresh one."""

    def __init__(self, message: str, retry: bool = False):
        super().__init__(message)
        self.retry = retry


class Simulator:
    """One running simulator process: requests in on stdin, one answer line each on stdout,
    stderr kept in a file for the last line of a crash report."""

    def __init__(self, argv: list[str], scratch: str):
        self.argv, self.scratch = argv, scratch
        self.proc: subprocess.Popen | None = None
        self.pending = b""
        self.starts = 0
        self.answered: set[str] = set()  # case ids the running process answered
        self.note = ""  # why it was restarted before the coming request, if it was

    def _start(self) -> None:
        self.starts += 1
        self.stderr_path = os.path.join(self.scratch, f"simulator-stderr-{self.starts}.log")
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         start_new_session=True)
        self.pending, self.answered = b"", set()

    def stop(self, grace_s: float = 0.0) -> None:
        """Close its stdin, give it `grace_s` seconds to exit, then kill its process group."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        proc.stdout.close()

    def ask(self, request: dict, timeout_s: float) -> dict:
        """Send one request and return the answer (a JSON object); SimulatorFault when the
        simulator hangs, dies or answers with something else (it is then stopped). A simulator
        that said something since its last answer is restarted first (`note` says so)."""
        self.note = ""
        extra = self._unrequested()
        if extra:
            self.stop()
            self.note = f"the simulator was restarted: it wrote a line nobody asked for after its last answer: {extra[:_SHOWN_BYTES]!r}"
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            try:
                self._start()
            except OSError as e:
                raise SimulatorFault(f"cannot start the simulator {self.argv[0]!r} ({e.strerror or e})") from None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise self._died() from None
        line = self._read_line(time.monotonic() + timeout_s)
        if line is None:
            self.stop()
            raise SimulatorFault(f"timeout: no answer within {timeout_s:g} s (simulator killed)")
        try:
            answer = parse_json(line.decode("utf-8"))
        except (UnicodeDecodeError, InputError) as e:
            self.stop()
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else printable(str(e))
            raise SimulatorFault(f"protocol error: the answer is not a JSON object: {line[:_SHOWN_BYTES]!r} ({why})") from None
        if not isinstance(answer, dict):
            self.stop()
            raise SimulatorFault(f"protocol error: the answer is not a JSON object: {line[:_SHOWN_BYTES]!r}")
        named = answer.get("case_id")
        if isinstance(named, str) and named != request["case_id"] and named in self.answered:
            self.stop()
            raise SimulatorFault(f"protocol error: the simulator answered case {printable(named)} a second time "
                                 f"(simulator restarted)", retry=True)
        self.answered.add(request["case_id"])
        return answer

    def _unrequested(self) -> bytes:
        """What the running simulator wrote on stdout since its last answer (non-blank), without waiting."""
        if self.proc is None:
            return b""
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            while len(self.pending) <= MAX_ANSWER_BYTES and selector.select(0):
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                self.pending += chunk
        return self.pending.strip()

    def _read_line(self, deadline: float) -> bytes | None:
        """The next non-blank stdout line (or MAX_ANSWER_BYTES of one that does not end); None at
        the deadline; SimulatorFault at end of file."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            while True:
                line, newline, rest = self.pending.partition(b"\n")
                if newline:
                    self.pending = rest
                    if line.strip():
                        return line.strip()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return None
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise self._died()
                self.pending += chunk
                if len(self.pending) > MAX_ANSWER_BYTES:
                    return self.pending

    def _died(self) -> SimulatorFault:
        proc = self.proc
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        how = how_it_ended(proc.returncode)
        self.stop()
        return SimulatorFault(f"crash: the simulator {how} without answering; last stderr line: {last_line(self.stderr_path) or '(none)'}",
                              retry=True)


class SimBackend:
    """A simulator speaking the protocol above; its states are the observations. The simulator
    runs from the first case on, across `observe` calls, until `close` (or until this object is
    collected, or the process ends)."""

    def __init__(self, command: str, profile: str | None = None, case_timeout_s: float | None = None):
        self.command = command
        self.name = SIM_PREFIX + command
        self.profile = profile
        self.case_timeout_s = case_timeout_s or case_timeout_from_env()
        self._simulator: Simulator | None = None
        self._closer: weakref.finalize | None = None

    def unavailable_reason(self) -> str | None:
        return command_problem(self.command)

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        if self._simulator is None:
            scratch = tempfile.mkdtemp(prefix="tcgen05-sim-")
            self._simulator = Simulator(shlex.split(self.command), scratch)
            self._closer = weakref.finalize(self, _close, self._simulator)
        return observe_each(lambda p: self._observe_one(self._simulator, p), programs, progress)

    def close(self) -> None:
        """Stop the simulator (its stdin closed, STOP_GRACE_S to exit) and remove its scratch folder."""
        if self._closer is not None:
            self._closer()
        self._simulator = self._closer = None

    def _observe_one(self, simulator: Simulator, p: Program) -> Observation:
        case_dir = os.path.join(simulator.scratch, p.case_id)
        try:
            request = {"case_id": p.case_id, "case": write_case(case_dir, p, self.profile or p.profile),
                       "out": os.path.join(case_dir, "actual")}
            observation = self._ask(simulator, p, request)
        finally:
            shutil.rmtree(case_dir, ignore_errors=True)
        if simulator.note:
            observation.data["simulator_note"] = simulator.note
        return observation

    def _ask(self, simulator: Simulator, p: Program, request: dict) -> Observation:
        case = p.case_id
        for attempt in (1, 2):
            os.makedirs(request["out"], exist_ok=True)
            try:
                answer = simulator.ask(request, self.case_timeout_s)
                break
            except SimulatorFault as fault:
                if fault.retry and attempt == 1:
                    shutil.rmtree(request["out"], ignore_errors=True)
                    continue
                again = " (twice, on a fresh simulator the second time)" if fault.retry else ""
                return Observation(case, error=f"case {case}: {fault}{again}")
        if answer.get("case_id") != case:
            simulator.stop()
            return Observation(case, error=f"case {case}: protocol error: the answer names case {quoted(answer.get('case_id'))}")
        status = answer.get("status")
        if status == "unsupported":
            return Observation(case, skip=f"simulator: unsupported: {_reason(answer)}")
        if status == "error":
            return Observation(case, error=f"case {case}: simulator error: {_reason(answer)}")
        if status != "ok":
            simulator.stop()
            return Observation(case, error=f"case {case}: protocol error: status {quoted(status)} is not ok, unsupported or error")
        try:
            return Observation(case, state=read_state(request["out"], state_layout(p)))
        except VectorsError as e:
            return Observation(case, error=f"case {case}: simulator state: {e}")


MAX_REASON_CHARS = 500  # of a simulator's reason, in a report


def _reason(answer: dict) -> str:
    """The answer's reason on one line, bounded (a string as given, another value as JSON text)."""
    reason = answer.get("reason")
    if reason is None:
        return "(no reason given)"
    text = printable(reason) if isinstance(reason, str) else quoted(reason)
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS] + "..."


def _close(simulator: Simulator) -> None:
    simulator.stop(STOP_GRACE_S)
    shutil.rmtree(simulator.scratch, ignore_errors=True)
