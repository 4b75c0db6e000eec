"""`lint`: the legality rules applied to PTX text someone holds: `.ptx` modules, the inline asm
of CUDA C++ sources, whole source trees, or stdin. Each tcgen05 / wgmma / mma.sp instruction
gets a verdict: `legal`, `illegal` (the rules it breaks, with their ISA references) or
`unparsed` (why); tensor-core instructions outside the model (mma.sync, wgmma.fence ...) or
judged for a target outside it (sm_120a) are `skipped` and counted. The value-level rules
(instruction and shared-memory descriptors, zero-column masks, TMEM addresses: Tables 39-55)
are decided where the operand is a constant in the same kernel (an immediate, or a `mov` of
one into the register) and reported as undecided where it is not.

The target of each instruction: `--arch-override`, else the module's `.target` (PTX), else
the innermost arch guard around the asm statement (`__CUDA_ARCH_FEAT_SM100_ALL`,
`CUTE_ARCH_MMA_SM90A_ENABLED`, `__CUDA_ARCH__ >= 1000` ...) or an `smNNN` in the file name
when that target holds the instruction's family, else `--arch`, else the family's first target.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import sys
from dataclasses import dataclass

from tcgen05_conformance.core.inputs import InputError, printable, read_file
from tcgen05_conformance.core.instructions import family
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import RULES, check
from tcgen05_conformance.core.legality.operands import undecided_rules
from tcgen05_conformance.core.ptx.inline_asm import asm_statements, placeholder, read_asm
from tcgen05_conformance.core.ptx.parse import Parsed, read_ptx

CXX_SUFFIXES = (".cu", ".cuh", ".hpp", ".h", ".hh", ".cpp", ".cc", ".cxx", ".hxx", ".inl")
PTX_SUFFIXES = (".ptx",)
FAMILY_TARGETS = {"tcgen05": "sm_100a", "wgmma": "sm_90a", "mma.sp": "sm_90a"}  # without any other hint
STDIN = "-"
MAX_SOURCE_BYTES = 64 << 20  # the largest CUTLASS header is under 1 MB
MAX_TEXT = 240  # characters of an instruction's text a record keeps
VERDICTS = ("legal", "illegal", "unparsed", "skipped")


class LintInputError(ValueError):
    """A path that cannot be linted: the message names it."""


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


def _selected(relative: str, include: list[str], exclude: list[str]) -> bool:
    """Whether a file found under a directory is linted: a PTX or C++ name matching an
    --include glob (when any is given) and no --exclude glob. As in .gitignore, a glob matches
    the path under the directory or any tail of it (`third_party/*`, `*.cuh`, `x.cu`)."""
    parts = relative.replace(os.sep, "/").split("/")
    tails = ["/".join(parts[k:]) for k in range(len(parts))]

    def matches(globs: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(tail, g) for g in globs for tail in tails)

    if not relative.endswith(PTX_SUFFIXES + CXX_SUFFIXES):
        return False
    return (not include or matches(include)) and not matches(exclude)


def expand(paths: list[str], include: list[str] = (), exclude: list[str] = ()) -> list[str]:
    """The files to lint: each named file, and under each named directory (recursively, in name
    order, symbolic links to directories not followed) the selected files. LintInputError,
    before anything is read, for a path that does not exist or is neither a regular file nor
    a directory."""
    files = []
    for path in paths:
        if path == STDIN:
            files.append(path)
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError as e:
            raise LintInputError(f"{printable(path)}: cannot read ({e.strerror})") from None
        if not stat.S_ISDIR(mode):
            if not stat.S_ISREG(mode):  # a FIFO or a device could block or never end
                raise LintInputError(f"{printable(path)}: not a regular file or a directory")
            files.append(path)
            continue
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(root, name)
                if _selected(os.path.relpath(full, path), list(include), list(exclude)):
                    files.append(full)
    return files


def target_name(number: int, suffix: str = "a") -> str:
    """The target an arch number stands for: sm_NNNa where the model knows it, else sm_NNN,
    else sm_NNNa (a target outside the model, whose instructions are skipped)."""
    for name in (f"sm_{number}{suffix}", f"sm_{number}a", f"sm_{number}"):
        if name in TARGETS:
            return name
    return f"sm_{number}{suffix}"


def module_target(text: str) -> str | None:
    """The first target of the module's `.target` directive, known to the model or not."""
    m = re.search(r"^[ \t]*\.target[ \t]+(sm_\d+[af]?)", text, re.M)  # [ \t]: linear over blank lines
    return m.group(1) if m else None


