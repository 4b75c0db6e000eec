"""The simulator protocol under Hypothesis (issue 15): a faulty simulator (answer lines, state
files, exits, signals, delays, second answers, noise) costs its own case one line, never a
traceback or a hang, never the next case. The 10,000-behaviour measurement is
`tcgen05-conformance fuzz --simulator` (reports/fuzz-simulator-protocol/); here 150."""

from __future__ import annotations

import base64
import io
import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.fuzz import simulator as fuzz_simulator
from tcgen05_conformance.fuzz.inputs import ACCEPTED, HANG, REFUSED, TRACEBACK, Broken

GOOD = {"answer": base64.b64encode(fuzz_simulator.OK).decode(), "files": "right", "before": None, "after": None,
        "delay": 0.0, "blank": 0, "newline": True, "stderr": ""}


def test_150_faulty_simulators_end_in_a_state_or_one_line_never_a_traceback_or_hang():
    report = fuzz_simulator.measure(150, 3, 30.0, io.StringIO())["simulator"]
    assert report["inputs"] == 150 and report[TRACEBACK] == 0 and report[HANG] == 0, report["failures"]
    assert report[ACCEPTED] and report[REFUSED]


@pytest.fixture
def backend(tmp_path):
    import shlex

    from tcgen05_conformance.harness.backends.sim import SimBackend

    sim = SimBackend(shlex.join(["sh", str(fuzz_simulator.AGENT), str(tmp_path)]), "exact", case_timeout_s=5)
    yield sim
    sim.close()


@pytest.mark.parametrize("fault", [{"after": "second-answer"}, {"after": "late-second-answer"}, {"after": "garbage-line"},
                                   {"after": "segv"}, {"answer": base64.b64encode(b"[" * 5000 + b"]" * 5000).decode()}])
def test_a_well_behaved_case_after_a_faulty_one_gets_its_state(backend, tmp_path, fault):
    programs = fuzz_simulator.fuzz_programs()
    fuzz_simulator.case_outcome(backend, tmp_path, programs[0], {**GOOD, **fault})
    assert fuzz_simulator.case_outcome(backend, tmp_path, programs[1], GOOD)[0] == ACCEPTED


@pytest.mark.parametrize("files", sorted(fuzz_simulator.DAMAGED))
def test_a_damaged_state_file_is_an_error_of_its_case(backend, tmp_path, files):
    outcome, reason = fuzz_simulator.case_outcome(backend, tmp_path, fuzz_simulator.fuzz_programs()[0], {**GOOD, "files": files})
    assert outcome == REFUSED and reason.startswith("error: simulator state: tmem.bin")


def test_the_checks_would_catch_a_backend_that_blamed_a_well_behaved_case(backend, tmp_path, monkeypatch):
    from tcgen05_conformance.harness.backends.base import Observation

    monkeypatch.setattr(type(backend), "observe", lambda self, ps, progress=None: [Observation(ps[0].case_id, error="case x: blamed")])
    with pytest.raises(Broken, match="a well-behaved answer gave no state"):
        fuzz_simulator.case_outcome(backend, tmp_path, fuzz_simulator.fuzz_programs()[0], GOOD)


def test_fuzz_simulator_on_the_command_line_writes_its_report(tmp_path, capsys):
    assert main(["fuzz", "--simulator", "--count", "20", "--seed", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "fuzz-simulator.json").read_text())
    assert report["simulator"]["inputs"] == 20 and report["command"].startswith("tcgen05-conformance fuzz --simulator")
    assert "# Fuzzing the simulator protocol" in (tmp_path / "fuzz-simulator.md").read_text()
