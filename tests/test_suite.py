"""The versioned suite (issue 31, item 4): the committed frozen case list regenerates identically
(its ids drawn again, their expected states computed again by the oracle with the same digests),
`run --suite` and `export --suite` run exactly that list, and `suite check` judges a run's report
folder against it."""

import copy
import json

import pytest

from tcgen05_conformance import SUITE_VERSION
from tcgen05_conformance.cli import main
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness import suite as suites

DRAWN = {}


@pytest.fixture(scope="module")
def committed():
    return suites.load(SUITE_VERSION)


@pytest.fixture(scope="module")
def frozen_again():
    """The suite as this checkout draws and computes it (one draw, reused below)."""
    return suites.freeze(SUITE_VERSION)


@pytest.fixture
def drawn_once(monkeypatch, frozen_again):
    """runner.generate_programs, remembering its draws (the suite's 200 programs are drawn once)."""
    draw = runner.generate_programs

    def remembered(count, seed, progress=None):
        if (count, seed) not in DRAWN:
            DRAWN[count, seed] = draw(count, seed, progress)
        return DRAWN[count, seed]

    monkeypatch.setattr(runner, "generate_programs", remembered)


def test_the_committed_suite_regenerates_identically(committed, frozen_again):
    assert committed["suite"] == SUITE_VERSION and committed["schema"] == suites.SCHEMA
    for field in ("draw", "reference", "profiles", "waivers"):
        assert frozen_again[field] == committed[field], field
    assert [c["id"] for c in frozen_again["cases"]] == [c["id"] for c in committed["cases"]]
    # every case's expected state, computed again by the oracle, has the digest the suite froze
    assert frozen_again["cases"] == committed["cases"]
    assert len(committed["cases"]) == len(set(c["id"] for c in committed["cases"])) > 200
    assert {w["rule"] for w in committed["waivers"]["undefined_behaviour"]} >= {"program.tmem-allocation",
                                                                                "program.st-split-overlap"}


def test_run_suite_runs_exactly_the_list_and_suite_check_says_it_passes(committed, drawn_once, tmp_path, capsys):
    out = tmp_path / "run"
    oracle_as_a_plugin = "tcgen05_conformance.harness.backends.oracle:OracleBackend"
    assert main(["run", "--suite", SUITE_VERSION, "--backend", oracle_as_a_plugin, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == len(committed["cases"])
    assert sorted(summary["case_profiles"]) == sorted(c["id"] for c in committed["cases"])
    capsys.readouterr()
    assert main(["suite", "check", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    required = len(suites.required(committed))
    assert lines[0] == f"{oracle_as_a_plugin}: {required} of {required} required cases passed"
    assert lines[-1] == f"the run passes suite {SUITE_VERSION}"


def _summary(suite: dict, failed=(), skipped=(), missing=(), backend="sim:mysim") -> dict:
    ids = [c["id"] for c in suite["cases"] if c["id"] not in missing]
    return {"reference": "oracle", "case_profiles": {i: "exact" for i in ids},
            "backends": {"oracle": {"skips": []},
                         backend: {"skips": [{"reason": "not run", "count": len(skipped), "case_ids": list(skipped)}]}},
            "failures": [{"backend": backend, "case_id": i, "status": "fail"} for i in failed]}


@pytest.mark.parametrize("damage, says", [
    ({"failed": [0]}, "failed 1: {0}"),
    ({"skipped": [1]}, "skipped 1: {1}"),
    ({"missing": [2]}, "the run lacks 1 of the {required} required cases: {2}"),
])
def test_suite_check_fails_a_run_with_a_required_case_failed_skipped_or_missing(damage, says, committed, tmp_path, capsys):
    need = suites.required(committed)
    chosen = {key: [need[k] for k in ks] for key, ks in damage.items()}
    (tmp_path / "summary.json").write_text(json.dumps(_summary(committed, **chosen)))
    assert main(["suite", "check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert says.format(*need[:3], required=len(need)) in out
    assert out.strip().splitlines()[-1] == f"sim:mysim: does not pass suite {SUITE_VERSION}"


def test_suite_check_lets_a_waived_case_fail_and_needs_a_backend_under_test(committed, tmp_path, capsys):
    waived = committed["waivers"]["cases_without_expected_state"]
    (tmp_path / "summary.json").write_text(json.dumps(_summary(committed, failed=waived)))
    assert main(["suite", "check", str(tmp_path)]) == 0
    only_reference = _summary(committed)
    del only_reference["backends"]["sim:mysim"]
    (tmp_path / "summary.json").write_text(json.dumps(only_reference))
    assert main(["suite", "check", str(tmp_path)]) == 1
    assert "no backend under test" in capsys.readouterr().out


def test_suite_check_of_a_folder_without_a_summary_is_one_line_exit_2(tmp_path, capsys):
    assert main(["suite", "check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "summary.json" in err


@pytest.mark.parametrize("argv, says", [
    (["run", "--suite", SUITE_VERSION, "--count", "5"], "leave --count and --seed out"),
    (["export", "--suite", SUITE_VERSION, "--out", "OUT", "--reference", "ptxas"], "--reference oracle"),
    (["run", "--suite", SUITE_VERSION, "--shard", "1/2"], "--suite goes with a whole run"),
])
def test_suite_with_options_that_change_its_list_is_one_line_exit_2(argv, says, drawn_once, tmp_path, capsys):
    assert main([a.replace("OUT", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("tcgen05-conformance: error: ") and says in err


def test_an_unknown_suite_is_refused_while_parsing(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--suite", "0.9"])
    assert e.value.code == 2 and "no suite '0.9' in this package" in capsys.readouterr().err


def test_export_suite_writes_its_cases_and_refuses_expected_states_the_suite_did_not_freeze(committed, drawn_once, tmp_path,
                                                                                         monkeypatch, capsys):
    argv = ["export", "--suite", SUITE_VERSION, "--select", "family=tcgen05.shift", "--out", str(tmp_path / "ok")]
    assert main(argv) == 0
    index = json.loads((tmp_path / "ok" / "index.json").read_text())
    assert index["suite"] == SUITE_VERSION and index["exported"] >= 1
    assert {c["case_id"] for c in index["cases"]} <= {c["id"] for c in committed["cases"]}
    tampered = copy.deepcopy(committed)
    shifted = index["cases"][0]["case_id"]
    next(c for c in tampered["cases"] if c["id"] == shifted)["expected"] = "0" * 64
    monkeypatch.setattr(suites, "load", lambda version: tampered)
    capsys.readouterr()
    assert main([*argv[:-1], str(tmp_path / "tampered")]) == 2
    assert f"other expected states than the suite froze for 1 cases (first {shifted})" in capsys.readouterr().err


def test_suite_show_names_the_version_its_cases_and_versions(committed, capsys):
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"suite {SUITE_VERSION}: {len(committed['cases'])} cases, {len(suites.required(committed))} required")
    assert all(f"{name} {digest[:12]}" in out for name, digest in committed["profiles"].items())
    assert main(["suite", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == committed
