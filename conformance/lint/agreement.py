"""The parser and `lint` against the assembler: random legal and one-rule-broken instructions,
each written in a randomly drawn spelling ptxas accepts, are assembled (many entries a module)
and linted from the same text. Measured: whether the parser reads every one back into the very
instruction that was written, and whether lint's verdict equals ptxas's wherever ptxas decides
(ptxas sees qualifiers, immediates and the target; the value-level rules of Tables 39-55 are
lint's alone, and counted apart).

    tcgen05-conformance lint-agreement --arch sm_100a --count 5000 --out reports/lint-agreement/agreement-sm_100a.json
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Callable

from tcgen05_conformance.core.instructions import Tcgen05Alloc, Tcgen05Commit, Tcgen05Dealloc, Tcgen05Mma
from tcgen05_conformance.core.legality.rules import ASSEMBLER
from tcgen05_conformance.core.ptx.parse import read_ptx
from tcgen05_conformance.core.ptx.render import draw_spelling, head, spell
from tcgen05_conformance.core.ptx.spelling import Spelling
from tcgen05_conformance.harness.against_assembler import assemble_instructions
from tcgen05_conformance.lint.verdicts import verdict
from tcgen05_conformance.device.assembler import assembler_version
from tcgen05_conformance.device.ptx.kernels import MODULE_PREAMBLE, entry_for
from tcgen05_conformance.generators.instructions import legal_instructions
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.generators.violations import illegal_instructions


def spelling_features(instr, s: Spelling) -> list[str]:
    """What is not canonical about one written instruction, and the forms issue 14 names."""
    out = []
    out += ["qualifier order"] if head(instr, s) != head(instr) else []
    out += [f"immediate {f}" for f in sorted(s.immediates)]
    out += [f"[reg+imm] {f}" for f, _ in s.offsets]
    out += [f"negated {f}" for f in sorted(s.negated)]
    out += ["immediates in disable-output-lane"] if s.lanes_immediate else []
    out += ["shared address as symbol"] if s.address_symbol else []
    out += ["sparsity metadata as {%r}"] if s.metadata_braces else []
    out += ["guard"] if s.guard else []
    out += [f"{s.notation} notation"] + (["U suffix"] if s.unsigned_suffix else [])
    if isinstance(instr, (Tcgen05Alloc, Tcgen05Commit)):
        space = instr.state_space or "generic"
        out.append(f"{instr.OP} {space} address, {instr.address_bits}-bit")
    if isinstance(instr, (Tcgen05Alloc, Tcgen05Dealloc)) and instr.columns_register:
        out.append(f"{instr.OP} nCols in a register")
    if isinstance(instr, Tcgen05Mma) and s.order is not None:
        order = list(s.order)
        if instr.ashift and instr.collector and order.index(f"collector::{instr.collector}") < order.index("ashift"):
            out.append("collector before ashift")
    return out


def run(arch: str, examples: int, seed: int, progress: Callable[[str], None] = lambda message: None) -> dict:
    started = time.perf_counter()
    n_legal = examples // 2
    legal = [(None, i) for i in draw_examples(legal_instructions(arch), n_legal, seed)]
    illegal = draw_examples(illegal_instructions(arch), examples - n_legal, seed + 1)
    drawn = legal + illegal
    drawn_at = time.perf_counter()
    progress(f"{arch}: drew {len(legal)} legal and {len(illegal)} one-rule-broken instructions in {drawn_at - started:.0f} s")
    spellings = [draw_spelling(i, random.Random(f"{seed}:{k}")) for k, (_, i) in enumerate(drawn)]
    outcomes = assemble_instructions([i for _, i in drawn], arch, spellings=spellings)
    assembled_at = time.perf_counter()
    progress(f"{arch}: assembled in {assembled_at - drawn_at:.0f} s")
    counts: Counter = Counter()
    per_rule: dict[str, Counter] = {}
    features: Counter = Counter()
    disagreements = []
    for k, ((rule, instr), s, outcome) in enumerate(zip(drawn, spellings, outcomes)):
        text = MODULE_PREAMBLE + entry_for(instr, k, s)
        parsed = read_ptx(text)
        features.update(spelling_features(instr, s))
        counts["instructions"] += 1
        counts["legal drawn" if rule is None else "one-rule-broken drawn"] += 1
        exact = len(parsed) == 1 and parsed[0].instruction == instr and not parsed[0].unknown
        counts["parsed back exactly" if exact else "parsed back differently"] += 1
        record = verdict(parsed[0], "", parsed[0].line, arch) if parsed else {"verdict": "unparsed", "rules": []}
        broken = [r for r in record["rules"] if r["status"] == "broken"]
        lint_rejects = any(r["checked_by"] == ASSEMBLER for r in broken)
        counts[f"lint {record['verdict']}"] += 1
        counts["ptxas accepted" if outcome.ok else "ptxas rejected"] += 1
        if outcome.ok and broken and not lint_rejects:
            counts["lint illegal by a value-level rule ptxas cannot see"] += 1
        agree = lint_rejects == (not outcome.ok)
        counts["lint agrees with ptxas" if agree else "lint disagrees with ptxas"] += 1
        if rule is not None:
            c = per_rule.setdefault(rule, Counter())
            c["drawn"] += 1
            c["lint names the rule"] += any(r["id"] == rule for r in broken)
            c["ptxas rejected"] += not outcome.ok
            c["lint agrees with ptxas"] += agree
        if (not agree or not exact) and len(disagreements) < 20:
            disagreements.append({"rule": rule, "ptx": spell(instr, s).line, "exact_parse": exact,
                                  "lint": record["verdict"], "lint_rules": [r["id"] for r in broken],
                                  "ptxas": [d.message for d in outcome.diagnostics][:3]})
    return {
        "arch": arch, "seed": seed, "assembler": f"nvJitLink {assembler_version()}",
        "counts": dict(counts), "per_rule": {r: dict(c) for r, c in sorted(per_rule.items())},
        "spellings": dict(sorted(features.items())), "disagreements": disagreements,
        "seconds": {"draw": round(drawn_at - started, 1), "assemble": round(assembled_at - drawn_at, 1),
                    "parse_and_lint": round(time.perf_counter() - assembled_at, 1)},
    }


def passed(report: dict) -> bool:
    """Every instruction read back exactly and lint's verdict equal to ptxas's on every one."""
    c = report["counts"]
    return c.get("parsed back exactly", 0) == c["instructions"] and not c.get("lint disagrees with ptxas")
