"""The `sim:CMD` backend: the example adapter (the oracle behind the protocol) passes against the
oracle, its mutant is caught with a decoded first mismatch computed by the runner, one simulator
is judged against another (either may be the reference), and simulators that crash, hang, print
garbage, exit early or write a short state cost only their own case, each with one line naming it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.program import dumps
from tcgen05_conformance.harness.backends.registry import backend_from_spec
from tcgen05_conformance.harness.backends.sim import SimBackend
from tcgen05_conformance.harness.journal import Journal
from tcgen05_conformance.harness.runner import execute, generate_programs
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run

ADAPTER = str(Path(__file__).resolve().parents[1] / "examples" / "sim_adapter" / "oracle_sim.py")
FAULT_SIMULATOR = str(Path(__file__).resolve().parent / "fault_simulator.py")
MUTANT = "swizzle-xor-one-bit-high"


def _adapter(*flags: str) -> str:
    return shlex.join([sys.executable, ADAPTER, *flags])


@pytest.fixture(scope="module")
def programs():
    """Six generated tcgen05 programs and a 4-bit mma.sp one (the oracle does not model it)."""
    mma_sp = next(p for p in draw_examples(hopper_programs(), 200, 2) if p.ops[0].OP == "mma.sp" and p.ops[0].atype in ("s4", "u4"))
    return [*generate_programs(6, 0), mma_sp]


def test_oracle_adapter_passes(programs, tmp_path, monkeypatch):
    log = tmp_path / "requests"
    spec = "sim:" + shlex.join([sys.executable, "-c", _LOGGING_ADAPTER.format(log=str(log), adapter=ADAPTER)])
    outcome = execute(programs, [spec], "exact")
    results = outcome.results[spec]
    assert [r.case_id for r in results] == [p.case_id for p in programs]
    assert [r.status for r in results] == ["pass"] * 6 + ["skip"]
    assert results[-1].detail.startswith("no reference state from oracle: not modelled")
    assert all(r.data["digest"] == run(p, "exact").digest() for p, r in zip(programs, results[:6]))
    assert log.read_text().split() == [p.case_id for p in programs[:6]]  # a case the reference skips is never sent


# The example adapter, logging each case id it is asked for.
_LOGGING_ADAPTER = """import json, runpy, sys
sys.argv = [{adapter!r}]
adapter = runpy.run_path({adapter!r})
for line in sys.stdin:
    request = json.loads(line)
    with open({log!r}, "a") as log:
        log.write(request["case_id"] + "\\n")
    print(json.dumps(adapter["answer"](request)), flush=True)
