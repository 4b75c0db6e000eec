"""A device under test never decides the exit status (issue 32, item 1): a plugin backend
(`MODULE:FACTORY`) runs in watched children by default, so that its exits (sys.exit, os._exit),
crashes and garbage answers are charged to its cases, as a backend or as the reference; with
`--in-process` the same misbehaviour (but for ending the process) is still charged to its cases.
The run then exits 1 with its reports written. Expected messages are the guard's wording
(tests/misbehaving_backends.py lists them beside what each backend does)."""

import json
import os

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.harness.judge import ERROR, PASS
from tcgen05_conformance.harness.runner import execute
from tests.fault_backends import planted_programs
from tests.misbehaving_backends import MISBEHAVIOURS

MISBEHAVING = "tests.misbehaving_backends:Misbehaving"
PLANTED = "tests.fault_backends:Planted"
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"


def _statuses(outcome, spec):
    return [(r.status, r.detail) for r in outcome.results[spec]]


@pytest.mark.parametrize("how", sorted(MISBEHAVIOURS))
def test_a_misbehaving_plugin_costs_its_cases_an_error_each_in_its_children(how, monkeypatch):
    monkeypatch.setenv("MISBEHAVE", how)
    programs = planted_programs("a", "b")
    outcome = execute(programs, [MISBEHAVING], reference=PLANTED_REFERENCE)
    assert [s for s, _ in _statuses(outcome, MISBEHAVING)] == [ERROR, ERROR]
    expected = MISBEHAVIOURS["ids" if how == "order" else how]  # a child asks one case at a time: no order to get wrong
    assert all(expected in detail and "\n" not in detail for _, detail in _statuses(outcome, MISBEHAVING))
    assert [s for s, _ in _statuses(outcome, PLANTED_REFERENCE)] == [PASS, PASS]


@pytest.mark.parametrize("how", sorted(set(MISBEHAVIOURS) - {"os_exit"}))
def test_in_process_the_same_misbehaviour_costs_the_same_cases(how, monkeypatch):
    monkeypatch.setenv("MISBEHAVE", how)
    outcome = execute(planted_programs("a", "b"), [MISBEHAVING], reference=PLANTED_REFERENCE, in_process=True)
    assert [s for s, _ in _statuses(outcome, MISBEHAVING)] == [ERROR, ERROR]
    assert all(MISBEHAVIOURS[how] in detail for _, detail in _statuses(outcome, MISBEHAVING))


def test_a_well_behaved_plugin_passes_in_its_children_and_in_process(monkeypatch):
    monkeypatch.delenv("MISBEHAVE", raising=False)
    for in_process in (False, True):
        outcome = execute(planted_programs("a", "b"), [MISBEHAVING], reference=PLANTED_REFERENCE, in_process=in_process)
        assert [s for s, _ in _statuses(outcome, MISBEHAVING)] == [PASS, PASS]


def test_by_default_a_plugin_observes_in_a_child_process(tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("PLANTED_LOG", str(log))
    execute(planted_programs("a"), [PLANTED], reference=PLANTED_REFERENCE)
    assert os.getpid() not in {int(line.split()[0]) for line in log.read_text().splitlines()}
    log.unlink()
    execute(planted_programs("a"), [PLANTED], reference=PLANTED_REFERENCE, in_process=True)
    assert {int(line.split()[0]) for line in log.read_text().splitlines()} == {os.getpid()}


@pytest.mark.parametrize("spec, detail", [
    ("tests.misbehaving_backends:make_class", "its factory returned the class Misbehaving, not a backend made from it"),
    ("tests.misbehaving_backends:exiting_factory", "its factory raised SystemExit(0)"),
    ("builtins:dict", "its factory made a dict, which lacks unavailable_reason, observe"),
    ("os:getcwd", "its factory raised TypeError"),
])
@pytest.mark.parametrize("role", ["--backend", "--reference"])
@pytest.mark.parametrize("in_process", [[], ["--in-process"]])
def test_a_factory_that_makes_no_backend_costs_its_cases_and_the_reports_are_written(spec, detail, role, in_process,
                                                                                       tmp_path, capsys):
    others = ["--backend", PLANTED] if role == "--reference" else ["--reference", PLANTED_REFERENCE]
    status = main(["run", role, spec, *others, "--examples", "2", "--report-dir", str(tmp_path / "out"), *in_process])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert status == 1 and summary["backends"][spec]["errors"] == 2
    assert all(detail in f["detail"] for f in summary["failures"])  # the reference's, and the backend's unrun cases


@pytest.mark.parametrize("how", ["sys_exit", "os_exit", "data", "base_exception"])
def test_a_run_whose_plugin_exits_or_answers_garbage_exits_1_with_its_reports_and_journal(how, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MISBEHAVE", how)
    journal = tmp_path / "journal"
    status = main(["run", "--backend", MISBEHAVING, "--reference", PLANTED_REFERENCE, "--examples", "3",
                   "--report-dir", str(tmp_path / "out"), "--journal", str(journal)])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert status == 1 and summary["backends"][MISBEHAVING]["errors"] == 3
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert sorted(r["status"] for r in records if r["backend"] == MISBEHAVING) == [ERROR] * 3


@pytest.mark.parametrize("spec, message", [
    ("os:sep", "backend 'os:sep': str object is not a factory (not callable)"),
    ("tests.misbehaving_backends:Nope", "backend 'tests.misbehaving_backends:Nope': cannot load Nope from tests.misbehaving_backends"),
])
def test_a_factory_that_cannot_be_loaded_is_still_bad_usage(spec, message, tmp_path, capsys):
    assert main(["run", "--backend", spec, "--examples", "1", "--report-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"tcgen05-conformance: error: {message}")


def test_a_plugin_whose_unavailable_reason_is_empty_runs_its_cases(monkeypatch):
    """Found by fuzz --harness: an empty reason was taken as a reason by some rows and not by
    others, and the run ended in a KeyError (exit 3)."""
    monkeypatch.setenv("TCGEN05_FUZZ_PLUGIN", '{"reason": "empty"}')
    agent = "tcgen05_conformance.fuzz.plugin_agent:make"
    for in_process in (True, False):
        outcome = execute(planted_programs("a"), [agent], reference="oracle", in_process=in_process)
        assert [s for s, _ in _statuses(outcome, agent)] == [PASS]
