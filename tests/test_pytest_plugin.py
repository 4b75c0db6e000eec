"""The pytest plugin: inert without --tcgen05-backend; with it, one test per case id of the programs
`run` generates, named after the backend, label and case id, each case's verdict against the
reference (--tcgen05-reference, default the oracle) and detail reported as its test's, the
backends run in batches; bad options are one-line usage errors."""

import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tcgen05_conformance.core.state import initial_tmem
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness.runner import generate_programs
from tests.fault_backends import PERTURBED_BIT, PLANTED_WORD, Planted

pytest_plugins = ["pytester"]

PLANTED = "tests.fault_backends:Planted"
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def importable_test_tree(monkeypatch):
    """Planted backends load as `tests.fault_backends` in the inner session and its children, run in another directory."""
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture
def generated(monkeypatch):
    """Makes the generator the plugin calls return the given programs, recording its (examples, seed) calls."""
    calls = []

    def returning(programs):
        monkeypatch.setattr(runner, "generate_programs", lambda examples, seed: calls.append((examples, seed)) or list(programs))
        return calls

    return returning


def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    [entry] = [e for e in entry_points(group="pytest11") if e.name == "tcgen05-conformance"]
    assert entry.value == "tcgen05_conformance.harness.pytest_plugin"


def test_without_the_backend_option_the_plugin_adds_nothing(pytester, generated):
    calls = generated([])
    pytester.makepyfile("def test_own(): pass")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    assert "tcgen05-conformance" in result.stdout.str()  # installed: named among the plugins
    assert "tcgen05[" not in result.stdout.str() and calls == []


def test_without_the_backend_option_a_session_imports_nothing_heavy(pytester):
    """pytest loads the plugin in every session of the environment: until it is asked to run, it
    imports its options' facts alone, never numpy, Hypothesis, the oracle or the device code."""
    pytester.makepyfile("""
        import sys

        HEAVY = ("numpy", "hypothesis", "ml_dtypes", "tabulate", "cuda")

        def test_nothing_heavy(request):
            assert request.config.pluginmanager.hasplugin("tcgen05-conformance")
            loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY
                            or m.startswith("tcgen05_conformance.") and m.split(".")[1] not in ("core", "harness"))
            assert loaded == []
    """)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_the_oracle_backend_runs_one_test_per_program_of_run_beside_the_projects_own(pytester):
    expected = [f"tcgen05[oracle-{p.label}-{p.case_id}]" for p in generate_programs(4, 2)]
    pytester.makepyfile(test_own="def test_own(): pass")
    reprec = pytester.inline_run("--tcgen05-backend", "oracle", "--tcgen05-examples", "4", "--tcgen05-seed", "2")
    passed, skipped, failed = reprec.listoutcomes()
    assert sorted(r.nodeid for r in passed) == sorted([*expected, "test_own.py::test_own"])
    assert not skipped and not failed


def test_a_profile_file_judges_the_suite_as_its_name_would(pytester, tmp_path):
    """An inferred profile file (here sm_90a's own datapaths, naming no target) where a name goes."""
    import json

    from tcgen05_conformance.oracles.numerics.profiles import PROFILES

    path = tmp_path / "inferred.json"
    path.write_text(json.dumps(PROFILES["sm_90a"].as_dict()))
    reprec = pytester.inline_run("--tcgen05-backend", "oracle", "--tcgen05-examples", "3", "--tcgen05-profile", str(path))
    passed, skipped, failed = reprec.listoutcomes()
    assert len(passed) == 3 and not failed