"""


def test_the_adapter_observes_the_oracles_state_and_says_unsupported(programs):
    observations = SimBackend(_adapter(), "exact", case_timeout_s=30).observe(programs)
    assert [o.case_id for o in observations] == [p.case_id for p in programs]
    assert all(o.state.digest() == run(p, "exact").digest() for p, o in zip(programs[:6], observations))
    assert observations[-1].skip.startswith("simulator: unsupported: mma.sp with s4")


def test_mutant_is_caught_with_a_decoded_first_mismatch(programs):
    spec = "sim:" + _adapter("--mutant", MUTANT)
    results = execute(programs[:6], [spec], "exact").results[spec]
    failed = [(p, r) for p, r in zip(programs, results) if r.status == "fail"]
    assert failed and all(r.status in ("pass", "fail") for r in results)
    for p, r in failed:
        first = r.data["diff"]["first"][0]
        expected = run(p, "exact")
        assert first["place"] == "tmem"
        assert first["expected_bits"] == int(expected.tmem[first["cta"], first["row"], first["column"]])
        assert first["actual_bits"] != first["expected_bits"]
        assert f"lane {first['row']} column {first['column']}" in r.detail and "expected" in r.detail


def test_run_with_a_mutant_simulator_exits_1_naming_the_mismatch(tmp_path, capsys):
    spec = "sim:" + _adapter("--mutant", MUTANT)
    assert main(["run", "--backend", spec, "--count", "4", "--out", str(tmp_path)]) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["backends"][spec]["failed"] >= 1
    failure = summary["failures"][0]
    first = failure["diff"]["first"][0]
    assert f"lane {first['row']} column {first['column']} ({first['element']}): expected {first['expected']}" in failure["detail"]
    assert shlex.split(failure["replay"])[-1] == spec  # the replay command quotes the simulator command
    assert (tmp_path / "cases" / f"{failure['case_id']}.json").exists()


def test_faulty_simulators_cost_only_their_own_case(programs):
    ids = [p.case_id for p in programs[:6]]
    faults = ["--crash-on", ids[0], "--hang-on", ids[1], "--garbage-on", ids[2], "--exit-on", ids[3], "--truncate-on", ids[4]]
    observed = SimBackend(shlex.join([sys.executable, FAULT_SIMULATOR, *faults]), "exact", case_timeout_s=2).observe(programs[:6])
    assert [o.error is not None for o in observed] == [True] * 5 + [False]
    assert observed[5].state.tmem.shape == (programs[5].ctas, 128, programs[5].tmem_columns) and not observed[5].state.tmem.any()
    details = [o.error for o in observed[:5]]
    assert all(d.startswith(f"case {i}: ") and "\n" not in d for d, i in zip(details, ids))
    assert "crash: the simulator was killed by SIGSEGV without answering" in details[0] and "twice" in details[0]
    assert "timeout: no answer within 2 s" in details[1]
    assert "protocol error: the answer is not a JSON object: b'Simulator v0.1" in details[2]
    assert "the simulator exited with status 0 without answering" in details[3]
    assert "simulator state: tmem.bin: holds 100 bytes, expected" in details[4]


def test_a_simulator_that_cannot_start_errors_every_case_without_hanging(programs):
    observed = SimBackend(shlex.join([sys.executable, "-c", "import sys; print('no', file=sys.stderr); sys.exit(3)"]),
                          case_timeout_s=10).observe(programs[:2])
    assert all("exited with status 3 without answering; last stderr line: no" in o.error for o in observed)


def test_a_simulator_whose_program_cannot_be_executed_errors_each_case(programs, tmp_path):
    script = tmp_path / "sim"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    observed = SimBackend(str(script), case_timeout_s=10).observe(programs[:2])
    assert all(o.error.startswith(f"case {p.case_id}: cannot start the simulator") for p, o in zip(programs, observed))


def test_an_endless_answer_line_is_a_protocol_error(programs):
    script = "import sys\nsys.stdin.readline()\nwhile True: sys.stdout.write('x' * 65536)"
    (o,) = SimBackend(shlex.join([sys.executable, "-c", script]), case_timeout_s=10).observe(programs[:1])
    assert "protocol error: the answer is not a JSON object: b'xxx" in o.error


def test_an_answer_for_another_case_is_a_protocol_error(programs):
    script = "import sys\nfor line in sys.stdin: print('{\"case_id\": \"other\", \"status\": \"ok\"}', flush=True)"
    (o,) = SimBackend(shlex.join([sys.executable, "-c", script]), case_timeout_s=10).observe(programs[:1])
    assert 'protocol error: the answer names case "other"' in o.error


def test_the_request_names_the_judging_profile_and_the_files_to_write_without_an_expected_state(programs, tmp_path):
    """What the simulator reads: case.json with the profile the harness chose and the state files
    with their shapes, from the program alone (no expected state to copy)."""
    copy = tmp_path / "case.json"
    script = f"import json, shutil, sys\nfor line in sys.stdin:\n    shutil.copy(json.loads(line)['case'], {str(copy)!r})\n    sys.exit(0)"
    SimBackend(shlex.join([sys.executable, "-c", script]), "sm_100a", case_timeout_s=10).observe(programs[:1])
    case = json.loads(copy.read_text())
    p = programs[0]
    assert case["profile"] == "sm_100a" and "expected" not in case and "expected_digest" not in case
    assert case["state"] == {"tmem": {"file": "tmem.bin", "shape": [p.ctas, 128, p.tmem_columns]}, "loads": [], "hopper_d": None}


# --- one simulator against another ----------------------------------------------------------------


def _fault_simulator(*flags: str) -> str:
    return "sim:" + shlex.join([sys.executable, FAULT_SIMULATOR, *flags])


def test_a_simulator_judged_against_another_simulator_as_the_reference(programs):
    """Two fault simulators agree (zero states) except where one crashes; the oracle never runs."""
    reference, dut = _fault_simulator(), _fault_simulator("--exit-on", programs[2].case_id)
    outcome = execute(programs[:4], [dut], None, reference=reference)
    assert list(outcome.results) == [reference, dut] and outcome.reference == reference
    assert [r.status for r in outcome.results[reference]] == ["pass"] * 4
    assert [r.status for r in outcome.results[dut]] == ["pass", "pass", "error", "pass"]
    assert outcome.summaries[dut].role == f"state compared with the reference {reference}"


def test_a_reference_that_errors_or_skips_is_carried_to_the_backends_it_judges(programs):
    """The reference crashes on case 1 and is unsupported (the adapter: 4-bit mma.sp) nowhere here;
    the device under test is not asked about case 1 and is charged the reference's error."""
    reference, dut = _fault_simulator("--exit-on", programs[1].case_id), _fault_simulator()
    outcome = execute(programs[:3], [dut], None, reference=reference)
    ref, got = outcome.results[reference], outcome.results[dut]
    assert [r.status for r in ref] == ["pass", "error", "pass"] and [r.status for r in got] == ["pass", "error", "pass"]
    assert got[1].detail.startswith(f"no reference state from {reference}: case {programs[1].case_id}: crash: the simulator exited")
    skipped = execute(programs[6:], [_fault_simulator()], None, reference="sim:" + _adapter())
    [r] = skipped.results[_fault_simulator()]
    assert r.status == "skip" and r.detail.startswith("no reference state from sim:") and "unsupported: mma.sp with s4" in r.detail


