"""Fuzz `lint` and `import` (issue 30, item 3): PTX and CUDA C++ text from three sources through
the commands, in-process, counted. Hypothesis text drawn from the tokens that derail readers
(quotes, apostrophes, raw strings, `#if 0`, continued lines, brackets, register ranges, long
literals); real lines spliced (the asm lines of CUTLASS's headers, when the nvidia-cutlass wheel
is installed, and the renderer's spellings of drawn instructions), cut and shuffled; and
hand-made hostile files (a 100 KB statement, a 5,000-digit literal, `%r<400000000>`, nesting
100,000 deep, invalid UTF-8 ...), each also cut at a drawn point.

Each input ends one of four ways: accepted (exit 0 or 1 with a report), refused (exit 2 with one
line on stderr), a traceback, or a hang (still running after the time limit). Done when there
are no tracebacks and no hangs. Run by `tcgen05-conformance fuzz --lint`.
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import tempfile
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st

from tcgen05_conformance.fuzz.inputs import (
    ACCEPTED, HANG, REFUSED, TOP_OUTCOMES, TRACEBACK, Broken, Hang, count_outcomes, limited_memory,
)

SUFFIXES = (".cu", ".cuh", ".hpp", ".ptx")
SPELLED = 60  # drawn instructions a target whose spellings are spliced
# Tokens that have derailed C++ and PTX readers (issue 30), and the pieces of real statements.
TOKENS = (
    "asm", "asm volatile", "__asm__", "(", ")", '"', "'", "'\"'", "1'024", "0x1'000", 'R"(', ')"', 'R"x(', ')x"',
    "#if 0\n", "#if 1\n", "#else\n", "#endif\n", "#define T ", "\\\n", "//", "/*", "*/", "\n", " ", ";", ";;", ":", "::",
    ",", "{", "}", "[", "]", "%", "%0", "%1", "%[x]", "%%", "%=", '"r"(x)', '"l"(x)', '"n"(4)', '"=r"(y)',
    ".reg .b32 %r<4>;", ".reg .b64 %rd<400000000>;", ".reg .pred %p;", ".shared .b64 bar;", ".target sm_100a\n",
    ".target sm_120a\n", "@%p ", "@!%r0 ", "tcgen05.mma.cta_group::1.kind::f16", "tcgen05.alloc.cta_group::1.sync.aligned",
    ".shared::cta.b32", "[%r0]", "[%r0+-16]", "[16]", "%rd1", "%r1", "{%r0, %r1}", "48", "0xffffffffffffffff",
    "9" * 60, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "{%f0, %f1, %f2, %f3}", "mma.sp.sync.aligned",
    "tcgen05.ld.sync.aligned.32x32b.x2.b32", "\t", "\r\n", "\x00", "\u2028", "é",
)


def hostile_files() -> list[tuple[str, bytes]]:
    """Hand-made hostile inputs: (suffix, bytes)."""
    alloc = "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r0], 48;"
    return [
        (".ptx", (".global .b8 t[20000] = {" + ", ".join(["1"] * 20000) + "};\n").encode()),
        (".ptx", ("tcgen05.mma " + "a::b:c, " * 12500 + ";\n").encode()),
        (".ptx", (".reg .b32 %r<2>;\n" + alloc.replace("48", "9" * 5000) + "\n").encode()),
        (".ptx", b".reg .b32 %r<400000000>;\n" + alloc.encode() + b"\n"),
        (".ptx", b"{" * 100_000 + b"\n" + alloc.encode() + b"\n" + b"}" * 100_000),
        (".ptx", b"[" * 100_000 + b"]" * 100_000),
        (".cu", b"asm(" * 50_000 + b'"' + alloc.encode() + b'"' + b")" * 50_000 + b";"),
        (".cu", b"asm volatile(\"" + alloc.encode() + b"\" :: \"r\"(d);\n" * 2000),
        (".cu", b"'" * 1_000_000),
        (".cu", b'R"(' + b"x" * 100_000),
        (".cu", b"#if 0\n" * 10_000 + b'asm("' + alloc.encode() + b'");'),
        (".cu", b"#define A A B\n#define B A\nasm(A);\n"),
        (".cu", b"#define S \"" + alloc.encode() + b"\"\n" + b"asm(S S S S S S S S :: \"r\"(d));\n" * 500),
        (".cu", b"\xff\xfe\x00\x00" * 10_000 + b'asm("' + alloc.encode() + b'");'),
        (".cu", ("asm(\"" + alloc + "\" :: " + ", ".join(['"r"(x)'] * 5000) + ");").encode()),
        (".cu", b'asm("%' + b"9" * 4400 + b'");'),
        (".hpp", b"\\\n" * 100_000 + b'asm("' + alloc.encode() + b'");'),
        (".ptx", b"/*" * 100_000),
        (".ptx", b"\x00" * 100_000),
        (".ptx", b"\n" * 1_000_000),
    ]


def real_lines() -> list[str]:
    """Real statement lines: the inline asm lines of CUTLASS's headers (when the nvidia-cutlass
    wheel is installed) and the renderer's spellings of drawn tensor-core instructions."""
    from tcgen05_conformance.core.ptx.render import draw_spelling, spell
    from tcgen05_conformance.generators.instructions import legal_instructions
    from tcgen05_conformance.generators.sampling import draw_examples

    lines = []
    for target in ("sm_100a", "sm_103a", "sm_90a"):
        for k, instr in enumerate(draw_examples(legal_instructions(target), SPELLED, 0)):
            lines += spell(instr, draw_spelling(instr, random.Random(k))).lines
    try:
        import cutlass_library
        include = Path(cutlass_library.__file__).parent / "source" / "include" / "cute" / "arch"
    except ImportError:
        return lines
    for path in sorted(include.glob("*sm1*.hpp")) + sorted(include.glob("*sm90*.hpp")):
        lines += [line for line in path.read_text(errors="replace").splitlines()
                  if "asm" in line or "tcgen05" in line or "wgmma" in line or '"r"' in line or line.strip().startswith("#")]
    return lines


