"""Reading real and hostile sources (issue 30, items 2-3): C++ lexing that no apostrophe,
raw string or macro can derail, a bad statement or file that costs only itself, and PTX read
in linear time and bounded memory."""

from __future__ import annotations

import json
import os
import time

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.ptx.inline_asm import asm_statements
from tcgen05_conformance.core.ptx.parse import Registers, read_ptx, statements

# 9.7.16.7.1: nCols is a power of 2 in [32, 512], so 48 breaks alloc.columns (ptxas rejects it)
ILLEGAL = '"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 48;"'
LEGAL = '"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 64;"'


def lint_json(argv, capsys) -> tuple[int, dict]:
    status = main(["lint", *argv, "--format", "json"])
    return status, json.loads(capsys.readouterr().out)


def _verdicts(tmp_path, capsys, source: str) -> list[tuple[int, str]]:
    path = tmp_path / "k.cu"
    path.write_text(source)
    _, report = lint_json([str(path)], capsys)
    return [(r["line"], r["verdict"]) for r in report["instructions"]]


@pytest.mark.parametrize("before", [
    "constexpr int n = 1'024;",  # a digit separator (C++14)
    "constexpr char c = '\"';",  # a quote inside a character literal
    "constexpr char c = '(';",
    "#if 0\n// don't\nisn't closed\n#endif",  # an apostrophe inside #if 0
    'const char* s = R"x(not "an asm( statement)x";',  # a raw string holding quotes and a parenthesis
    "/* it's a comment */",
    "#define QUOTE(x) #x \\\n   it's continued",  # a continued preprocessor line
])
def test_nothing_before_an_asm_statement_hides_it(tmp_path, capsys, before):
    source = f'{before}\n__device__ void f(unsigned d) {{\n  asm volatile({ILLEGAL} :: "r"(d));\n}}\n'
    line = source.count("\n", 0, source.index("asm volatile")) + 1
    assert _verdicts(tmp_path, capsys, source) == [(line, "illegal")]


def test_raw_string_templates_and_several_statements_on_a_line(tmp_path, capsys):
    source = ('void f(unsigned d) { asm(' + LEGAL + ' :: "r"(d)); asm volatile(' + ILLEGAL + ' :: "r"(d)); }\n'
              'void g(unsigned d) { asm(R"(tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 48;)" :: "r"(d)); }\n')
    assert _verdicts(tmp_path, capsys, source) == [(1, "legal"), (1, "illegal"), (2, "illegal")]


def test_string_macros_are_resolved_and_other_templates_named(tmp_path, capsys):
    source = (f'#define ALLOC {ILLEGAL}\n'
              '#define PREFIX "tcgen05.alloc.cta_group::1"\n'
              'void f(unsigned d) {\n'
              '  asm volatile(ALLOC :: "r"(d));\n'
              '  asm volatile(PREFIX ".sync.aligned.shared::cta.b32 [%0], 48;" :: "r"(d));\n'
              '  asm volatile(make_tcgen05_template() :: "r"(d));\n'
              '  asm volatile(make_cvt_template() :: "r"(d));\n'  # names no tensor-core opcode: not reported
              '}\n')
    path = tmp_path / "k.cu"
    path.write_text(source)
    _, report = lint_json([str(path)], capsys)
    records = report["instructions"]
    assert [(r["line"], r["verdict"]) for r in records] == [(4, "illegal"), (5, "illegal"), (6, "unparsed")]
    assert "make_tcgen05_template" in records[2]["why"]


def test_an_unbalanced_statement_costs_only_itself(tmp_path, capsys):
    source = ('void f(unsigned d) {\n'
              f'  asm volatile({ILLEGAL} :: "r"(d);\n'  # a ")" missing
              f'  asm volatile({ILLEGAL} :: "r"(d));\n'
              '}\n')
    assert _verdicts(tmp_path, capsys, source) == [(2, "unparsed"), (3, "illegal")]


def test_a_bad_file_costs_only_itself(tmp_path, capsys):
    bad = tmp_path / "bad.cu"
    bad.write_bytes(b"asm(\"" + b"9" * 5000 + b"\xff\xfe" + b"\"" * 3 + b"\n")
    good = tmp_path / "good.cu"
    good.write_text(f'void f(unsigned d) {{ asm({ILLEGAL} :: "r"(d)); }}\n')
    status, report = lint_json([str(bad), str(good)], capsys)
    assert status == 1
    assert [(r["file"], r["verdict"]) for r in report["instructions"]][-1] == (str(good), "illegal")