def test_run_of_two_simulators_against_the_oracle_and_a_simulator_against_a_mutant(tmp_path):
    """`run --reference oracle --backend sim:A --backend sim:B`, and a mutant judged against the
    adapter as the reference: the mutant's failures are the same ones it has against the oracle."""
    good, bad = "sim:" + _adapter(), "sim:" + _adapter("--mutant", MUTANT)
    assert main(["run", "--reference", "oracle", "--backend", good, "--backend", bad, "--count", "6",
                 "--out", str(tmp_path / "oracle")]) == 1
    by_oracle = json.loads((tmp_path / "oracle" / "summary.json").read_text())
    assert list(by_oracle["backends"]) == ["oracle", good, bad] and by_oracle["reference"] == "oracle"
    assert by_oracle["backends"][good]["passed"] == 6 and by_oracle["backends"][bad]["failed"] >= 1
    assert main(["run", "--reference", good, "--backend", bad, "--count", "6", "--out", str(tmp_path / "sim")]) == 1
    by_sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert list(by_sim["backends"]) == [good, bad] and by_sim["backends"][good]["role"].startswith("reference")
    assert [(f["case_id"], f["detail"]) for f in by_sim["failures"]] == [(f["case_id"], f["detail"]) for f in by_oracle["failures"]]
    assert all(f"--reference {shlex.quote(good)}" in f["replay"] for f in by_sim["failures"])


def test_sim_spec_wins_over_module_factory():
    backend = backend_from_spec("sim:x", "exact")  # `sim:x` is also a well-formed MODULE:FACTORY
    assert isinstance(backend, SimBackend) and backend.command == "x" and backend.profile == "exact"
    assert "not found" in backend.unavailable_reason()


