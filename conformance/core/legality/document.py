"""docs/legality-rules.md, generated from the rule table so the two cannot drift:
`python -m tcgen05_conformance.core.legality.document > docs/legality-rules.md` (a test checks it)."""

from __future__ import annotations

from tcgen05_conformance.core.legality.rules import ASSEMBLER, PROGRAM, RULES


def rules_markdown() -> str:
    lines = [
        "# Legality rules",
        "",
        "Generated from `conformance/core/legality/rules.py` by `python -m tcgen05_conformance.core.legality.document`;",
        "do not edit by hand. *assembler*: visible in qualifiers, immediates or the target, so ptxas",
        "must reject a violation (checked by `tcgen05-conformance legality`); *oracle*: a property of",
        "runtime register values (descriptors, TMEM addresses) that no assembler sees, enforced by the",
        "legality model, the generators and the oracle. *Checked on* an instruction",
        "(`legality.check`), or on a program: the undefined behaviour of legal instructions as they run",
        "(`legality.undefined_behaviour`: their TMEM allocation, shared memory, CTAs), which the",
        "generators do not draw and the oracle refuses.",
        "",
        f"{sum(r.checked_by == ASSEMBLER for r in RULES.values())} assembler rules, "
        f"{sum(r.checked_by != ASSEMBLER for r in RULES.values())} oracle rules "
        f"({sum(r.scope == PROGRAM for r in RULES.values())} of them checked on programs).",
        "",
        "| rule | checked by | checked on | ISA reference | statement | note |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in RULES.values():
        cells = [f"`{r.id}`", r.checked_by, r.scope, r.reference, r.statement, r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(rules_markdown(), end="")
