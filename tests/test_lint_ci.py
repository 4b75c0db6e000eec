"""`lint` used as linters are used in CI (issue 30, item 4): directories with include / exclude
globs, the target taken per file, what lies outside the model skipped and counted, problems
and a summary by default, SARIF 2.1.0, exit 1 only for findings."""

from __future__ import annotations

import json

import pytest

from tcgen05_conformance.cli import main

# 9.7.16.8.3: tcgen05.ld.red is sm_103a's (not sm_100a's): its verdict tells the target used.
LD_RED = "tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32 {%0, %1}, %2, [%3];"
LD_RED_ASM = f'asm volatile("{LD_RED}" : "=r"(a), "=r"(b) : "r"(c), "r"(t));'
ILLEGAL_ASM = 'asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 48;" :: "r"(d));'
LEGAL_ASM = 'asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 64;" :: "r"(d));'
# dense mma.sync (sm_80) and wgmma.fence are tensor-core instructions the model does not describe
OUTSIDE = ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
           '{%8,%9}, {%10,%11,%12,%13};" : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3) : "r"(a0), "r"(a1), "r"(a2), '
           '"r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));\n'
           'asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')


def run(argv, capsys) -> tuple[int, str]:
    try:
        status = main(["lint", *argv])
    except SystemExit as e:
        status = e.code
    return status, capsys.readouterr().out


def run_json(argv, capsys) -> tuple[int, dict]:
    status, out = run([*argv, "--format", "json"], capsys)
    return status, json.loads(out)