def test_a_planted_backend_fails_exactly_the_planted_cases_with_their_detail(pytester, monkeypatch, generated):
    drawn = generate_programs(12, 0)
    programs = [drawn[0], *drawn[7:]]  # Table 39 classes 1-6 (the first is the tcgen05.mma of the families): TMEM state only
    calls = generated([*programs, programs[1]])  # a repeated program is one case id, one test
    verdicts = {programs[1].case_id: "fail", programs[3].case_id: "error", programs[4].case_id: "skip"}
    monkeypatch.setenv("PLANTED_VERDICTS", " ".join(f"{k}={v}" for k, v in verdicts.items()))
    batches = []
    observe = Planted.observe
    monkeypatch.setattr(Planted, "observe", lambda self, ps, progress=None: batches.append((self.name, len(ps))) or observe(self, ps, progress))

    reprec = pytester.inline_run("--tcgen05-backend", PLANTED, "--tcgen05-reference", PLANTED_REFERENCE,
                                 "--tcgen05-examples", "7", "--tcgen05-seed", "3", "--tcgen05-in-process")
    reports = {r.nodeid: r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call" or r.outcome != "passed"}
    outcome = {r.nodeid: r.outcome if r.when == "call" else f"{r.outcome} in {r.when}" for r in reports.values()}
    name = {p.case_id: f"tcgen05[planted-{p.label}-{p.case_id}]" for p in programs}
    assert outcome == {name[p.case_id]: {"fail": "failed", "error": "failed in setup", "skip": "skipped"}.get(verdicts.get(p.case_id), "passed")
                       for p in programs}
    cta, lane, column = PLANTED_WORD
    word = int(initial_tmem(programs[1])[PLANTED_WORD])  # the reference's state: the program's initial TMEM
    shown = r"(?:\S+ \()?0x{:08x}\)?"
    assert re.fullmatch(rf"1 of {programs[1].ctas * 128 * programs[1].tmem_columns} words differ; first: tmem lane {lane} column {column} "
                        rf"\(.+\): expected {shown.format(word)}, got {shown.format(word ^ 1 << PERTURBED_BIT)}",
                        reports[name[programs[1].case_id]].longreprtext)
    assert reports[name[programs[3].case_id]].longreprtext == "planted error"
    assert reports[name[programs[4].case_id]].longrepr[2] == "Skipped: planted skip"
    # one call per backend for the whole session's cases: the reference's first
    assert batches == [("planted-reference", 6), ("planted", 6)] and calls == [(7, 3)]


def test_a_backend_with_a_wrong_state_fails_against_the_oracle_with_the_runners_decoded_diff(pytester, monkeypatch, generated):
    programs = generate_programs(22, 5)[18:]  # Table 39 classes 13-16 (after one of each family): two f16, two tf32
    generated(programs)
    monkeypatch.setenv("PERTURBED_KINDS", "tf32")
    reprec = pytester.inline_run("--tcgen05-backend", "tests.fault_backends:Perturbed", "--tcgen05-examples", "4")
    passed, skipped, failed = reprec.listoutcomes()
    assert sorted(r.nodeid for r in failed) == sorted(f"tcgen05[perturbed-{p.label}-{p.case_id}]" for p in programs[2:])
    assert len(passed) == 2 and not skipped
    assert all(re.fullmatch(r"1 of \d+ words differ; first: tmem lane \d+ column \d+ \(D f32\): expected .+, got .+", r.longreprtext)
               for r in failed)


def test_with_a_timeout_a_hanging_case_is_an_error_and_the_others_pass(pytester, monkeypatch):
    programs = generate_programs(4, 0)
    monkeypatch.setenv("PLANTED_VERDICTS", f"{programs[2].case_id}=hang")
    result = pytester.runpytest("--tcgen05-backend", PLANTED, "--tcgen05-reference", PLANTED_REFERENCE, "--tcgen05-examples", "4",
                                "--tcgen05-timeout", "2")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines([f"*ERROR at setup of tcgen05[[]planted-{programs[2].label}-{programs[2].case_id}[]]*",
                                 f"timeout: batch of 1 case exceeded 2 s (watchdog); unfinished case ids {programs[2].case_id}"])


@pytest.mark.parametrize("argv, message", [
    (["--tcgen05-backend", "nope"], "ERROR: --tcgen05-backend: 'nope' is neither a backend (oracle, ptxas, hopper, blackwell), *"),
    (["--tcgen05-backend", "sim:/no/such/simulator"], "ERROR: --tcgen05-backend: *no/such/simulator*"),
    (["--tcgen05-backend", "oracle", "--tcgen05-reference", "ptxas"],
     "ERROR: --tcgen05-reference: ptxas observes assembly, not machine states: it cannot be the reference"),
    (["--tcgen05-backend", "tests.fault_backends:Nope"],
     "ERROR: --tcgen05-backend: backend 'tests.fault_backends:Nope': cannot load Nope from tests.fault_backends *"),
    (["--tcgen05-backend", "oracle", "--tcgen05-examples", "0"], "ERROR: --tcgen05-examples must be at least 1 (got 0)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-examples", "-3"], "ERROR: --tcgen05-examples must be at least 1 (got -3)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-timeout", "0"], "ERROR: --tcgen05-timeout must be positive (got 0.0)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-examples", "99999999999999999999"],
     "ERROR: --tcgen05-examples must be at most 1000000 (got 99999999999999999999)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-seed", "-1"], "ERROR: --tcgen05-seed must be in [[]0, 4294967295] (got -1)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-timeout", "1e9"], "ERROR: --tcgen05-timeout must be at most 86400 (got 1000000000.0)"),
    (["--tcgen05-backend", "oracle", "--tcgen05-profile", "sm_99z"], "ERROR: --tcgen05-profile: unknown profile 'sm_99z'*"),
    (["--tcgen05-backend", "oracle", "--tcgen05-profile", "missing.json"],
     "ERROR: --tcgen05-profile: missing.json: no such profile file"),
])
def test_bad_options_are_a_one_line_usage_error(pytester, argv, message):
    result = pytester.runpytest(*argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert sum(line.startswith("ERROR") or "error:" in line for line in result.stderr.lines) == 1


MISBEHAVING = "tests.misbehaving_backends:Misbehaving"


@pytest.mark.parametrize("spec, how, in_process", [
    ("tests.misbehaving_backends:exiting_factory", "", []),
    ("tests.misbehaving_backends:exiting_factory", "", ["--tcgen05-in-process"]),
    (MISBEHAVING, "sys_exit", []),
    (MISBEHAVING, "sys_exit", ["--tcgen05-in-process"]),
    (MISBEHAVING, "os_exit", []),
    ("builtins:dict", "", []),
])
def test_a_plugin_that_exits_or_makes_no_backend_errors_its_cases_as_run_does(pytester, monkeypatch, spec, how, in_process):
    monkeypatch.setenv("MISBEHAVE", how)
    result = pytester.runpytest("--tcgen05-backend", spec, "--tcgen05-reference", PLANTED_REFERENCE, "--tcgen05-examples", "2",
                                *in_process)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=2)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_backend_that_skips_every_case_exits_5_as_run_does(pytester):
    result = pytester.runpytest("--tcgen05-backend", "blackwell", "--tcgen05-examples", "2")  # no Blackwell GPU here
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_backend_that_is_its_own_reference_and_skips_every_case_exits_5(pytester):
    """Found by fuzz --harness: hopper judged against itself without its GPU exited 0, every case skipped."""
    result = pytester.runpytest("--tcgen05-backend", "hopper", "--tcgen05-reference", "hopper", "--tcgen05-examples", "1")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
