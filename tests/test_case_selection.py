"""Case selection (issue 31, item 5): --select queries for run, export and replay, replay of folders
and many files, every family in a run of any size, and the case count said before drawing."""

import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness.selection import QueryError, parse, select

FAMILIES = ("tcgen05.mma", "tcgen05.cp", "tcgen05.ld", "tcgen05.st", "tcgen05.shift", "wgmma.mma_async", "mma.sp")


@pytest.fixture(scope="module")
def seven():
    return runner.generate_programs(7, 0)


def _ops(p) -> set[str]:
    return {op.OP for op in p.ops}


def test_a_run_of_seven_programs_has_each_family_and_fifty_have_data_movement(seven):
    assert [f for f in FAMILIES if not any(f in _ops(p) for p in seven)] == []
    fifty = runner.generate_programs(50, 0)
    assert {"tcgen05.cp", "tcgen05.ld", "tcgen05.st", "tcgen05.shift", "wgmma.mma_async", "mma.sp"} <= set().union(*map(_ops, fifty))


@pytest.mark.parametrize("text, problem", [
    ("famly=tcgen05.mma", "unknown key 'famly'"),
    ("family", "is not KEY=VALUE"),
    ("family=", "family= has no value"),
    ("id=xyz", "not a case id prefix"),
    ("family=tcgen05.mma,,kind=f16", "is not KEY=VALUE"),
])
def test_a_bad_query_is_one_line_naming_it_exit_2(text, problem, capsys):
    with pytest.raises(QueryError, match=problem):
        parse(text)
    for command in (["run"], ["export", "--out", "x"], ["replay", "x.json"]):
        with pytest.raises(SystemExit) as e:
            main([*command, "--select", text])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and problem in err and repr(text) in err


def test_queries_select_by_family_kind_shape_option_target_label_and_id(seven):
    wgmma = next(p for p in seven if any(isinstance(op, WgmmaMma) for op in p.ops))
    mma_sp = next(p for p in seven if any(isinstance(op, MmaSp) for op in p.ops))
    first = seven[0]
    mma = next(op for op in first.ops if isinstance(op, Tcgen05Mma))

    def chosen(*texts):
        return [p.case_id for p in select(seven, [parse(t) for t in texts])]

    assert chosen("family=wgmma.mma_async") == [wgmma.case_id]
    assert chosen("family=wgmma*", "family=mma.sp") == [p.case_id for p in seven if p in (wgmma, mma_sp)]
    assert chosen("target=sm_90a") == [p.case_id for p in seven if p.target == "sm_90a"] and len(chosen("target=sm_90a")) == 2
    assert chosen(f"id={first.case_id[:6].upper()}") == [first.case_id]
    assert chosen(f"kind={mma.kind},family=tcgen05.mma") == [first.case_id]
    assert chosen("shape=f16.dense.cta1.m64.k16") == [first.case_id]  # the first Table 39 class
    assert chosen("shape=tcgen05.shift") == [p.case_id for p in seven if "tcgen05.shift" in _ops(p)]
    assert chosen(f"option=kind={mma.kind}") == [first.case_id]
    assert chosen(f"label={first.label}") == [first.case_id]
    assert chosen("family=tcgen05.mma,target=sm_90a") == []  # every term must match
    assert chosen() == [p.case_id for p in seven]


def test_run_says_how_many_cases_before_drawing_and_runs_the_selected_ones(tmp_path, monkeypatch, capsys):
    drawn = runner.generate_programs

    def draw(count, seed, progress=None):
        said = capsys.readouterr().out
        assert f"drawing {count} programs (one of each instruction family first" in said  # before the first draw
        return drawn(count, seed, progress)

    monkeypatch.setattr(runner, "generate_programs", draw)
    assert main(["run", "--backend", "oracle", "--count", "9", "--select", "family=tcgen05.ld",
                 "--select", "target=sm_90a", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "9 cases: 9 programs drawn, 0 aimed at value coverpoints" in out
    programs = drawn(9, 0)
    expected = [p.case_id for p in programs if "tcgen05.ld" in _ops(p) or p.target == "sm_90a"]
    assert f"--select 'family=tcgen05.ld' --select 'target=sm_90a': {len(expected)} of the 9 cases" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == len(expected) and sorted(summary["case_profiles"]) == sorted(expected)


def test_a_query_matching_no_case_and_select_with_shard_are_bad_usage(tmp_path, capsys):
    assert main(["run", "--backend", "oracle", "--count", "3", "--select", "target=sm_90a", "--out", str(tmp_path)]) == 2
    assert "none of the 3 cases matches" in capsys.readouterr().err
    assert main(["run", "--count", "3", "--shard", "1/2", "--select", "target=sm_90a", "--out", str(tmp_path)]) == 2
    assert "--select goes with a whole run" in capsys.readouterr().err


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("vectors")
    assert main(["export", "--count", "7", "--out", str(out), "--select", "family=tcgen05.*"]) == 0
    return out


def test_export_writes_the_selected_cases(exported, seven):
    index = json.loads((exported / "index.json").read_text())
    assert index["select"] == ["family=tcgen05.*"]
    assert sorted(c["case_id"] for c in index["cases"]) == sorted(p.case_id for p in seven if p.target != "sm_90a")


def test_replay_of_a_folder_runs_each_case_once_and_counts_them(exported, seven, capsys):
    tcgen05 = [p.case_id for p in seven if p.target != "sm_90a"]
    assert main(["replay", str(exported), str(exported / "cases" / tcgen05[0] / "case.json"), "--backend", "oracle"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[0] for line in out if " [oracle] pass" in line) == sorted(tcgen05)
    assert out[-1] == f"{len(tcgen05)} cases: oracle {len(tcgen05)} pass"


def test_replay_selects_among_its_cases(exported, seven, tmp_path, capsys):
    shift = next(p for p in seven if "tcgen05.shift" in _ops(p))
    program_file = tmp_path / "st.json"
    st = next(p for p in seven if "tcgen05.st" in _ops(p))
    from tcgen05_conformance.core.program import dumps

    program_file.write_text(dumps(st))
    assert main(["replay", str(exported), str(program_file), "--backend", "oracle", "--select", "shape=tcgen05.shift",
                 "--select", f"id={st.case_id[:8]}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[0] for line in out if "[oracle] pass" in line) == sorted([shift.case_id, st.case_id])
    assert out[-1].startswith("2 cases (of ")
    assert main(["replay", str(exported), "--select", "target=sm_90a"]) == 2
    assert "none of the" in capsys.readouterr().err


def test_replay_of_a_folder_without_cases_or_a_missing_path_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "summary.json").write_text("{}")
    for path in (tmp_path, tmp_path / "missing"):
        assert main(["replay", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err
