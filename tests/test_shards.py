"""`run --shard I/N` and `report merge`: three shards of a run, merged, give the whole run's
summary.json (but for the fields that say when, where and how long: the test names them), its
JUnit file and failing cases; merge refuses folders that are not every shard of one run, once.

The backends are the oracle and the planted backend of tests/fault_backends.py, told to fail,
error and skip chosen cases, so failures with decoded diffs and skips go through the merge."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.harness.runner import generate_programs, in_shard

EXAMPLES, SEED = 40, 3
RUN = ["run", "--examples", str(EXAMPLES), "--seed", str(SEED), "--backend", "oracle", "--backend", "tests.fault_backends:Planted"]
# when, where and how long: the only fields a merged summary may differ in (and its list of shards)
UNCOMPARED = ("command", "machine", "finished_utc", "duration_s", "shards")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    ids = [p.case_id for p in generate_programs(EXAMPLES, SEED)]
    verdicts = {ids[2]: "fail", ids[9]: "error", ids[17]: "skip", ids[30]: "fail"}
    patch = pytest.MonkeyPatch()
    patch.setenv("PLANTED_VERDICTS", " ".join(f"{k}={v}" for k, v in verdicts.items()))
    root = tmp_path_factory.mktemp("shards")
    out = {"whole": root / "whole"}
    try:
        assert main([*RUN, "--report-dir", str(out["whole"])]) == 1  # the planted failures
        for i in (1, 2, 3):
            out[f"{i}/3"] = root / f"shard{i}"
            main([*RUN, "--shard", f"{i}/3", "--report-dir", str(out[f"{i}/3"])])
    finally:
        patch.undo()
    return out


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def _compared(summary: dict) -> dict:
    s = {k: v for k, v in summary.items() if k not in UNCOMPARED}
    s["backends"] = {name: {k: v for k, v in b.items() if k != "duration_s"} for name, b in s["backends"].items()}
    return s


def _junit(folder: Path) -> str:
    """junit.xml without its durations and the command property."""
    text = (folder / "junit.xml").read_text()
    return re.sub(r'<property name="command" value="[^"]*" />', "", re.sub(r' time="[^"]*"', "", text))


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
    assert _junit(merged) == _junit(folders["whole"])
    assert sorted(p.name for p in (merged / "cases").iterdir()) == sorted(p.name for p in (folders["whole"] / "cases").iterdir())
    assert (merged / "report.html").exists() and (merged / "report.md").exists()


def _copy_with(folders, tmp_path: Path, shard: str, **changes) -> str:
    """A copy of a shard's folder whose summary.json has `changes`."""
    copy_ = tmp_path / f"edited-{shard.replace('/', '-')}"
    shutil.copytree(folders[shard], copy_)
    summary = _summary(copy_)
    for key, value in changes.items():
        summary[key] = value
    (copy_ / "summary.json").write_text(json.dumps(summary))
    return str(copy_)


@pytest.mark.parametrize("case", ["missing", "overlap", "whole", "seed", "examples", "version", "backends", "no results"])
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
        given, message = [s1, s2, _copy_with(folders, tmp_path, "3/3", version="0.0.1")], "version '0.0.1' differs"
    elif case == "backends":
        backends = copy.deepcopy(_summary(folders["2/3"])["backends"])
        backends.pop("oracle")
        given, message = [s1, _copy_with(folders, tmp_path, "2/3", backends=backends), s3], "backends"
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
