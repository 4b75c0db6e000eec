"""`lint` and `import` on the command line: verdicts per instruction with file and line, value-level
rules decided where the operand is a constant and reported undecided where it is not, the JSON
format and exit statuses of issue 14, and an imported sequence that `replay` runs."""

from __future__ import annotations

import io
import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.encoding import idesc
from tcgen05_conformance.core.encoding.idesc import InstrDescriptor
from tcgen05_conformance.harness.runner import generate_programs
from tcgen05_conformance.device.ptx.kernels import instruction_module, ptx_text
from tests.conftest import needs_assembler

# kind::f16, D f32, A/B f16, M = 128, dense, cta_group::1: Table 39 allows N = 8..256 in steps of 8
GOOD = idesc.encode("f16", InstrDescriptor(m=128, n=64, atype="f16", btype="f16", dtype="f32"))
BAD_N = idesc.encode("f16", InstrDescriptor(m=128, n=264, atype="f16", btype="f16", dtype="f32"))
SDESC = 0x4000404000010040

MODULE = f""".version 9.0
.target sm_100a
.address_size 64
.shared .align 16 .b32 slot;
.visible .entry k()
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  mov.b32 %r0, 0;
  mov.b64 %rd1, {SDESC:#x};
  mov.b32 %r1, {GOOD:#x};
  tcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd1, %r1, 1;
  tcgen05.mma.kind::f16.cta_group::1 [%r0], %rd1, %rd1, {BAD_N}, 0;
  ld.shared.b32 %r2, [slot];
  tcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd1, %r2, 1;
  wgmma.fence.sync.aligned;
  ret;
}}
"""


def lint_json(argv, capsys) -> tuple[int, dict]:
    status = main(["lint", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_each_instruction_gets_a_verdict_at_its_line(tmp_path, capsys):
    path = tmp_path / "k.ptx"
    path.write_text(MODULE)
    status, report = lint_json([str(path)], capsys)
    assert status == 1
    records = report["instructions"]
    assert [(r["line"], r["verdict"]) for r in records] == [(12, "legal"), (13, "illegal"), (15, "legal"), (16, "skipped")]
    assert set(records[0]) >= {"file", "line", "text", "verdict", "rules"} and records[0]["file"] == str(path)
    broken = [r for r in records[1]["rules"] if r["status"] == "broken"]
    assert [r["id"] for r in broken] == ["idesc.shape-n"] and "Table 39" in broken[0]["reference"]
    undecided = {r["id"] for r in records[2]["rules"] if r["status"] == "undecided"}
    assert {"idesc.shape-n", "idesc.reserved"} <= undecided
    assert all("idesc" in r["reads"] for r in records[2]["rules"] if r["id"].startswith("idesc."))
    assert records[3]["why"]
    assert report["totals"] == {"instructions": 4, "legal": 2, "illegal": 1, "unparsed": 0, "skipped": 1,
                                "undecided_rule_checks": len(records[2]["rules"])}


def test_legal_input_exits_0_and_reads_stdin(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(MODULE.replace(f"{BAD_N}, 0;", f"{GOOD}, 0;")))
    status, report = lint_json(["-"], capsys)
    assert status == 0 and report["totals"]["illegal"] == 0 and report["files"] == 1


def test_arch_override_overrides_the_module_target_and_arch_does_not(tmp_path, capsys):
    path = tmp_path / "k.ptx"
    path.write_text(MODULE)
    _, report = lint_json([str(path), "--arch-override", "sm_90a"], capsys)
    assert all(any(r["id"] == "target.family" for r in rec["rules"]) for rec in report["instructions"][:3])
    _, report = lint_json([str(path), "--arch", "sm_90a"], capsys)
    assert [rec["arch"] for rec in report["instructions"][:3]] == ["sm_100a"] * 3


def test_inline_asm_is_linted_at_its_source_lines(tmp_path, capsys):
    source = tmp_path / "k.cu"
    source.write_text('__device__ void f(uint32_t d) {\n'
                      '  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 48;" :: "r"(d));\n'
                      '}\n')
    status, report = lint_json([str(source)], capsys)
    assert status == 1
    [record] = report["instructions"]
    assert record["line"] == 2 and [r["id"] for r in record["rules"]] == ["alloc.columns"]


@pytest.mark.parametrize("argv", [["lint", "/nonexistent.ptx"], ["lint", "k.ptx", "--arch", "gfx90a"], ["lint"],
                                  ["import", "/nonexistent.ptx"]])
def test_bad_usage_exits_2(argv, capsys):
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    assert status == 2


def test_generated_kernels_lint_legal_with_their_relocated_operands_undecided(tmp_path, capsys):
    """A kernel loads descriptors and TMEM addresses relative to run-time bases: lint judges the
    qualifiers and leaves the value rules reading them undecided."""
    programs = [p for p in generate_programs(80, 3) if ptx_text(p)[0] == "kernel"][:12]
    paths = []
    for p in programs:
        path = tmp_path / f"{p.case_id}.ptx"
        path.write_text(ptx_text(p)[1])
        paths.append(str(path))
    status, report = lint_json(paths, capsys)
    assert status == 0 and report["totals"]["unparsed"] == 0 and report["totals"]["illegal"] == 0
    assert report["totals"]["undecided_rule_checks"] > 0


@needs_assembler
def test_an_imported_sequence_replays(tmp_path, capsys):
    program = generate_programs(1, 0)[0]
    kernel = tmp_path / "one.ptx"
    kernel.write_text(instruction_module(program))  # its instruction with constant operands, in a drawn spelling
    out = tmp_path / "one.json"
    assert main(["import", str(kernel), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["replay", str(out), "--backend", "oracle", "--backend", "ptxas"]) == 0
    imported = json.loads(out.read_text())
    assert [op["op"] for op in imported["ops"]] == [op.OP for op in program.ops]


def test_import_refuses_operands_that_are_not_constants(tmp_path, capsys):
    path = tmp_path / "k.ptx"
    path.write_text(MODULE.replace(f"{BAD_N}, 0;", f"{GOOD}, 0;"))
    assert main(["import", str(path)]) == 2
    assert "not constant" in capsys.readouterr().err
