"""`run --shard I/N` and `report merge`: three shards of a run, merged, give the whole run's
summary.json (but for the fields that say when, where and how long: the test names them), its
JUnit file and failing cases, and its value coverage from the shards' hits; merge refuses folders
that are not every shard of one run, once, and shards whose value coverage is not their cases'.

The backends are the oracle and the planted backend of tests/fault_backends.py, told to fail,
error and skip chosen cases, so failures with decoded diffs and skips go through the merge."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.coverpoints import hits
from tcgen05_conformance.harness.runner import generate_programs, in_shard

EXAMPLES, SEED = 40, 3
RUN = ["run", "--count", str(EXAMPLES), "--seed", str(SEED), "--backend", "oracle", "--backend", "tests.fault_backends:Planted"]
# when, where and how long: the only fields a merged summary may differ in (and its list of shards)
UNCOMPARED = ("command", "machine", "gpus", "finished_utc", "duration_s", "shards")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    ids = [p.case_id for p in generate_programs(EXAMPLES, SEED)]
    verdicts = {ids[2]: "fail", ids[9]: "error", ids[17]: "skip", ids[30]: "fail"}
    patch = pytest.MonkeyPatch()
    patch.setenv("PLANTED_VERDICTS", " ".join(f"{k}={v}" for k, v in verdicts.items()))
    root = tmp_path_factory.mktemp("shards")
    out = {"whole": root / "whole"}
    try:
        assert main([*RUN, "--out", str(out["whole"])]) == 1  # the planted failures
        for i in (1, 2, 3):
            out[f"{i}/3"] = root / f"shard{i}"
            main([*RUN, "--shard", f"{i}/3", "--out", str(out[f"{i}/3"])])
    finally:
        patch.undo()
    return out


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def _compared(summary: dict) -> dict:
    s = {k: v for k, v in summary.items() if k not in UNCOMPARED}
    s["backends"] = {name: {k: v for k, v in b.items() if k != "duration_s"} for name, b in s["backends"].items()}
    s["failures"] = [{**f, "replay": _in_any_folder(f["replay"])} for f in s["failures"]]
    return s


def _in_any_folder(text: str) -> str:
    """Replay commands with the report folder they name left out (each report names its own)."""
    return re.sub(r"\S*/cases/", "cases/", text)


def _junit(folder: Path) -> str:
    """junit.xml without its durations and the command property."""
    text = (folder / "junit.xml").read_text()
    return _in_any_folder(re.sub(r'<property name="command" value="[^"]*" />', "", re.sub(r' time="[^"]*"', "", text)))


def test_shards_divide_the_run_by_case_id(folders):
    whole = _summary(folders["whole"])
    shards = [_summary(folders[f"{i}/3"]) for i in (1, 2, 3)]
    assert [s["shard"] for s in shards] == ["1/3", "2/3", "3/3"] and whole["shard"] is None
    assert sum(s["cases"] for s in shards) == whole["cases"] == EXAMPLES
    assert all(s["cases"] > 0 for s in shards)
    for i, folder in ((1, folders["1/3"]), (2, folders["2/3"]), (3, folders["3/3"])):
        results = json.loads((folder / "results.json").read_text())
        assert all(in_shard(c["case_id"], (i, 3)) for cases in results.values() for c in cases)


def test_merged_shards_reproduce_the_whole_run(folders, tmp_path, capsys):
    merged = tmp_path / "merged"
    shards = [str(folders[f"{i}/3"]) for i in (3, 1, 2)]  # any order
    assert main(["report", "merge", *shards, "--out", str(merged)]) == 1
    assert "3 shards, 40 cases" in capsys.readouterr().out
    whole, got = _summary(folders["whole"]), _summary(merged)
    assert _compared(got) == _compared(whole)
    assert got["failures"] and {f["status"] for f in got["failures"]} == {"fail", "error"}
    assert [s["shard"] for s in got["shards"]] == ["1/3", "2/3", "3/3"]
    assert got["gpus"] is None and [s["gpus"] for s in got["shards"]] == [[], [], []]  # no GPU backend: none given
    assert _junit(merged) == _junit(folders["whole"])
    assert sorted(p.name for p in (merged / "cases").iterdir()) == sorted(p.name for p in (folders["whole"] / "cases").iterdir())
    assert (merged / "report.html").exists() and (merged / "report.md").exists()


def test_merged_value_coverage_is_the_shards_hits_summed(folders, tmp_path):
    """Each coverpoint's hits, counted here from the programs each shard ran, add up over the
    shards to the whole run's; the merged summary carries the whole run's value coverage."""
    programs = generate_programs(EXAMPLES, SEED)
    shard_hits = []
    for i in (1, 2, 3):
        points = _summary(folders[f"{i}/3"])["value_coverage"]["points"]
        mine = [p for p in programs if in_shard(p.case_id, (i, 3))]
        assert {k: v["hits"] for k, v in points.items() if v["hits"]} == {
            point: sum(point in hits(p) for p in mine) for p in mine for point in hits(p)}
        shard_hits.append({k: v["hits"] for k, v in points.items()})
    whole = _summary(folders["whole"])["value_coverage"]
    assert whole["hit"] > 0 and any(sum(h[k] > 0 for h in shard_hits) >= 2 for k in whole["points"])  # hits to add up
    assert {k: v["hits"] for k, v in whole["points"].items()} == {k: sum(h[k] for h in shard_hits) for k in whole["points"]}
    merged = tmp_path / "merged"
    main(["report", "merge", *(str(folders[f"{i}/3"]) for i in (1, 2, 3)), "--out", str(merged)])
    assert _summary(merged)["value_coverage"] == whole


def test_merge_require_coverage_judges_the_whole_run(tmp_path, capsys):
    """A passing run of 3 examples misses reachable value coverpoints: merging its shards exits 0,
    and 4 with --require-coverage; a shard alone refuses --require-coverage."""
    run = ["run", "--count", "3", "--seed", str(SEED), "--backend", "oracle"]
    shards = [str(tmp_path / f"shard{i}") for i in (1, 2)]
    for i, folder in enumerate(shards, 1):
        assert main([*run, "--shard", f"{i}/2", "--out", folder]) == 0
    assert main(["report", "merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    capsys.readouterr()
    assert main(["report", "merge", *shards, "--out", str(tmp_path / "required"), "--require-coverage"]) == 4
    missed = _summary(tmp_path / "required")["value_coverage"]["missed"]
    assert missed  # and the last line says why the status is 4
    assert capsys.readouterr().out.strip().splitlines()[-1] == (f"exit status 4: --require-coverage, and {len(missed)} "
                                                                "reachable value coverpoints were missed")
    assert main([*run, "--shard", "1/2", "--require-coverage", "--out", str(tmp_path / "refused")]) == 2
    assert "--require-coverage goes with a whole run" in capsys.readouterr().err


def _copy_with(folders, tmp_path: Path, shard: str, **changes) -> str:
    """A copy of a shard's folder whose summary.json has `changes`."""
    copy_ = tmp_path / f"edited-{shard.replace('/', '-')}"
    shutil.copytree(folders[shard], copy_)
    summary = _summary(copy_)
    for key, value in changes.items():
        summary[key] = value
    (copy_ / "summary.json").write_text(json.dumps(summary))
    return str(copy_)


