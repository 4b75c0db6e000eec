"""One probe: a program, the assumption it settles, and what each interpretation predicts.

`Program.meta` is not part of a program's JSON (`tcgen05_conformance.core.program.to_json`), so the record
travels in the program's `label`, which the JSON keeps and the case id ignores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tcgen05_conformance.core.program import Program


@dataclass(frozen=True)
class Probe:
    """`breaks`: the legality rule the program breaks on purpose (None: legal); `refusal`: the
    oracle's one-line refusal without its "ops[k] OP: " prefix (None: the oracle runs it);
    `unmodelled`: the oracle's reason for not modelling an open question (None: it models it);
    `variant`: a file-name suffix where one assumption needs several programs."""

    assumption: str
    program: Program
    question: str
    implemented: str
    alternatives: str
    breaks: str | None = None
    refusal: str | None = None
    unmodelled: str | None = None
    variant: str = ""

    @property
    def name(self) -> str:
        """The file stem: the assumption id, with the variant if any."""
        return f"{self.assumption}.{self.variant}" if self.variant else self.assumption

    @property
    def label(self) -> str:
        legality = f"breaks rule {self.breaks} on purpose" if self.breaks else "legal"
        oracle = (f"refuses it: {self.refusal}" if self.refusal
                  else f"does not model it: {self.unmodelled}" if self.unmodelled else "runs it")
        return (f"{self.name}: {self.question} Implemented interpretation: {self.implemented} "
                f"Alternatives: {self.alternatives} Legality model: {legality}. Oracle: {oracle}.")

    def labelled(self) -> Program:
        return dataclasses.replace(self.program, label=self.label)
