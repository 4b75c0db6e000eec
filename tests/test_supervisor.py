"""The supervisor: a hang, a crash or printed garbage in a backend costs only the case that
causes it, and nothing is left running when the run itself is killed."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.harness.backends.registry import backend_from_spec
from tcgen05_conformance.harness.supervisor import run_supervised
from tests.fault_backends import planted_programs

OBSERVED, ERROR = "observed", "error"


def outcome(o) -> str:
    """Whether the child observed the case's state or charged it an error."""
    return ERROR if o.error is not None else OBSERVED if o.state is not None else "other"

PLANTED = "tests.fault_backends:Planted"
SLACK_S = 1.5  # child start-up and scheduling on a loaded two-core machine


def test_a_hanging_case_is_a_timeout_within_the_watchdog_limit():
    [p] = planted_programs("hang")
    started = time.perf_counter()
    [r] = run_supervised(PLANTED, None, [p], timeout_s=1.0, batch_size=1)
    elapsed = time.perf_counter() - started
    assert r.error == f"timeout: batch of 1 case exceeded 1 s (watchdog); unfinished case ids {p.case_id}"
    assert 1.0 <= elapsed < 1.0 + SLACK_S


def test_a_hang_in_a_batch_keeps_the_results_before_it_and_charges_only_the_hanging_case():
    programs = planted_programs("ok", "ok", "hang", "ok", "ok")
    arrived = []
    started = time.perf_counter()
    results = run_supervised(PLANTED, None, programs, timeout_s=1.0, batch_size=5, on_result=arrived.append)
    elapsed = time.perf_counter() - started
    assert [outcome(r) for r in results] == [OBSERVED, OBSERVED, ERROR, OBSERVED, OBSERVED]
    assert [r.case_id for r in arrived[:2]] == [p.case_id for p in programs[:2]]  # streamed before the kill
    hang = results[2]
    assert hang.error.startswith("timeout: batch of 1 case exceeded 1 s (watchdog)")
    assert hang.data["batch_failure"].startswith("timeout: batch of 5 cases exceeded 1 s (watchdog); unfinished case ids "
                                                 f"{programs[2].case_id}, {programs[3].case_id}, {programs[4].case_id}")
    assert elapsed < 2 * 1.0 + SLACK_S  # killed once in its batch, once alone


def test_crashes_are_charged_to_their_case_naming_the_signal_or_exit_status_and_last_stderr_line():
    programs = planted_programs("ok", "segv", "ok", "exit", "ok", "raise", "ok")
    results = run_supervised(PLANTED, None, programs, timeout_s=30, batch_size=len(programs))
    by_label = {p.label: r for p, r in zip(programs, results)}
    assert [outcome(r) for p, r in zip(programs, results) if p.label == "ok"] == [OBSERVED] * 4
    assert by_label["segv"].error.startswith("crash: child was killed by SIGSEGV; batch of 1 case;")
    assert by_label["exit"].error.startswith("crash: child exited with status 7; batch of 1 case;")
    assert by_label["raise"].error == f"backend {PLANTED} raised RuntimeError: planted failure"  # the guard's, no crash
    for label in ("segv", "exit"):
        assert "\n" not in by_label[label].error


def test_garbage_printed_by_a_backend_does_not_disturb_the_observations():
    programs = planted_programs("garbage", "ok")
    results = run_supervised(PLANTED, None, programs, timeout_s=30, batch_size=2)
    assert [outcome(r) for r in results] == [OBSERVED, OBSERVED] and all(r.data == {} for r in results)
    assert [r.state.tmem.shape for r in results] == [(1, 128, p.tmem_columns) for p in programs]  # the state came across whole


def test_a_case_that_passes_alone_after_its_batch_died_keeps_its_result_with_the_failure_noted(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANTED_DIR", str(tmp_path))
    results = run_supervised(PLANTED, None, planted_programs("ok", "crash-once", "ok"), timeout_s=30, batch_size=3)
    assert [outcome(r) for r in results] == [OBSERVED] * 3
    assert results[1].data["batch_failure"].startswith("crash: child exited with status 9; batch of 3 cases;")


def test_a_backend_that_dies_while_being_set_up_charges_each_case_of_its_batch_once():
    programs = planted_programs("ok", "ok", "ok")
    results = run_supervised("tests.fault_backends:SetupCrash", None, programs, timeout_s=30, batch_size=2)
    assert [outcome(r) for r in results] == [ERROR] * 3
    assert results[0].error == results[1].error
    assert results[0].error.startswith("crash: child exited with status 5 before its backend was set up; batch of 2 cases;")


def test_an_unloadable_factory_path_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^backend 'tests.fault_backends:Nope': cannot load Nope from tests.fault_backends"):
        backend_from_spec("tests.fault_backends:Nope")


def test_the_child_ends_when_its_parent_is_killed(tmp_path):
    log = tmp_path / "log"
    driver = ("from tcgen05_conformance.harness.supervisor import run_supervised\nfrom tests.fault_backends import planted_programs\n"
              f"run_supervised({PLANTED!r}, None, planted_programs('hang'), timeout_s=600, batch_size=1)\n")
    env = dict(os.environ, PLANTED_LOG=str(log), PYTHONPATH=os.getcwd())
    parent = subprocess.Popen([sys.executable, "-c", driver], env=env)
    try:
        child = int(_wait_for(lambda: log.exists() and log.read_text().split()[:1], 20)[0])
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert _wait_for(lambda: not _running(child), 5)


@pytest.mark.parametrize("argv", [["--timeout", "0"], ["--timeout", "nan"], ["--batch-size", "4"], ["--timeout", "5", "--batch-size", "0"],
                                  ["--backend", "no such backend"]])
def test_bad_supervision_arguments_exit_2(argv, capsys):
    try:
        status = main(["run", *argv])
    except SystemExit as e:
        status = e.code
    assert status == 2


def _wait_for(condition, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie awaiting its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
