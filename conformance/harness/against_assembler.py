"""`legality`: the legality model against the assembler on random legal and one-rule-broken
instructions, many instructions per module (one `.entry` each)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from tcgen05_conformance.core.instructions import Instruction
from tcgen05_conformance.core.legality.check import check
from tcgen05_conformance.core.legality.rules import ASSEMBLER, RULES
from tcgen05_conformance.core.ptx.render import render
from tcgen05_conformance.core.ptx.spelling import CANONICAL, Spelling
from tcgen05_conformance.device.assembler import Assembly, assemble_entries, assembler_version
from tcgen05_conformance.device.ptx.kernels import MODULE_PREAMBLE, entry_for
from tcgen05_conformance.generators.instructions import legal_instructions
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.generators.violations import illegal_instructions

BATCH = 500


def assemble_instructions(instrs: list[Instruction], arch: str, progress: Callable[[int], None] | None = None,
                          spellings: list[Spelling] | None = None) -> list[Assembly]:
    """Each instruction (in its spelling, canonical by default) assembled in its own entry, BATCH entries a module."""
    spellings = spellings or [CANONICAL] * len(instrs)
    results: list[Assembly] = []
    for start in range(0, len(instrs), BATCH):
        chunk = list(zip(instrs, spellings))[start:start + BATCH]
        results += assemble_entries([entry_for(i, start + k, s) for k, (i, s) in enumerate(chunk)], arch, MODULE_PREAMBLE)
        if progress:
            progress(len(results))
    return results


@dataclass
class LegalityReport:
    arch: str
    seed: int
    examples: int = 0
    legal: int = 0
    legal_accepted: int = 0
    legal_rejected: int = 0
    illegal: int = 0
    illegal_rejected: int = 0
    illegal_accepted: int = 0
    illegal_oracle_only: int = 0
    oracle_rule_also_rejected: int = 0
    diagnostic_rule_matches: int = 0
    model_disagreements: int = 0
    per_rule: dict = field(default_factory=dict)
    disagreements: list = field(default_factory=list)
    wall_seconds: float = 0.0
    assemble_seconds: float = 0.0
    programs_per_second: float = 0.0
    assembler: str = ""

    def passed(self) -> bool:
        return not (self.legal_rejected or self.illegal_accepted or self.model_disagreements)


def run_legality(arch: str, examples: int, seed: int, progress: Callable[[str], None] | None = None) -> LegalityReport:
    report = LegalityReport(arch=arch, seed=seed, assembler=f"nvJitLink {assembler_version()}")
    started = time.perf_counter()
    n_legal = examples // 2
    legal = draw_examples(legal_instructions(arch), n_legal, seed)
    illegal = draw_examples(illegal_instructions(arch), examples - n_legal, seed + 1)
    if progress:
        progress(f"drew {len(legal)} legal and {len(illegal)} illegal instructions for {arch}")
    instrs = legal + [i for _, i in illegal]
    t0 = time.perf_counter()
    outcomes = assemble_instructions(instrs, arch)
    report.assemble_seconds = time.perf_counter() - t0
    per_rule: dict[str, Counter] = {}

    def note(kind: str, instr: Instruction, outcome: Assembly, rule: str | None = None) -> None:
        if len(report.disagreements) < 20:
            report.disagreements.append({
                "kind": kind, "rule": rule, "ptx": render(instr),
                "model": [str(v) for v in check(instr, arch)],
                "assembler": [d.message for d in outcome.diagnostics][:4],
            })

    for instr, outcome in zip(legal, outcomes[:len(legal)]):
        report.legal += 1
        if check(instr, arch):
            report.model_disagreements += 1
            note("generator made an instruction the model rejects", instr, outcome)
        if outcome.ok:
            report.legal_accepted += 1
        else:
            report.legal_rejected += 1
            note("legal rejected", instr, outcome)
    for (rule, instr), outcome in zip(illegal, outcomes[len(legal):]):
        report.illegal += 1
        counts = per_rule.setdefault(rule, Counter())
        counts["drawn"] += 1
        if RULES[rule].checked_by == ASSEMBLER:
            if outcome.ok:
                report.illegal_accepted += 1
                counts["accepted"] += 1
                note("illegal accepted", instr, outcome, rule)
            else:
                report.illegal_rejected += 1
                counts["rejected"] += 1
                if any(d.rule == rule for d in outcome.diagnostics):
                    report.diagnostic_rule_matches += 1
                    counts["diagnostic_matches_rule"] += 1
        elif outcome.ok:
            report.illegal_oracle_only += 1
            counts["oracle_only"] += 1
        else:
            report.oracle_rule_also_rejected += 1
            counts["rejected_though_oracle_rule"] += 1
            note("assembler also rejects an instruction breaking an oracle rule", instr, outcome, rule)
    report.examples = report.legal + report.illegal
    report.per_rule = {r: dict(c) for r, c in sorted(per_rule.items())}
    report.wall_seconds = time.perf_counter() - started
    report.programs_per_second = report.examples / report.assemble_seconds if report.assemble_seconds else 0.0
    return report
