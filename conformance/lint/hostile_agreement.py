"""Lint against ptxas on a hostile corpus (issue 30): one-token mutations (`mutations.py`) of
legal instructions written in drawn accepted spellings, each assembled by ptxas in a child
process (ptxas crashes on some) and linted from the same text. What must never happen: lint
says `legal` where ptxas rejects, or names a rule the assembler checks where ptxas accepts.
Everything else (`unparsed`, `illegal` by a value-level rule ptxas cannot see) is allowed and
counted.

    tcgen05-conformance lint-agreement --hostile --arch sm_100a --count 6000 --out reports/lint-hostile-agreement/hostile-sm_100a.json
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from tcgen05_conformance.core.legality.rules import ASSEMBLER
from tcgen05_conformance.core.ptx.parse import read_ptx, statements
from tcgen05_conformance.core.ptx.render import draw_spelling, spell
from tcgen05_conformance.device.assembler import assemble_entries, assembler_version
from tcgen05_conformance.device.ptx.kernels import MODULE_PREAMBLE, entry_for
from tcgen05_conformance.generators.instructions import legal_instructions
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.lint.mutations import CLASSES, mutate
from tcgen05_conformance.lint.verdicts import verdict

MUTANTS_PER_INSTRUCTION = 14  # two of each token class
MODULE_ENTRIES = 250
CRASHED = "crashed"


def _assemble_here(bodies: list[str], arch: str) -> list[tuple[bool, str]]:
    """Each entry's verdict. An entry of a module that failed is accepted only once a module
    of the entries without diagnostics assembles: ptxas stops at parse errors, so an entry it
    said nothing about may fail a later stage (a fatal 'intrinsic PREAD offset mismatch')."""
    results = [(r.ok, "; ".join(d.message for d in r.diagnostics)[:200])
               for r in assemble_entries(bodies, arch, MODULE_PREAMBLE)]
    silent = [k for k, (ok, _) in enumerate(results) if ok]
    if 0 < len(silent) < len(bodies):
        for k, again in zip(silent, _assemble_here([bodies[k] for k in silent], arch)):
            results[k] = again
    return results


def assemble_in_children(bodies: list[str], arch: str) -> list[tuple[bool | str, str]]:
    """ptxas's verdict on each entry: (True | False | CRASHED, its first messages). Each module
    is assembled in a child process; one whose child dies is split until the entry that
    crashes the assembler stands alone."""
    if not bodies:
        return []
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        try:
            return pool.submit(_assemble_here, bodies, arch).result()
        except BrokenProcessPool:
            pass
    if len(bodies) == 1:
        return [(CRASHED, "the assembler's process died")]
    half = len(bodies) // 2
    return assemble_in_children(bodies[:half], arch) + assemble_in_children(bodies[half:], arch)


def corpus(arch: str, count: int, seed: int) -> list[tuple[str, str, str]]:
    """`count` mutants: (token class, change, the entry holding the mutated line)."""
    bases = draw_examples(legal_instructions(arch), count // (MUTANTS_PER_INSTRUCTION // 2) + 1, seed)
    rng = random.Random(f"hostile:{arch}:{seed}")
    out = []
    for k, instr in enumerate(bases):
        spelling = draw_spelling(instr, random.Random(f"{seed}:{k}"))
        line = spell(instr, spelling).line
        entry = entry_for(instr, k, spelling)
        made = 0
        for j in range(MUTANTS_PER_INSTRUCTION * 3):  # a class without a token here gives nothing: try again
            if made == MUTANTS_PER_INSTRUCTION or len(out) == count:
                break
            m = mutate(line, CLASSES[j % len(CLASSES)], rng)
            if m is not None:
                out.append((m.token_class, m.change, entry.replace(f"  {line}\n", f"  {m.line}\n"), k))
                made += 1
    return [(c, change, e.replace(f".entry k{k}()", f".entry m{n}()")) for n, (c, change, e, k) in enumerate(out)]


def lint_verdict(entry: str, arch: str) -> dict:
    """Lint's record of the mutated line (the entry's line before `ret;`): its last tensor-core
    instruction's; verdict "none" when lint sees no tensor-core instruction there, or when a
    mutation split the line into statements some of which are not tensor-core instructions
    (lint judges those alone, so it has said nothing of the whole line)."""
    text = MODULE_PREAMBLE + entry
    line = text.count("\n") - 1
    parsed = [p for p in read_ptx(text) if p.line == line]
    judged = [s for s in statements(text) if s.line == line and s.kind == "instruction"]
    if not parsed:
        return {"verdict": "none", "rules": []}
    if len(judged) > len(parsed):
        return {"verdict": "none", "rules": [], "why": "the line holds statements lint does not judge"}
    p = parsed[-1]
    return verdict(p, "", p.line, arch)


def run(arch: str, count: int, seed: int, progress: Callable[[str], None] = lambda message: None) -> dict:
    started = time.perf_counter()
    mutants = corpus(arch, count, seed)
    drawn_at = time.perf_counter()
    progress(f"{arch}: {len(mutants)} mutants in {drawn_at - started:.0f} s")
    outcomes = []
    for k in range(0, len(mutants), MODULE_ENTRIES):
        outcomes += assemble_in_children([e for _, _, e in mutants[k:k + MODULE_ENTRIES]], arch)
        progress(f"{arch}: assembled {len(outcomes)} of {len(mutants)}")
    assembled_at = time.perf_counter()
    counts: Counter = Counter()
    per_class: dict[str, Counter] = {}
    wrong = []
    for (token_class, change, entry), (ok, messages) in zip(mutants, outcomes):
        record = lint_verdict(entry, arch)
        broken = [r for r in record["rules"] if r["status"] == "broken"]
        by_assembler = any(r["checked_by"] == ASSEMBLER for r in broken)
        ptxas = "ptxas accepted" if ok is True else "ptxas crashed" if ok == CRASHED else "ptxas rejected"
        lint = ("lint illegal (an assembler rule)" if by_assembler else
                "lint illegal (value-level rules only)" if broken else f"lint {record['verdict']}")
        c = per_class.setdefault(token_class, Counter())
        for counter in (counts, c):
            counter["mutants"] += 1
            counter[ptxas] += 1
            counter[f"{ptxas}, {lint}"] += 1
        legal_but_rejected = ok is not True and record["verdict"] == "legal"
        assembler_rule_but_accepted = ok is True and by_assembler
        if legal_but_rejected or assembler_rule_but_accepted:
            counts["wrong: legal where ptxas rejects" if legal_but_rejected
                   else "wrong: an assembler rule where ptxas accepts"] += 1
            if len(wrong) < 40:
                wrong.append({"class": token_class, "change": change, "line": entry.splitlines()[-3].strip(),
                              "ptxas": ptxas, "ptxas_messages": messages, "lint": lint,
                              "lint_rules": [r["id"] for r in broken]})
    return {
        "arch": arch, "seed": seed, "assembler": f"nvJitLink {assembler_version()}",
        "counts": dict(sorted(counts.items())), "per_class": {k: dict(sorted(v.items())) for k, v in sorted(per_class.items())},
        "wrong": wrong,
        "seconds": {"draw_and_mutate": round(drawn_at - started, 1), "assemble": round(assembled_at - drawn_at, 1),
                    "lint": round(time.perf_counter() - assembled_at, 1)},
    }


def passed(report: dict) -> bool:
    """No `legal` where ptxas rejects and no assembler rule where ptxas accepts."""
    c = report["counts"]
    return not c.get("wrong: legal where ptxas rejects") and not c.get("wrong: an assembler rule where ptxas accepts")