def _tree(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_directories_are_read_recursively_with_globs(tmp_path, capsys):
    _tree(tmp_path, {"a/x.cu": ILLEGAL_ASM, "a/third_party/y.cuh": ILLEGAL_ASM, "b/z.hpp": LEGAL_ASM,
                     "b/notes.txt": ILLEGAL_ASM, "c.ptx": ".target sm_100a\n.reg .b32 %r<2>;\n"
                     "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r0], 64;\n"})
    status, report = run_json([str(tmp_path)], capsys)
    assert status == 1 and report["files"] == 4
    assert sorted((r["file"][len(str(tmp_path)) + 1:], r["verdict"]) for r in report["instructions"]) == [
        ("a/third_party/y.cuh", "illegal"), ("a/x.cu", "illegal"), ("b/z.hpp", "legal"), ("c.ptx", "legal")]
    status, report = run_json([str(tmp_path), "--exclude", "third_party/*", "--exclude", "x.cu"], capsys)
    assert status == 0 and report["files"] == 2
    status, report = run_json([str(tmp_path), "--include", "*.ptx"], capsys)
    assert status == 0 and [r["file"] for r in report["instructions"]] == [str(tmp_path / "c.ptx")]


def _ld_red_target(tmp_path, capsys, name: str, text: str, *options: str) -> tuple[str, str]:
    path = tmp_path / name
    path.write_text(text)
    _, report = run_json([str(path), *options], capsys)
    [record] = report["instructions"]
    return record["arch"], record["verdict"]


@pytest.mark.parametrize("name, text, options, expected", [
    ("k.ptx", f".target sm_103a\n.reg .b32 %r<4>;\n{LD_RED.replace('%0', '%r0').replace('%1', '%r1').replace('%2', '%r2').replace('%3', '%r3')}",
     (), ("sm_103a", "legal")),  # the module's .target
    ("k.ptx", f".target sm_103a\n.reg .b32 %r<4>;\n{LD_RED.replace('%0', '%r0').replace('%1', '%r1').replace('%2', '%r2').replace('%3', '%r3')}",
     ("--arch", "sm_100a"), ("sm_103a", "legal")),  # --arch is only the default
    ("k.cu", f"#if defined(__CUDA_ARCH_FEAT_SM103_ALL)\n{LD_RED_ASM}\n#endif\n", (), ("sm_103a", "legal")),
    ("k.cu", f"#if (__CUDA_ARCH__ >= 1030)\n{LD_RED_ASM}\n#endif\n", (), ("sm_103a", "legal")),
    ("k.cu", f"#ifdef CUTE_ARCH_TCGEN05_SM103A_ENABLED\n{LD_RED_ASM}\n#endif\n", (), ("sm_103a", "legal")),
    ("copy_sm103.hpp", LD_RED_ASM, (), ("sm_103a", "legal")),  # the file name
    ("k.cu", LD_RED_ASM, ("--arch", "sm_103a"), ("sm_103a", "legal")),  # no hint: --arch
    ("k.cu", LD_RED_ASM, (), ("sm_100a", "illegal")),  # nothing: the family's first target
    ("copy_sm103.hpp", LD_RED_ASM, ("--arch-override", "sm_100a"), ("sm_100a", "illegal")),
    ("k.cu", f"#if defined(__CUDA_ARCH_FEAT_SM103_ALL)\n#else\n{LD_RED_ASM}\n#endif\n", (), ("sm_100a", "illegal")),
])
def test_the_target_is_taken_per_file(tmp_path, capsys, name, text, options, expected):
    assert _ld_red_target(tmp_path, capsys, name, text, *options) == expected


def test_what_lies_outside_the_model_is_counted_and_skipped_quietly(tmp_path, capsys):
    _tree(tmp_path, {
        "mma_sm80.cu": OUTSIDE,
        # the .kind forms of mma.sp need sm_120a, a target outside the model
        "mma_sm120_sparse.hpp": 'asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32 '
                                '{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0x0;" '
                                ': "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), '
                                '"r"(b1), "r"(b2), "r"(b3), "f"(c0), "f"(c1), "f"(c2), "f"(c3), "r"(e));',
        "k120.ptx": ".target sm_120a\n.reg .b32 %r<2>;\ntcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r0], 48;\n",
    })
    status, out = run([str(tmp_path)], capsys)
    assert status == 0
    assert out.splitlines() == ["3 files, 4 tensor-core instructions: 0 legal, 0 illegal, 0 unparsed, 4 skipped "
                                "(outside the model or its targets); 0 rule checks undecided"]
    status, out = run([str(tmp_path), "-v"], capsys)
    assert status == 0 and out.count(": skipped: ") == 4


def test_by_default_only_problems_and_a_summary_are_printed(tmp_path, capsys):
    path = tmp_path / "k.cu"
    path.write_text(f"{LEGAL_ASM}\n{ILLEGAL_ASM}\nasm(\"tcgen05.alloc.cta_group::1.sync.aligned.b32 %0, 64;\" :: \"r\"(d));\n")
    status, out = run([str(path)], capsys)
    lines = out.splitlines()
    assert status == 1
    assert lines[0].startswith(f"{path}:2: illegal (sm_100a) [alloc.columns]")
    assert lines[2].startswith(f"{path}:3: unparsed")
    assert lines[-1].startswith("1 files, 3 tensor-core instructions: 1 legal, 1 illegal, 1 unparsed")
    assert f"{path}:1:" not in out
    _, verbose = run([str(path), "-v"], capsys)
    assert f"{path}:1: legal (sm_100a)" in verbose


def test_exit_1_only_for_findings(tmp_path, capsys):
    path = tmp_path / "k.cu"
    path.write_text(f"{LEGAL_ASM}\nasm(\"tcgen05.alloc.cta_group::1.sync.aligned.b32 %0, 64;\" :: \"r\"(d));\n{OUTSIDE}\n")
    assert run([str(path)], capsys)[0] == 0  # an unparsed and skipped instructions are no findings
    assert run([str(tmp_path / "missing.cu")], capsys)[0] == 2


def test_sarif_2_1_0_names_each_finding_by_rule_file_and_line(tmp_path, capsys):
    """SARIF 2.1.0 (OASIS): a log is {version, runs}; a run's tool.driver has a name and the
    rules its results reference (3.27.5: ruleId, with a reportingDescriptor of that id); each
    result has a message text and a physical location whose region starts at the line."""
    _tree(tmp_path, {"src/k.cu": f"{LEGAL_ASM}\n{ILLEGAL_ASM}\nasm(\"tcgen05.alloc.cta_group::1.sync.aligned.b32 %0, 64;\" "
                                 f":: \"r\"(d));\n"})
    out_file = tmp_path / "lint.sarif"
    status, _ = run([str(tmp_path / "src"), "--format", "sarif", "--out", str(out_file)], capsys)
    log = json.loads(out_file.read_text())
    assert status == 1 and log["version"] == "2.1.0" and "sarif-schema-2.1.0" in log["$schema"]
    [run_] = log["runs"]
    assert run_["tool"]["driver"]["name"] == "tcgen05-conformance lint"
    results = run_["results"]
    assert [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("alloc.columns", "error", 2), ("lint.unparsed", "warning", 3)]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/src/k.cu")
    assert {r["id"] for r in run_["tool"]["driver"]["rules"]} == {"alloc.columns", "lint.unparsed"}
    assert all(r["message"]["text"] for r in results)