def test_a_literal_of_thousands_of_digits_is_unparsed_not_a_crash():
    [parsed] = read_ptx(".reg .b32 %r<2>;\ntcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r0], "
                        + "9" * 5000 + ";")
    assert parsed.instruction is None and len(parsed.problem) < 200


@pytest.mark.parametrize("size", [20_000, 200_000])
def test_a_long_statement_is_split_in_linear_time(size):
    """Issue 30: a 20 KB `.global` initializer took 29 s (the splitter re-joined its buffer at
    every character)."""
    initializer = ", ".join(["1"] * (size // 3))
    text = f".global .b8 table[{size}] = {{{initializer}}};\n.reg .b32 %r<2>;\n" + "a::b:c::d " * (size // 10) + ";"
    started = time.perf_counter()
    found = statements(text)
    assert time.perf_counter() - started < 2.0
    assert [s.kind for s in found] == ["directive", "directive", "instruction"]


def test_register_ranges_are_not_expanded():
    regs = Registers()
    started = time.perf_counter()
    regs.declare(".reg .b32 %r<400000000>")
    regs.declare(".reg .b64 %q1<4>")  # %q10 ... %q13
    assert time.perf_counter() - started < 0.1
    assert regs.width("%r399999999") == 32 and regs.width("%r400000000") is None
    assert regs.width("%q13") == 64 and regs.width("%q14") is None and regs.width("%q1") is None
    assert regs.width("%r0") == 32 and regs.width("%r01") is None


@pytest.mark.parametrize("command", ["lint", "import"])
@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_what_is_not_a_regular_file_is_refused_on_one_line(tmp_path, capsys, command, kind):
    path = {"device": "/dev/zero", "directory": str(tmp_path)}.get(kind)
    if kind == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    if command == "lint" and kind == "directory":
        return  # lint reads directories (tests/test_lint_ci.py)
    try:
        status = main([command, path])
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "not a regular file" in err


def test_asm_statements_keep_their_preprocessor_guards():
    source = ("#if defined(__CUDA_ARCH_FEAT_SM100_ALL)\n"
              f'asm({LEGAL} :: "r"(d));\n'
              "#else\n"
              f'asm({LEGAL} :: "r"(d));\n'
              "#endif\n")
    first, second = asm_statements(source)
    assert first.guards == ("defined(__CUDA_ARCH_FEAT_SM100_ALL)",)
    assert second.guards == ("!(defined(__CUDA_ARCH_FEAT_SM100_ALL))",)


def test_an_unknown_cta_group_with_a_transposed_8_bit_b_is_judged(tmp_path, capsys):
    """Issue 30: `.cta_group::3` with a transposed 8-bit B ended in a KeyError (exit 3)."""
    from tcgen05_conformance.core.encoding import idesc
    from tcgen05_conformance.core.encoding.idesc import InstrDescriptor

    word = idesc.encode("f8f6f4", InstrDescriptor(m=128, n=64, atype="e4m3", btype="e4m3", transpose_b=True))
    path = tmp_path / "k.ptx"
    path.write_text(".target sm_100a\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
                    f"tcgen05.mma.cta_group::3.kind::f8f6f4 [%r0], %rd1, %rd1, {word}, 1;\n")
    status, report = lint_json([str(path)], capsys)
    assert status == 1 and "syntax.qualifier" in [r["id"] for r in report["instructions"][0]["rules"]]


@pytest.mark.parametrize("source", [
    "asm(" * 20_000 + '"x"' + ")" * 20_000 + ";",  # each asm inside another's parentheses
    "#if 0\n" * 10_000 + f"asm({ILLEGAL});",  # #if nesting 10,000 deep
    "\n" * 500_000 + ".target sm_100a\n",  # blank lines before a directive
])
def test_sources_that_were_quadratic_read_in_linear_time(tmp_path, capsys, source):
    """Found by `fuzz --lint`: each nested asm statement rescanned the rest of the source, each
    #if directive copied the whole condition stack, `^\\s*` re-read every blank line."""
    path = tmp_path / ("k.ptx" if source.startswith("\n") else "k.cu")
    path.write_text(source)
    started = time.perf_counter()
    status, _ = lint_json([str(path)], capsys)
    assert status == 0 and time.perf_counter() - started < 3.0
