"""The command line: decode, run, replay and legality, their outputs and exit statuses."""

import json

import pytest

from tcgen05_conformance.cli import main
from tests.conftest import needs_assembler


def test_decode_idesc_names_every_field(capsys):
    # kind::f16, D f32 (bits 4-5 = 1), A/B bf16 (bits 7-9, 10-12 = 1), N = 128 (bits 17-22 = 16),
    # M = 128 (bits 24-28 = 8): Table 42.
    word = (1 << 4) | (1 << 7) | (1 << 10) | (16 << 17) | (8 << 24)
    assert main(["decode", "idesc", hex(word), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decoded"]["m"] == 128 and out["decoded"]["n"] == 128
    assert out["decoded"]["atype"] == "bf16" and out["decoded"]["dtype"] == "f32"


def test_decode_zcmask_reproduces_table_45_example_2(capsys):
    # Example 2: non-zero mask, skip span 2, use span 3, fs0 = 0, sc0 = 0, M = 128: the mask
    # 0b...111 0000 111 0000 repeats 4 used columns, then 3 zeroed ones, over N = 64 (a .ws N).
    word = (1 << 39) | (2 << 40) | (3 << 48)
    assert main(["decode", "zcmask", hex(word), "--m", "128", "--n", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decoded"]["mask"] == hex(sum(1 << j for j in range(64) if j % 7 >= 4))


@pytest.mark.parametrize("argv", [
    ["decode", "idesc", "0xnothex"],
    ["decode", "zcmask", "0x0", "--m", "32"],
    ["decode", "idesc", "0x1", "--kind", "f64"],
    ["run", "--count", "0"],
    ["run", "--shard", "3/2"],
    ["run", "--shard", "one/2"],
    ["frobnicate"],
])
def test_bad_usage_exits_2(argv, capsys):
    assert _exit_status(argv) == 2


def _exit_status(argv: list[str]) -> int:
    """main's return value, or the status argparse exits with on bad usage."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_replay_of_a_malformed_file_is_one_line_exit_2(tmp_path, capsys):
    case = tmp_path / "case.json"
    case.write_text('{"schema": "tcgen05-conformance/program/1", "target": "sm_100a", "ops": [{"op": "nope"}]}')
    assert main(["replay", str(case)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tcgen05-conformance: error: ") and "$.ops[0].op" in err and "\n" not in err


@needs_assembler
def test_run_ptxas_writes_summary_with_full_table_39_coverage(tmp_path, capsys):
    # one of each of the 7 instruction families (the first Table 39 class among them), the other 76 classes, an option
    assert main(["run", "--backend", "ptxas", "--count", "84", "--seed", "3", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["cases"] == 84 and s["seed"] == 3 and s["duration_s"] > 0
    b = s["backends"]["ptxas"]
    assert (b["ran"], b["passed"], b["failed"], b["skipped"], b["skip_reason"]) == (84, 84, 0, 0, None)
    # the 73 classes of the text's Table 39 and the 4 K = 96 M = 128 classes of A-K96-SHAPES, all assembled
    assert s["coverage"]["classes_hit"] == s["coverage"]["classes_total"] == 77
    for name in ("report.md", "report.html", "junit.xml"):
        assert (tmp_path / name).stat().st_size > 0


@needs_assembler
def test_replay_of_an_illegal_program_fails_naming_the_rule(tmp_path, capsys):
    from tcgen05_conformance.core.encoding import idesc
    from tcgen05_conformance.core.instructions import Tcgen05Mma
    from tcgen05_conformance.core.program import Program, dumps

    bad = idesc.encode("f16", idesc.InstrDescriptor(m=128, n=264, atype="f16", btype="f16"))
    case = tmp_path / "bad.json"
    case.write_text(dumps(Program(target="sm_100a", ops=(Tcgen05Mma(kind="f16", idesc=bad, b_desc=1 << 46),))))
    assert main(["replay", str(case), "--backend", "ptxas"]) == 1
    assert "[idesc.shape-n]" in capsys.readouterr().out


def test_docs_rule_list_is_generated_from_the_rule_table():
    from pathlib import Path

    from tcgen05_conformance.core.legality.document import rules_markdown

    text = (Path(__file__).parent.parent / "docs" / "legality-rules.md").read_text()
    assert text == rules_markdown(), "regenerate: python -m tcgen05_conformance.core.legality.document > docs/legality-rules.md"


def _vectors_dir():
    from tests.numerics.test_numerics_recorded import DATA

    return DATA


def test_vectors_check_b200_with_sm_100a_has_no_mismatch(capsys):
    data = _vectors_dir()
    if not (data / "B200").is_dir():
        pytest.skip(f"recorded vectors not found at {data}")
    assert main(["vectors", "check", str(data / "B200" / "fp16"), "--profile", "sm_100a", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["vectors"] == 2 * 2500 and out["mismatches"] == 0


def test_vectors_check_with_the_wrong_profile_exits_1(capsys):
    data = _vectors_dir()
    if not (data / "H100").is_dir():
        pytest.skip(f"recorded vectors not found at {data}")
    # H100 fp8 -> f32 comes from wgmma with a different datapath than B200's mma.sync.
    assert main(["vectors", "check", str(data / "H100" / "E4M3"), "--profile", "sm_100a", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["mismatches"] > 0


def test_vectors_check_of_a_malformed_folder_is_one_line_exit_2(tmp_path, capsys):
    folder = tmp_path / "fp16"
    folder.mkdir()
    (folder / "a_X_fp16.txt").write_text("3c00 zz\n")
    (folder / "b_X_fp16.txt").write_text("3c00 3c00\n")
    (folder / "c_X_fp32.txt").write_text("0" * 32 + "\n")
    (folder / "d_X_fp32.txt").write_text("0" * 32 + "\n")
    (folder / "d_X_fp16.txt").write_text("0" * 32 + "\n")
    (tmp_path / "recording.json").write_text(json.dumps({"gpu": "X", "source": "a test", "results": {"fp16": {
        "fp32": {"instruction": "mma_sync", "c": "binary32"}, "fp16": {"instruction": "mma_sync", "c": "binary16_rne"}}}}))
    assert main(["vectors", "check", str(folder), "--profile", "exact"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tcgen05-conformance: error: ") and "\n" not in err and "a_X_fp16.txt:1:" in err


# --- issue 15: input that must never crash or lose work -----------------------------------------


@pytest.mark.parametrize("n", ["-8", "99999999", "0", "7", "65"])
def test_decode_takes_only_an_n_of_a_ws_mma(n, capsys):
    assert _exit_status(["decode", "zcmask", "0x8000000000", "--m", "32", "--n", n]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "argument --n: invalid choice" in err and "64, 128, 256" in err


@pytest.mark.parametrize("argv, limit", [
    (["run", "--count", "99999999999999999999"], "out of range: from 1 to 1,000,000"),
    (["export", "--out", "x", "--count", "99999999999999999999"], "out of range: from 1 to 1,000,000"),
    (["run", "--seed", "-1"], "out of range: seeds go from 0 to 2^32 - 1"),
    (["run", "--seed", "1" * 26], "out of range: seeds go from 0 to 2^32 - 1"),
    (["legality", "--seed", "-1"], "out of range: seeds go from 0 to 2^32 - 1"),
    (["legality", "--count", "0"], "out of range: from 1 to 1,000,000"),
    (["mutants", "--count", "0"], "out of range: from 1 to 1,000,000"),
    (["mutants", "--seed", str(2**32)], "out of range: seeds go from 0 to 2^32 - 1"),
    (["run", "--jobs", "100000"], "out of range: from 1 to 4,096"),
    (["run", "--timeout", "nan"], "out of range: more than 0 and at most 86400 s"),
    (["run", "--timeout", "1e309"], "out of range: more than 0 and at most 86400 s"),
])
def test_counts_and_seeds_are_bounded_with_the_limit_in_the_message(argv, limit, capsys):
    assert _exit_status(argv) == 2
    err = capsys.readouterr().err
    assert limit in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [["frobnicate"], ["run", "--count"], ["decode"], ["vectors", "check"], ["run", "--x"]])
def test_argparse_errors_are_one_line(argv, capsys):
    assert _exit_status(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and " error: " in err, err


def test_help_names_every_exit_status(capsys):
    assert _exit_status(["replay", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 when every check that ran passed, 1 when one failed, 2 on bad usage or input" in out
    assert "3 on an internal error, a bug (one line on stderr naming the file that holds the traceback)" in out


def test_an_internal_error_has_its_own_status_and_keeps_its_traceback(monkeypatch, tmp_path, capsys):
    import tempfile

    from tcgen05_conformance.cli import decode

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(decode, "cmd_decode", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["decode", "taddr", "0"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("tcgen05-conformance: internal error: KeyError: 'a bug' (traceback in ") and err.count("\n") == 1
    saved = err.split("traceback in ")[1].split(";")[0]
    assert saved.startswith(str(tmp_path)) and 'raise KeyError("a bug")' in open(saved).read()


def test_replay_of_deeply_nested_json_is_one_line_exit_2(tmp_path, capsys):
    case = tmp_path / "deep.json"
    case.write_text("[" * 1000 + "]" * 1000)
    assert main(["replay", str(case), "--backend", "oracle"]) == 2
    err = capsys.readouterr().err
    assert err == f"tcgen05-conformance: error: {case}: $: not accepted: JSON nested more than 64 levels deep (at line 1 column 65)\n"


def test_replay_reads_the_case_files_export_writes(tmp_path, capsys):
    out = tmp_path / "vectors"
    assert main(["export", "--count", "3", "--seed", "1", "--profile", "sm_100a", "--out", str(out)]) == 0
    index = json.loads((out / "index.json").read_text())
    exported = [c for c in index["cases"] if c["status"] == "exported"]
    assert exported
    capsys.readouterr()
    for c in exported:  # judged by the profile the case names, as export judged it
        assert main(["replay", str(out / c["case"]), "--backend", "oracle"]) == 0
        assert capsys.readouterr().out == f"{c['case_id']}: reference oracle, profile sm_100a\n{c['case_id']} [oracle] pass\n"
    case = json.loads((out / exported[0]["case"]).read_text())
    case["case_id"] = "0" * 16
    (tmp_path / "edited.json").write_text(json.dumps(case))
    assert main(["replay", str(tmp_path / "edited.json"), "--backend", "oracle"]) == 2
    assert "$.case_id: \"0000000000000000\" is not the id of its program" in capsys.readouterr().err


def test_replay_of_a_case_judged_by_a_profile_variant_judges_it_by_that_variant(tmp_path, capsys):
    from tcgen05_conformance.core.instructions import MmaSp
    from tcgen05_conformance.harness.export import write_case
    from tcgen05_conformance.generators.programs import hopper_programs
    from tcgen05_conformance.generators.sampling import draw_examples

    (p,) = draw_examples(hopper_programs().filter(lambda q: isinstance(q.ops[0], MmaSp)), 1, 0)
    case = write_case(str(tmp_path / "case"), p, "sm_90a.mma_sync")  # as export and the sim backend write it
    assert main(["replay", case, "--backend", "oracle"]) == 0
    assert capsys.readouterr().out.startswith(f"{p.case_id}: reference oracle, profile sm_90a.mma_sync\n")
