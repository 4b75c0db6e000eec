"""`lint`: the legality rules applied to PTX text someone holds: a `.ptx` module, the inline asm
of CUDA C++ sources, or stdin. Each tcgen05 / wgmma / mma.sp instruction gets a verdict:
`legal`, `illegal` (the rules it breaks, with their ISA references) or `unparsed` (why). The
value-level rules (instruction and shared-memory descriptors, zero-column masks, TMEM
addresses: Tables 39-55) are decided where the operand is a constant in the same kernel (an
immediate, or a `mov` of one into the register) and reported as undecided where it is not.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from tcgen05_conformance.core.inputs import InputError, read_file
from tcgen05_conformance.core.instructions import family
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import RULES, check
from tcgen05_conformance.core.legality.operands import undecided_rules
from tcgen05_conformance.core.ptx.inline_asm import asm_statements, placeholder, read_asm
from tcgen05_conformance.core.ptx.parse import Parsed, read_ptx

CXX_SUFFIXES = (".cu", ".cuh", ".hpp", ".h", ".hh", ".cpp", ".cc", ".cxx", ".hxx", ".inl")
FAMILY_TARGETS = {"tcgen05": "sm_100a", "wgmma": "sm_90a", "mma.sp": "sm_90a"}  # without --arch or .target
STDIN = "-"
MAX_SOURCE_BYTES = 64 << 20  # the largest CUTLASS header is under 1 MB


class LintInputError(ValueError):
    """A file that cannot be read: the message names it."""


@dataclass(frozen=True)
class Source:
    """One input: its name as given, its text, and whether it is C++ (inline asm) or PTX."""

    name: str
    text: str
    cxx: bool


def load(name: str) -> Source:
    """One input, read through the bounded reader: a regular file of at most MAX_SOURCE_BYTES
    (a directory, FIFO or device is refused on one line), or stdin."""
    if name == STDIN:
        text = sys.stdin.read(MAX_SOURCE_BYTES + 1)
        if len(text) > MAX_SOURCE_BYTES:
            raise LintInputError(f"<stdin>: larger than {MAX_SOURCE_BYTES} bytes")
        return Source("<stdin>", text, False)
    try:
        data = read_file(name, MAX_SOURCE_BYTES)
    except InputError as e:
        raise LintInputError(str(e)) from None
    return Source(name, data.decode("utf-8", errors="replace"), name.endswith(CXX_SUFFIXES))


def module_target(text: str) -> str | None:
    """The first target of the module's `.target` directive, if the model knows it."""
    m = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
    return m.group(1) if m and m.group(1) in TARGETS else None


def verdict(parsed: Parsed, file: str, line: int, arch: str | None) -> dict:
    """The JSON record of one instruction."""
    record = {"file": file, "line": line, "text": parsed.text}
    if parsed.instruction is None:
        return record | {"verdict": "unparsed", "rules": [], "why": parsed.problem}
    instr = parsed.instruction
    target = arch or FAMILY_TARGETS[family(instr)]
    undecided = undecided_rules(instr, parsed.unknown)
    broken = [v for v in check(instr, target) if v.rule not in undecided]
    rules = [{"id": v.rule, "status": "broken", "reference": v.reference, "checked_by": v.checked_by,
              "message": v.message} for v in broken]
    rules += [{"id": rule, "status": "undecided", "reference": RULES[rule].reference,
               "checked_by": RULES[rule].checked_by, "reads": sorted(fields)}
              for rule, fields in sorted(undecided.items())]
    return record | {"verdict": "illegal" if broken else "legal", "arch": target, "rules": rules}


def lint_source(source: Source, arch: str | None) -> list[dict]:
    """Every tensor-core instruction of one input, in order."""
    if not source.cxx:
        target = arch or module_target(source.text)
        return [verdict(p, source.name, p.line, target) for p in read_ptx(source.text)]
    records = []
    for statement in asm_statements(source.text):
        if statement.problem:
            records.append({"file": source.name, "line": statement.line, "text": "asm(...)", "verdict": "unparsed",
                            "rules": [], "why": statement.problem})
            continue
        records += [_asm_operands_named(verdict(p, source.name, statement.source_line(p.offset), arch))
                    for p in read_asm(statement)]
    return records


def _asm_operands_named(record: dict) -> dict:
    """An inline-asm record with its operand placeholders written back as %N."""
    for key in ("text", "why"):
        if record.get(key):
            record[key] = re.sub(rf"{re.escape(placeholder(0))[:-1]}(\d+)", r"%\1", record[key])
    return record


def totals(records: list[dict]) -> dict:
    count = {v: sum(r["verdict"] == v for r in records) for v in ("legal", "illegal", "unparsed")}
    return {"instructions": len(records), **count,
            "undecided_rule_checks": sum(r["status"] == "undecided" for rec in records for r in rec["rules"])}


def lint(names: list[str], arch: str | None) -> dict:
    """The report of `lint` over the named inputs."""
    records = [r for name in names for r in lint_source(load(name), arch)]
    return {"arch": arch, "files": [n if n != STDIN else "<stdin>" for n in names], "instructions": records,
            "totals": totals(records)}


def format_text(report: dict) -> str:
    """The report as lines for a terminal."""
    lines = []
    for r in report["instructions"]:
        where = f"{r['file']}:{r['line']}: {r['verdict']}"
        if r["verdict"] == "unparsed":
            lines.append(f"{where}: {r['text']}\n    {r['why']}")
            continue
        broken = [x for x in r["rules"] if x["status"] == "broken"]
        undecided = [x for x in r["rules"] if x["status"] == "undecided"]
        lines.append(f"{where} ({r['arch']}){' [' + ', '.join(x['id'] for x in broken) + ']' if broken else ''}: {r['text']}")
        lines += [f"    {x['id']}: {x['message']} ({x['reference']})" for x in broken]
        if undecided:
            reads = sorted({f for x in undecided for f in x["reads"]})
            lines.append(f"    {len(undecided)} rules undecided: {', '.join(reads)} not constant here")
    t = report["totals"]
    lines.append(f"{t['instructions']} tensor-core instructions: {t['legal']} legal, {t['illegal']} illegal, "
                 f"{t['unparsed']} unparsed; {t['undecided_rule_checks']} rule checks undecided")
    return "\n".join(lines)