def inputs(lines: list[str]) -> st.SearchStrategy:
    """(suffix, bytes): Hypothesis text of TOKENS, spliced real lines, or a hand-made hostile file."""
    text = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=80).map("".join)
    spliced = st.lists(st.sampled_from(lines), min_size=1, max_size=40).flatmap(
        lambda chosen: st.tuples(st.just("\n".join(chosen)), st.integers(0, sum(map(len, chosen))),
                                 st.sampled_from(("", "asm volatile(\"", "\"", "'", "#if 0\n", "(", ")", ";", "{", "}"))))
    cut = spliced.map(lambda d: d[0][:d[1]] + d[2] + d[0][d[1]:])
    hostile = st.sampled_from(hostile_files()).flatmap(
        lambda f: st.tuples(st.just(f[0]), st.sampled_from((len(f[1]), len(f[1]) // 2, len(f[1]) // 3, 7))).map(
            lambda d: (d[0], f[1][:d[1]])))
    as_file = st.tuples(st.sampled_from(SUFFIXES), st.one_of(text, cut).map(lambda t: t.encode("utf-8", "surrogatepass")))
    return st.one_of(as_file, as_file, hostile)


def outcome(command: Callable[[list[str]], int], drawn: tuple[str, bytes], work: Path) -> tuple[str, str]:
    """Lint the input as a file (and import it, when it is PTX) through `command` (the command
    line's main): accepted or refused, and why."""
    suffix, data = drawn
    path = work / f"input{suffix}"
    path.write_bytes(data)
    results = []
    for argv in (["lint", str(path), "--format", "json"], ["import", str(path)]) if suffix == ".ptx" else (
            ["lint", str(path), "--format", "json"],):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = command(argv)
            except SystemExit as e:
                status = e.code
        message = err.getvalue().strip()
        if status == 3 and "internal error: Hang:" in message:  # the deadline fired inside the command
            raise Hang(message)
        if status == 2:
            if "\n" in message or not message:
                raise Broken(f"{argv[0]}: exit 2 without one line on stderr: {message[:200]!r}")
            results.append(f"{argv[0]} refused")
        elif status in (0, 1) and argv[0] == "lint":
            if '"totals"' not in out.getvalue():
                raise Broken(f"lint exit {status} without a report")
            results.append("lint judged")
        elif status in (0,) and argv[0] == "import":
            results.append("import accepted")
        else:
            raise Broken(f"{argv[0]} ended with exit status {status}: {message[:200]!r}")
    return (REFUSED if all(r.endswith("refused") for r in results) else ACCEPTED), ", ".join(results)


def measure(command: Callable[[list[str]], int], examples: int, seed: int, limit: float, log=None) -> dict:
    """`examples` inputs through lint (and import) by `command` (the command line's main): the
    counts of each outcome."""
    log = log or sys.stderr
    lines = real_lines()
    print(f"lint: {len(lines)} real lines to splice, {len(hostile_files())} hand-made hostile files", file=log, flush=True)
    with limited_memory(), tempfile.TemporaryDirectory(prefix="fuzz-lint-") as tmp:
        report = count_outcomes(inputs(lines), lambda drawn: outcome(command, drawn, Path(tmp)), examples, seed, limit, log)
    return {"lint": {**report, "real_lines": len(lines), "hostile_files": len(hostile_files())}}


def markdown(report: dict) -> str:
    """The report as a page: the counts, any traceback or hang, the commonest outcomes."""
    r = report["lint"]
    lines = ["# Fuzzing `lint` and `import`", "", f"`{report['command']}` on {report['machine']}", "",
             f"Inputs: Hypothesis text of reader-derailing tokens, {r['real_lines']} real lines spliced and cut, "
             f"{r['hostile_files']} hand-made hostile files (whole and cut); .ptx inputs go through lint and import.", "",
             "| surface | inputs | judged or accepted | refused (one line) | tracebacks | hangs | seconds |",
             "| --- | --- | --- | --- | --- | --- | --- |",
             f"| lint, import | {r['inputs']} | {r[ACCEPTED]} | {r[REFUSED]} | {r[TRACEBACK]} | {r[HANG]} | {r['seconds']} |", ""]
    lines += [f"- {f['outcome']}: {f['detail']}" for f in r["failures"]]
    lines += ["", f"The {TOP_OUTCOMES} commonest outcomes", "", "| inputs | outcome |", "| --- | --- |"]
    lines += [f"| {n} | {reason} |" for reason, n in list(r["outcomes"].items())[:TOP_OUTCOMES]]
    return "\n".join(lines) + "\n"