def _value_coverage_with(folders, shard: str, change) -> dict:
    """The shard's value coverage with `change(points)` applied to its coverpoints."""
    values = copy.deepcopy(_summary(folders[shard])["value_coverage"])
    change(values["points"])
    return values


def _one_more_hit(points: dict) -> None:
    next(v for v in points.values() if v["hits"])["hits"] += 1


def _foreign_first_case(points: dict) -> None:
    next(v for v in points.values() if v["hits"])["first_case"] = "0123456789abcdef"


@pytest.mark.parametrize("case", ["missing", "overlap", "whole", "seed", "examples", "version", "backends", "no results",
                                  "value hits", "value first case", "no value coverage"])
def test_merge_refuses_what_is_not_every_shard_of_one_run_once(folders, tmp_path, capsys, case):
    s1, s2, s3 = (str(folders[f"{i}/3"]) for i in (1, 2, 3))
    if case == "missing":
        given, message = [s1, s2], "shard 3/3 missing"
    elif case == "overlap":
        given, message = [s1, s2, s3, _copy_with(folders, tmp_path, "1/3")], "are both shard 1/3"
    elif case == "whole":
        given, message = [s1, s2, s3, str(folders["whole"])], "the report of a whole run, not of a shard"
    elif case == "seed":
        given, message = [s1, s2, _copy_with(folders, tmp_path, "3/3", seed=SEED + 1)], f"seed {SEED + 1} differs"
    elif case == "examples":
        given, message = [s1, _copy_with(folders, tmp_path, "2/3", examples=41), s3], "examples 41 differs"
    elif case == "version":
        given, message = [s1, s2, _copy_with(folders, tmp_path, "3/3", version="0.0.1")], 'version "0.0.1" differs'
    elif case == "backends":
        backends = copy.deepcopy(_summary(folders["2/3"])["backends"])
        backends.pop("oracle")
        given, message = [s1, _copy_with(folders, tmp_path, "2/3", backends=backends), s3], "backends"
    elif case == "value hits":
        values = _value_coverage_with(folders, "2/3", _one_more_hit)
        given, message = [s1, _copy_with(folders, tmp_path, "2/3", value_coverage=values), s3], "value coverage hits, merged, differ"
    elif case == "value first case":
        values = _value_coverage_with(folders, "1/3", _foreign_first_case)
        given, message = [_copy_with(folders, tmp_path, "1/3", value_coverage=values), s2, s3], "is not a case of the run"
    elif case == "no value coverage":
        given, message = [s1, s2, _copy_with(folders, tmp_path, "3/3", value_coverage=None)], "has no value coverage"
    else:
        bare = tmp_path / "bare"
        shutil.copytree(folders["2/3"], bare)
        (bare / "results.json").unlink()
        given, message = [s1, str(bare), s3], "no results.json"
    out = tmp_path / "out"
    assert main(["report", "merge", *given, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tcgen05-conformance: error: ") and "\n" not in err and message in err, err
    assert not out.exists()


def _forged(folders, tmp_path: Path, shard: str, name: str, text: str | None = None, make=None) -> str:
    """A copy of a shard's folder whose file `name` holds `text`, or is made by `make(path)`."""
    copy_ = tmp_path / f"forged-{shard.replace('/', '-')}"
    shutil.copytree(folders[shard], copy_)
    (copy_ / name).unlink()
    if make is None:
        (copy_ / name).write_text(text)
    else:
        make(copy_ / name)
    return str(copy_)


def _results_edited(folders, shard: str, backend: str, status: str) -> str:
    """The shard's results.json with the first passed case of `backend` given `status`."""
    results = json.loads((folders[shard] / "results.json").read_text())
    next(c for c in results[backend] if c["status"] == "pass")["status"] = status
    return json.dumps(results)


def _results_detail_null(folders, shard: str) -> str:
    results = json.loads((folders[shard] / "results.json").read_text())
    results["oracle"][0]["detail"] = None
    return json.dumps(results)


def _summary_with_backend(folders, shard: str, backend: str, **changes) -> str:
    summary = _summary(folders[shard])
    summary["backends"][backend].update(changes)
    return json.dumps(summary)


def _summary_with(folders, of: str, **changes) -> str:
    return json.dumps({**_summary(folders[of]), **changes})


# Forged and edited shard folders (issue 32, item 2): each refused on one line, exit 2, nothing written.
FORGED = {
    "a case edited from pass to fail": (lambda f, t: _forged(f, t, "2/3", "results.json", _results_edited(f, "2/3", "oracle", "fail")),
                                        "the counts of \"oracle\" in summary.json are not those of its cases in results.json "
                                        "(passed"),
    "forged counts": (lambda f, t: _forged(f, t, "1/3", "summary.json", _summary_with_backend(f, "1/3", "oracle", passed=999, ran=999)),
                      "the counts of \"oracle\" in summary.json are not those of its cases"),
    "an unknown status": (lambda f, t: _forged(f, t, "3/3", "results.json", _results_edited(f, "3/3", "oracle", "passed")),
                          "the results of \"oracle\" are not a list of case results"),
    "a seed that is text": (lambda f, t: _forged(f, t, "1/3", "summary.json", _summary_with(f, "1/3", seed="3")),
                            'seed "3" is not a whole number'),
    "backends as a list": (lambda f, t: _forged(f, t, "1/3", "summary.json", _summary_with(f, "1/3", backends=[])),
                           "backends [] is not an object"),
    "no case_profiles": (lambda f, t: _forged(f, t, "1/3", "summary.json",
                                              json.dumps({k: v for k, v in _summary(f["1/3"]).items() if k != "case_profiles"})),
                         "summary.json: no case_profiles"),
    "failures as text": (lambda f, t: _forged(f, t, "2/3", "summary.json", _summary_with(f, "2/3", failures="none")),
                         'failures "none" is not a list'),
    "a forged diff": (lambda f, t: _forged(f, t, "1/3", "summary.json",
                                           _summary_with(f, "1/3", failures=[{"backend": "oracle", "case_id": "x", "diff": {"words": 1}}])),
                      "is not a diff"),
    "examples 10**12": (lambda f, t: _forged(f, t, "1/3", "summary.json", _summary_with(f, "1/3", examples=10**12)),
                        "examples 1000000000000 is out of range (1 to 1,000,000)"),
    "examples 10**6 for 40 cases": (lambda f, t: [_forged(f, t / str(k), s, "summary.json", _summary_with(f, s, examples=10**6))
                                                  for k, s in enumerate(("1/3", "2/3", "3/3"))],
                                    "not the 1,000,000 (and up to 200 value programs) of a run of --count 1,000,000"),
    "value coverage as a list": (lambda f, t: _forged(f, t, "2/3", "summary.json", _summary_with(f, "2/3", value_coverage=[1])),
                                 "has no value coverage"),
    "a detail that is null": (lambda f, t: _forged(f, t, "3/3", "results.json", _results_detail_null(f, "3/3")),
                              "the results of \"oracle\" are not a list of case results"),
    "a shard 0/3": (lambda f, t: _forged(f, t, "1/3", "summary.json", _summary_with(f, "1/3", shard="0/3")),
                    'shard "0/3" is not I/N'),
    "nested 100000 deep": (lambda f, t: _forged(f, t, "1/3", "summary.json", "[" * 100_000 + "]" * 100_000),
                           "not accepted: JSON nested more than 64 levels deep"),
    "not JSON": (lambda f, t: _forged(f, t, "1/3", "results.json", "{"), "results.json: not JSON"),
    "a summary that is /dev/zero": (lambda f, t: _forged(f, t, "1/3", "summary.json", make=lambda p: p.symlink_to("/dev/zero")),
                                    "summary.json: not a regular file (a character device)"),
    "a results.json that is a FIFO": (lambda f, t: _forged(f, t, "1/3", "results.json", make=lambda p: os.mkfifo(p)),
                                      "results.json: not a regular file (a FIFO)"),
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_merge_refuses_a_forged_or_edited_shard_on_one_line(folders, tmp_path, capsys, case):
    make, message = FORGED[case]
    forged = make(folders, tmp_path)
    forged = forged if isinstance(forged, list) else [forged]
    replaced = {Path(f).name.removeprefix("forged-").replace("-", "/") for f in forged}
    given = forged + [str(folders[s]) for s in ("1/3", "2/3", "3/3") if s not in replaced]
    out = tmp_path / "out"
    assert main(["report", "merge", *given, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tcgen05-conformance: error: ") and "\n" not in err and message in err, err
    assert not out.exists()


@pytest.mark.parametrize("where", ["a shard", "inside a shard"])
def test_merge_refuses_an_out_that_is_or_lies_inside_a_shard_and_leaves_the_shard_whole(folders, tmp_path, capsys, where):
    given = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for i, folder in enumerate(given, 1):
        shutil.copytree(folders[f"{i}/3"], folder)
    before = {p: p.read_bytes() for p in given[1].rglob("*") if p.is_file()}
    out = given[1] if where == "a shard" else given[1] / "merged"
    assert main(["report", "merge", *map(str, given), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--out {out} {'is' if where == 'a shard' else 'lies inside'} the shard folder {given[1]}" in err and "\n" not in err
    assert {p: p.read_bytes() for p in given[1].rglob("*") if p.is_file()} == before
