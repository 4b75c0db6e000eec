"""`run --jobs N`: batches run in N child processes at once, and the per-case observations and
verdicts are those of one job, in program order (journal resume with jobs is in test_journal.py)."""

import json
import os
import time

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.harness.judge import PASS
from tcgen05_conformance.harness.runner import execute, generate_programs
from tcgen05_conformance.harness.supervisor import run_supervised
from tests.fault_backends import planted_programs

PLANTED = "tests.fault_backends:Planted"
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"
PERTURBED = "tests.fault_backends:Perturbed"


def test_two_jobs_give_the_oracle_results_of_one_job_in_program_order(monkeypatch):
    monkeypatch.setenv("PERTURBED_KINDS", "tf32")
    programs = generate_programs(22, 5)[14:]  # Table 39 classes 9-16 (after one of each family): six f16, two tf32
    one, two = (execute(programs, ["oracle", PERTURBED], "exact", jobs=jobs) for jobs in (1, 2))
    for name in ("oracle", PERTURBED):
        assert [r.case_id for r in two.results[name]] == [p.case_id for p in programs]
        assert [(r.status, r.detail, r.data) for r in two.results[name]] == [(r.status, r.detail, r.data) for r in one.results[name]]
    assert all(r.status == PASS and r.data["digest"] for r in one.results["oracle"])  # one per Table 39 class: states compared
    assert {r.status for r in one.results[PERTURBED]} == {"pass", "fail"}  # judged in the parent from states sent by the children


def test_jobs_run_batches_at_once(tmp_path, monkeypatch):
    """Two `rendezvous` cases pass only when both have started before either ends."""
    monkeypatch.setenv("PLANTED_DIR", str(tmp_path))
    monkeypatch.setenv("PLANTED_RENDEZVOUS", "2")
    programs = planted_programs("rendezvous", "ok", "rendezvous", "ok")
    arrived, progress = [], []
    results = run_supervised(PLANTED, None, programs, None, 1, progress.append, arrived.append, jobs=2)
    assert [(r.case_id, r.error, r.state is not None) for r in results] == [(p.case_id, None, True) for p in programs]
    assert sorted(r.case_id for r in arrived) == sorted(p.case_id for p in programs)  # each handed on once
    assert progress == [1, 2, 3, 4]


def test_faults_are_charged_to_the_same_cases_with_three_jobs_as_with_one(tmp_path, monkeypatch):
    programs = planted_programs("ok", "segv", "ok", "crash-once", "ok")
    outcomes = []
    for jobs in (1, 3):
        monkeypatch.setenv("PLANTED_DIR", str(tmp_path / str(jobs)))
        (tmp_path / str(jobs)).mkdir()
        results = run_supervised(PLANTED, None, programs, 30, len(programs), jobs=jobs)
        outcomes.append([(r.case_id, r.error) for r in results])
    assert outcomes[0] == outcomes[1]
    assert [error is not None for _, error in outcomes[1]] == [False, True, False, False, False]


def test_an_exception_in_a_callback_stops_the_run_and_kills_the_children_still_running(tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("PLANTED_LOG", str(log))
    programs = planted_programs("ok", "hang")
    hang = programs[1]

    def refuse(result):
        _wait_for(lambda: hang.case_id in log.read_text(), 30)  # the hanging case has started in its own child
        raise RuntimeError("journal disk full")

    with pytest.raises(RuntimeError, match="journal disk full"):
        run_supervised(PLANTED, None, programs, 600, 1, on_result=refuse, jobs=2)
    [hanging_child] = [int(line.split()[0]) for line in log.read_text().splitlines() if line.endswith(hang.case_id)]
    assert _wait_for(lambda: not os.path.exists(f"/proc/{hanging_child}"), 10)


def _wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def test_run_with_jobs_writes_the_summary_of_every_case(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--reference", PLANTED_REFERENCE, "--backend", PLANTED, "--count", "6", "--jobs", "2", "--batch-size", "2",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backends"][PLANTED]["passed"] == summary["backends"][PLANTED_REFERENCE]["passed"] == summary["cases"] == 6


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "0"], "tcgen05-conformance run: error: argument --jobs: 0 is out of range: from 1 to 4,096"),
    (["--jobs", "-2"], "tcgen05-conformance run: error: argument --jobs: -2 is out of range: from 1 to 4,096"),
    (["--batch-size", "4"], "tcgen05-conformance: error: --batch-size goes with --timeout or --jobs"),
    (["--jobs", "2", "--batch-size", "0"], "tcgen05-conformance run: error: argument --batch-size: 0 is out of range"),
    (["--jobs", "two"], "tcgen05-conformance run: error: argument --jobs: 'two' is not a job count"),
])
def test_bad_jobs_values_are_one_line_exit_2(argv, message, capsys):
    assert _exit_status(["run", "--count", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def _exit_status(argv: list[str]) -> int:
    """main's return value, or the status argparse exits with on bad usage."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code