# Arch guards, as CUDA and CUTLASS write them: the number each names (CUDA C++ Programming Guide,
# "Feature Set Compiler Targets": __CUDA_ARCH__ is 10 x the compute capability, and
# __CUDA_ARCH_FEAT_SM100_ALL / __CUDA_ARCH_SPECIFIC__ mark the arch-specific "a" targets).
_GUARD_ARCH = (
    (re.compile(r"__CUDA_ARCH_FEAT_SM(\d+)_ALL"), 1),
    (re.compile(r"__CUDA_ARCH_(?:FAMILY_)?SPECIFIC__\s*==\s*(\d+)"), 10),
    (re.compile(r"__CUDA_ARCH__\s*(?:>=|==)\s*(\d+)"), 10),
    (re.compile(r"(?:\b|_)SM_?(\d{2,3})[AF]?(?=_|\b)"), 1),  # CUTE_ARCH_MMA_SM100A_ENABLED, CUTLASS_ARCH_MMA_SM90A_ENABLED
)
_FILE_ARCH = re.compile(r"(?:^|[^a-z0-9])sm_?(\d{2,3})[af]?(?![0-9])")


def guard_target(guards: tuple[str, ...]) -> str | None:
    """The target the innermost arch guard names (negated guards, `#else` branches, name none)."""
    for text in reversed(guards):
        if text.startswith("!"):
            continue
        for pattern, scale in _GUARD_ARCH:
            m = pattern.search(text)
            if m and int(m.group(1)) % scale == 0:
                return target_name(int(m.group(1)) // scale)
    return None


def file_target(name: str) -> str | None:
    """The target an `smNNN` in the file name names (mma_sm100_umma.hpp: sm_100a)."""
    m = _FILE_ARCH.search(os.path.basename(name).lower())
    return target_name(int(m.group(1))) if m else None


@dataclass(frozen=True)
class Targets:
    """How lint picks each instruction's target: `override` (--arch-override) decides all;
    `stated` (a module's .target) decides its file; a `hint` (an arch guard, the file name)
    decides where its target holds the instruction's family; else `default` (--arch), else
    the family's first target (FAMILY_TARGETS)."""

    override: str | None = None
    default: str | None = None

    def pick(self, fam: str, stated: str | None = None, hints: tuple[str | None, ...] = ()) -> str:
        if self.override or stated:
            return self.override or stated
        for hint in hints:
            if hint is not None and (hint not in TARGETS or fam in TARGETS[hint].families):
                return hint
        return self.default or FAMILY_TARGETS[fam]


def _shorter(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def verdict(parsed: Parsed, file: str, line: int, arch: str | None) -> dict:
    """The JSON record of one instruction, judged for `arch` (None: its family's first target)."""
    record = {"file": file, "line": line, "text": _shorter(parsed.text)}
    if parsed.instruction is None:
        return record | {"verdict": "skipped" if parsed.outside_model else "unparsed", "rules": [],
                         "why": parsed.problem}
    instr = parsed.instruction
    target = arch or FAMILY_TARGETS[family(instr)]
    if target not in TARGETS:
        return record | {"verdict": "skipped", "arch": target, "rules": [],
                         "why": f"{target} is outside the model's targets ({', '.join(TARGETS)})"}
    undecided = undecided_rules(instr, parsed.unknown)
    broken = [v for v in check(instr, target) if v.rule not in undecided]
    rules = [{"id": v.rule, "status": "broken", "reference": v.reference, "checked_by": v.checked_by,
              "message": v.message} for v in broken]
    rules += [{"id": rule, "status": "undecided", "reference": RULES[rule].reference,
               "checked_by": RULES[rule].checked_by, "reads": sorted(fields)}
              for rule, fields in sorted(undecided.items())]
    return record | {"verdict": "illegal" if broken else "legal", "arch": target, "rules": rules}


def _judged(p: Parsed, file: str, line: int, targets: Targets, stated: str | None, hints: tuple) -> dict:
    target = targets.pick(family(p.instruction), stated, hints) if p.instruction is not None else None
    return verdict(p, file, line, target)


def lint_source(source: Source, targets: Targets = Targets()) -> list[dict]:
    """Every tensor-core instruction of one input, in order."""
    named = file_target(source.name)
    if not source.cxx:
        stated = module_target(source.text)
        return [_judged(p, source.name, p.line, targets, stated, (named,)) for p in read_ptx(source.text)]
    records = []
    for statement in asm_statements(source.text):
        if statement.problem:
            records.append({"file": source.name, "line": statement.line, "text": "asm(...)", "verdict": "unparsed",
                            "rules": [], "why": statement.problem})
            continue
        hints = (guard_target(statement.guards), named)
        records += [_asm_operands_named(_judged(p, source.name, statement.source_line(p.offset), targets, None, hints))
                    for p in read_asm(statement)]
    return records


def _asm_operands_named(record: dict) -> dict:
    """An inline-asm record with its operand placeholders written back as %N."""
    for key in ("text", "why"):
        if record.get(key):
            record[key] = re.sub(rf"{re.escape(placeholder(0))[:-1]}(\d+)", r"%\1", record[key])
    return record


def totals(records: list[dict]) -> dict:
    count = {v: sum(r["verdict"] == v for r in records) for v in VERDICTS}
    return {"instructions": len(records), **count,
            "undecided_rule_checks": sum(r["status"] == "undecided" for rec in records for r in rec["rules"])}


def lint(paths: list[str], targets: Targets = Targets(), include: list[str] = (), exclude: list[str] = ()) -> dict:
    """The report of `lint` over the named files and directories. A file that cannot be read
    (or whose reading fails) is listed in `errors` and costs only itself; LintInputError for a
    path that does not exist, before anything is read."""
    files = expand(paths, include, exclude)
    records, errors = [], []
    for name in files:
        try:
            records += lint_source(load(name), targets)
        except LintInputError as e:
            errors.append({"file": printable(name), "problem": str(e)})
        except (ValueError, RecursionError, MemoryError) as e:  # a reader's own failure: this file only
            errors.append({"file": printable(name), "problem": f"{printable(name)}: not read ({type(e).__name__}: "
                                                               f"{printable(str(e))[:120]})"})
    return {"arch": targets.default, "arch_override": targets.override, "files": len(files),
            "instructions": records, "errors": errors, "totals": totals(records)}


def problems(report: dict) -> list[dict]:
    """The records a CI run shows: illegal and unparsed instructions."""
    return [r for r in report["instructions"] if r["verdict"] in ("illegal", "unparsed")]


def format_text(report: dict, verbose: bool = False) -> str:
    """The report as lines for a terminal: the problems (every instruction with `verbose`),
    the files that could not be read, and a summary."""
    lines = []
    shown = report["instructions"] if verbose else problems(report)
    for r in shown:
        where = f"{r['file']}:{r['line']}: {r['verdict']}"
        if r["verdict"] in ("unparsed", "skipped"):
            lines.append(f"{where}: {r['text']}\n    {r['why']}")
            continue
        broken = [x for x in r["rules"] if x["status"] == "broken"]
        undecided = [x for x in r["rules"] if x["status"] == "undecided"]
        lines.append(f"{where} ({r['arch']}){' [' + ', '.join(x['id'] for x in broken) + ']' if broken else ''}: {r['text']}")
        lines += [f"    {x['id']}: {x['message']} ({x['reference']})" for x in broken]
        if undecided and verbose:
            reads = sorted({f for x in undecided for f in x["reads"]})
            lines.append(f"    {len(undecided)} rules undecided: {', '.join(reads)} not constant here")
    lines += [f"{e['problem']}" for e in report["errors"]]
    t = report["totals"]
    lines.append(f"{report['files']} files, {t['instructions']} tensor-core instructions: {t['legal']} legal, "
                 f"{t['illegal']} illegal, {t['unparsed']} unparsed, {t['skipped']} skipped (outside the model or "
                 f"its targets); {t['undecided_rule_checks']} rule checks undecided"
                 + (f"; {len(report['errors'])} files not read" if report["errors"] else ""))
    return "\n".join(lines)