@pytest.mark.parametrize("spec, message", [
    ("sim:", "the simulator command is empty"),
    ("sim:/nonexistent/simulator --fast", "simulator program '/nonexistent/simulator' not found"),
    ("sim:'unbalanced", "does not parse"),
])
def test_a_bad_simulator_command_is_one_line_exit_2(spec, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--backend", spec, "--count", "1"])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_timeout_setting_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TCGEN05_SIM_TIMEOUT", "soon")
    assert main(["run", "--backend", "sim:" + _adapter(), "--count", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TCGEN05_SIM_TIMEOUT='soon' is not a positive number" in err


def test_replay_on_a_simulator(programs, tmp_path, capsys):
    case = tmp_path / "case.json"
    case.write_text(dumps(programs[0]))
    assert main(["replay", str(case), "--backend", "sim:" + _adapter()]) == 0
    assert f"{programs[0].case_id} [sim:" in capsys.readouterr().out
    assert main(["replay", str(case), "--backend", "sim:" + _adapter("--mutant", MUTANT)]) == 1
    assert "words differ; first: tmem lane" in capsys.readouterr().out
    assert main(["replay", str(case), "--reference", "sim:" + _adapter("--mutant", MUTANT), "--backend", "oracle"]) == 1
    out = capsys.readouterr().out
    assert f"reference sim:{_adapter('--mutant', MUTANT)}, profile exact" in out and "[oracle] fail: " in out


# --- what a simulator cannot do to the run (issue 15) ------------------------------------------


def _fault_command(*flags: str) -> str:
    return shlex.join([sys.executable, FAULT_SIMULATOR, *flags])


def test_a_deeply_nested_answer_is_a_protocol_error_of_its_case_alone(programs):
    ids = [p.case_id for p in programs[:2]]
    observed = SimBackend(_fault_command("--nest-on", ids[0]), "exact", case_timeout_s=10).observe(programs[:2])
    assert observed[0].error.startswith(f"case {ids[0]}: protocol error: the answer is not a JSON object")
    assert "nested more than" in observed[0].error and "\n" not in observed[0].error
    assert observed[1].state is not None


@pytest.mark.parametrize("fault", ["twice", "late-twice"])
def test_a_simulator_answering_twice_does_not_get_the_next_case_blamed(programs, fault):
    """The second answer comes before the next request (noticed then) or after it (read as the
    next case's answer): either way the simulator is restarted and the next case passes on it."""
    ids = [p.case_id for p in programs[:3]]
    observed = SimBackend(_fault_command(f"--{fault}-on", ids[0]), "exact", case_timeout_s=10).observe(programs[:3])
    assert [o.error for o in observed] == [None] * 3
    assert all(o.state is not None for o in observed)


def test_the_simulator_is_kept_running_across_cases_observed_one_at_a_time(programs, tmp_path):
    """--journal observes one case at a time (observe([p]) per case): one simulator serves them all."""
    pids = tmp_path / "pids"
    spec = "sim:" + _fault_command("--pid-log", str(pids))
    with Journal.open(str(tmp_path / "journal"), {"run": 1}) as journal:
        outcome = execute(programs[:4], [spec], "exact", journal=journal)
    assert [r.status for r in outcome.results[spec]] == ["fail"] * 4  # zero states, against the oracle's
    assert len(pids.read_text().split()) == 4 and len(set(pids.read_text().split())) == 1


@pytest.mark.parametrize("options", [{"timeout_s": 60.0, "batch_size": 2}, {"jobs": 2, "batch_size": 2}])
def test_under_the_supervisor_the_simulator_is_started_once_per_batch(programs, tmp_path, options):
    pids = tmp_path / "pids"
    spec = "sim:" + _fault_command("--pid-log", str(pids))
    execute(programs[:4], [spec], "exact", **options)
    assert len(pids.read_text().split()) == 4 and len(set(pids.read_text().split())) == 2


@pytest.mark.parametrize("make", ["sparse-3GiB", "dev-zero", "fifo"])
def test_a_state_file_is_refused_by_its_size_or_kind_before_it_is_read(tmp_path, make):
    from tcgen05_conformance.harness.export import VectorsError, read_state, state_layout

    p = generate_programs(1, 0)[0]
    layout = state_layout(p)
    path = tmp_path / layout["tmem"]["file"]
    if make == "sparse-3GiB":
        with open(path, "wb") as f:
            f.truncate(3 << 30)
    elif make == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)  # reading a FIFO nobody writes would block for ever
    started = time.perf_counter()
    with pytest.raises(VectorsError, match="tmem.bin: (holds|larger than|not a regular file)"):
        read_state(str(tmp_path), layout)
    assert time.perf_counter() - started < 5


def test_the_replay_hint_of_a_relative_simulator_command_works_as_printed(tmp_path, monkeypatch):
    """`sim:./mysim` from the run's directory: the hint names that directory and the case file
    relative to it, so run there as printed it finds the simulator and judges the case again."""
    case_id = generate_programs(1, 0)[0].case_id
    script = tmp_path / "mysim"
    script.write_text(f"#!/bin/sh\nexec {shlex.join([sys.executable, FAULT_SIMULATOR, '--truncate-on', case_id])}\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "sim:./mysim", "--count", "1", "--out", "out"]) == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    [failure] = summary["failures"]
    assert summary["replay_dir"] == str(tmp_path)
    words = shlex.split(failure["replay"])
    assert words[:3] == ["tcgen05-conformance", "replay", f"out/cases/{case_id}.json"]
    done = subprocess.run([sys.executable, "-m", "tcgen05_conformance", *words[1:]], cwd=summary["replay_dir"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 1 and "simulator state: tmem.bin: holds 100 bytes" in done.stdout, done.stdout + done.stderr
