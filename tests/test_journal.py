"""The journal: durable, tolerant of a kill mid-line, refused for another run; and a run that is
killed resumes without losing or repeating cases."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.harness.journal import Journal, JournalError
from tcgen05_conformance.harness.judge import FAIL, PASS, CaseResult
from tcgen05_conformance.harness.runner import execute
from tests.fault_backends import planted_programs

PARAMS = {"seed": 0, "examples": 3, "backends": ["oracle"], "reference": "oracle", "profile": "exact"}
PLANTED = "tests.fault_backends:Planted"
HEADER = b'{"journal":"tcgen05-conformance/journal/2","run":' + json.dumps(PARAMS).encode() + b',"key":"00"}\n'
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"


def test_recorded_results_are_there_when_the_journal_is_opened_again(tmp_path):
    path = str(tmp_path / "j")
    with Journal.open(path, PARAMS) as j:
        j.record("oracle", CaseResult("a", PASS, data={"digest": "d"}))
        j.record("ptxas", CaseResult("a", FAIL, "ptxas rejected it"))
    with Journal.open(path, dict(PARAMS, backends=("oracle",))) as j:  # a tuple is read back as a list
        assert j.done("oracle") == {"a": CaseResult("a", PASS, data={"digest": "d"})}
        assert j.done("ptxas") == {"a": CaseResult("a", FAIL, "ptxas rejected it")}
        assert j.count() == 2 and j.done("sim") == {}


def test_a_result_already_journaled_is_not_written_again(tmp_path):
    path = tmp_path / "j"
    with Journal.open(str(path), PARAMS) as j:
        j.record("oracle", CaseResult("a", PASS))
        j.record("oracle", CaseResult("a", PASS))
    assert len(path.read_text().splitlines()) == 2  # the header and one record


def test_a_line_cut_short_by_a_kill_is_dropped_and_the_journal_goes_on(tmp_path):
    path = tmp_path / "j"
    with Journal.open(str(path), PARAMS) as j:
        j.record("oracle", CaseResult("a", PASS))
    with open(path, "ab") as f:
        f.write(b'{"backend":"oracle","case_id":"b","sta')
    with Journal.open(str(path), PARAMS) as j:
        assert list(j.done("oracle")) == ["a"]
        j.record("oracle", CaseResult("b", PASS))
    with Journal.open(str(path), PARAMS) as j:
        assert list(j.done("oracle")) == ["a", "b"]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_header_cut_short_starts_the_journal_afresh(tmp_path):
    path = tmp_path / "j"
    path.write_bytes(b'{"journal":"tcgen05-conf')
    with Journal.open(str(path), PARAMS) as j:
        assert j.count() == 0
    assert json.loads(path.read_text())["run"] == PARAMS


def test_resuming_a_journal_of_another_run_is_refused_on_one_line(tmp_path):
    path = str(tmp_path / "j")
    Journal.open(path, PARAMS).close()
    with pytest.raises(JournalError) as e:
        Journal.open(path, dict(PARAMS, seed=1))
    assert str(e.value) == f"journal {path} was written by a run with seed 0, this run has seed 1: refusing to resume"


@pytest.mark.parametrize("content, message", [
    (b"hello", "not a tcgen05-conformance/journal/2 file"),
    (b"hello\nworld\n", "not a tcgen05-conformance/journal/2 file"),
    (b'{"journal":"tcgen05-conformance/journal/1","run":' + json.dumps(PARAMS).encode() + b'}\n',
     "written by an older version \\(tcgen05-conformance/journal/1\\), whose records carry no check: start a new journal"),
    (HEADER + b'{"oops\n{"backend":"oracle"}\n',
     "line 2 is not JSON"),
    (HEADER + b'{"backend":"oracle"}\n',
     "line 2 is not a case record"),
    # issue 15: a record with an unknown status was counted as run, neither passed nor failed.
    (HEADER + b'{"backend":"oracle","case_id":"a","status":"passed","detail":"","data":{},"check":""}\n',
     'line 2 has status "passed", not one of pass, fail, error, skip'),
    (HEADER + b'{"backend":"oracle","case_id":"a","status":"pass","detail":7,"data":{}}\n', "line 2 is not a case record"),
    (HEADER + b"[" * 1000 + b"\n",
     "line 2 is not accepted: JSON nested more than 64 levels deep"),
])
def test_a_file_that_is_not_a_journal_is_refused_and_left_as_it_was(tmp_path, content, message):
    path = tmp_path / "j"
    path.write_bytes(content)
    with pytest.raises(JournalError, match=message):
        Journal.open(str(path), PARAMS)
    assert path.read_bytes() == content


def test_a_journal_in_use_by_another_run_is_refused(tmp_path):
    path = str(tmp_path / "j")
    with Journal.open(path, PARAMS):
        with pytest.raises(JournalError, match="in use by another run"):
            Journal.open(path, PARAMS)


def test_run_refuses_to_resume_a_journal_of_another_run(tmp_path, capsys):
    argv = ["run", "--backend", "oracle", "--count", "2", "--journal", str(tmp_path / "j"), "--out", str(tmp_path)]
    assert main(argv) == 0
    assert main(argv) == 0 and "resuming" in capsys.readouterr().err  # the same run: every case reused
    for other in (["--seed", "1"], ["--reference", "sim:" + sys.executable], ["--profile", "exact"]):
        assert main([*argv, *other]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tcgen05-conformance: error: journal ") and "refusing to resume" in err and err.count("\n") == 1


def test_run_refuses_a_journal_record_with_an_unknown_status(tmp_path, capsys):
    journal = tmp_path / "j"
    argv = ["run", "--backend", "oracle", "--count", "2", "--journal", str(journal), "--out", str(tmp_path)]
    assert main(argv) == 0
    journal.write_text(journal.read_text().replace('"status":"pass"', '"status":"passed"', 1))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f'tcgen05-conformance: error: journal {journal}: line 2 has status "passed", not one of pass, fail, error, skip\n'


@pytest.mark.parametrize("supervision", [[], ["--timeout", "60", "--batch-size", "8"], ["--jobs", "2", "--batch-size", "4"]],
                         ids=["in-process", "supervised", "two-jobs"])
def test_a_killed_run_resumes_without_losing_or_repeating_cases(tmp_path, supervision):
    examples, journal, log = 24, tmp_path / "journal", tmp_path / "executed"
    argv = [sys.executable, "-m", "tcgen05_conformance", "run", "--reference", PLANTED, "--backend", PLANTED, "--count", str(examples),
            "--journal", str(journal), "--out", str(tmp_path / "out"), *supervision]
    env = dict(os.environ, PLANTED_LOG=str(log), PLANTED_DELAY="0.04", PYTHONPATH=os.getcwd())
    run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while _records(journal) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait()
    before = _keys(journal)
    assert 8 <= len(before) < examples

    resumed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} case results already journaled" in resumed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["cases"] == examples and summary["backends"][PLANTED]["passed"] == examples
    after = _keys(journal)
    assert len(set(after)) == len(after) == examples and after[:len(before)] == before
    executed = Counter(line.split()[1] for line in log.read_text().splitlines())
    assert set(executed) == {case for _, case in after}
    assert all(executed[case] == 1 for _, case in before)  # journaled before the kill: never run again


def test_a_resumed_run_has_the_reference_observe_only_what_a_backend_still_needs(tmp_path, monkeypatch):
    """The reference's verdicts are all journaled, the planted backend's for two of five cases: on
    resume the reference observes again just the three cases whose state the backend is compared
    with, the backend observes just those, and the verdicts equal those of a run never interrupted."""
    programs = planted_programs("a", "fail", "c", "d", "skip")
    monkeypatch.setenv("PLANTED_VERDICTS", f"{programs[1].case_id}=fail {programs[4].case_id}=skip")
    whole = execute(programs, [PLANTED], reference=PLANTED_REFERENCE)
    params = dict(PARAMS, backends=[PLANTED], reference=PLANTED_REFERENCE)
    path = str(tmp_path / "j")
    with Journal.open(path, params) as j:
        for r in whole.results[PLANTED_REFERENCE]:
            j.record(PLANTED_REFERENCE, r)
        for r in whole.results[PLANTED][:2]:
            j.record(PLANTED, r)
    references, observed = tmp_path / "references", tmp_path / "observed"
    monkeypatch.setenv("PLANTED_REFERENCE_LOG", str(references))
    monkeypatch.setenv("PLANTED_LOG", str(observed))
    with Journal.open(path, params) as j:
        resumed = execute(programs, [PLANTED], reference=PLANTED_REFERENCE, journal=j)
    assert references.read_text().split() == [p.case_id for p in programs[2:]]
    assert [line.split()[1] for line in observed.read_text().splitlines()] == [p.case_id for p in programs[2:]]
    for name in (PLANTED_REFERENCE, PLANTED):
        assert [(r.status, r.detail) for r in resumed.results[name]] == [(r.status, r.detail) for r in whole.results[name]]
    assert [r.status for r in resumed.results[PLANTED]] == ["pass", "fail", "pass", "pass", "skip"]
    with Journal.open(path, params) as j:
        assert len(j.done(PLANTED)) == len(j.done(PLANTED_REFERENCE)) == 5


def _records(path) -> int:
    return max(0, path.read_bytes().count(b"\n") - 1) if path.exists() else 0


def _keys(path) -> list[tuple[str, str]]:
    """(backend, case id) of each complete record line, in order."""
    lines = path.read_bytes().split(b"\n")[1:-1]
    return [(r["backend"], r["case_id"]) for r in map(json.loads, lines)]


def test_a_record_edited_after_it_was_written_is_refused(tmp_path):
    path = str(tmp_path / "j")
    with Journal.open(path, PARAMS) as j:
        j.record("oracle", CaseResult("a", PASS, "", {}))
        j.record("oracle", CaseResult("b", PASS, "", {}))
    text = open(path).read()
    with open(path, "w") as f:
        f.write(text.replace('"case_id":"b","status":"pass"', '"case_id":"b","status":"fail"'))
    with pytest.raises(JournalError, match=r"line 3 fails its check \(a record edited, or not written by this journal's run\)"):
        Journal.open(path, PARAMS)


def test_a_record_moved_from_another_journal_of_the_same_run_is_refused(tmp_path):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    for path in (first, second):
        with Journal.open(path, PARAMS) as j:
            j.record("oracle", CaseResult("a" if path == first else "b", FAIL, "planted", {}))
    with open(second, "a") as f:
        f.write(open(first).read().splitlines()[1] + "\n")
    with pytest.raises(JournalError, match="line 3 fails its check"):
        Journal.open(second, PARAMS)


def test_run_refuses_a_journal_whose_pass_was_edited_to_fail(tmp_path, capsys):
    journal = tmp_path / "j"
    argv = ["run", "--backend", "oracle", "--count", "2", "--journal", str(journal), "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    journal.write_text(journal.read_text().replace('"status":"pass","detail":""', '"status":"fail","detail":"edited"', 1))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"tcgen05-conformance: error: journal {journal}: line 2 fails its check")


@pytest.mark.parametrize("special, kind", [("/dev/null", "a character device"), ("/dev/zero", "a character device"),
                                           ("fifo", "a FIFO"), ("folder", "a directory")])
def test_run_refuses_a_journal_that_is_no_regular_file_on_one_line(tmp_path, capsys, special, kind):
    path = special
    if special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    elif special == "folder":
        path = str(tmp_path)
    argv = ["run", "--backend", "oracle", "--count", "1", "--journal", path, "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "deprecated" not in line]
    assert len(err) == 1 and err[0].startswith(f"tcgen05-conformance: error: journal {path}: ") and kind in err[0], err


def test_on_a_full_disk_the_reports_are_written_and_the_journals_error_named(tmp_path, monkeypatch, capsys):
    written = []

    def full_after_the_header(self, line: bytes) -> None:
        if written:
            raise OSError(28, "No space left on device")
        written.append(line)
        self._file.write(line + b"\n")

    monkeypatch.setattr(Journal, "_write", full_after_the_header)
    journal = tmp_path / "j"
    argv = ["run", "--backend", "oracle", "--count", "3", "--journal", str(journal), "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["backends"]["oracle"]["passed"] == summary["cases"] > 0
    err = capsys.readouterr().err
    assert (f"tcgen05-conformance: warning: journal {journal}: cannot write (No space left on device) after 0 records: "
            "the rest of the run was not journaled (a resume runs it again)\n") in err
