"""The `ptxas` backend: does the assembler accept the program's kernel for its target?

Compile only (nvJitLink in-process, no GPU). It observes whether the kernel assembled and, when
not, the assembler's diagnostics with the legality rule each maps to; the harness compares that
with the legality model (`tcgen05_conformance.harness.judge`): a legal program must assemble, an illegal
one fails naming its rule."""

from __future__ import annotations

from typing import Sequence

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.against_assembler import assemble_instructions
from tcgen05_conformance.harness.backends.base import ASSEMBLY, Observation, Progress, observe_each
from tcgen05_conformance.device.assembler import AssemblerUnavailable, Assembly, assemble, assembler_version
from tcgen05_conformance.device.ptx.kernels import UnsupportedProgram, instruction_spellings, kernel


class PtxasBackend:
    name = "ptxas"
    observes = ASSEMBLY

    def __init__(self, profile: str | None = None):
        """`profile` is not used: assembling does not depend on numerics."""

    def unavailable_reason(self) -> str | None:
        try:
            assembler_version()
        except AssemblerUnavailable as e:
            return str(e)
        return None

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        return observe_each(self.observe_one, programs, progress)

    def observe_one(self, p: Program) -> Observation:
        """Whether `p`'s kernel assembles; a program the kernel generator cannot express
        (tcgen05.ld / .st: the kernel issues its own) is assembled one instruction per entry, as
        `legality` does, and passes when every entry does."""
        try:
            text = kernel(p)
        except UnsupportedProgram as e:
            outcomes = assemble_instructions(list(p.ops), p.target, spellings=instruction_spellings(p))
            bad = next((o for o in outcomes if not o.ok), None)
            return self.observation(p, bad, {"note": f"assembled instruction by instruction ({e})"})
        outcome = assemble(text, p.target)
        return self.observation(p, None if outcome.ok else outcome, {"ptx_lines": text.count("\n")})

    @staticmethod
    def observation(p: Program, rejected: Assembly | None, accepted: dict) -> Observation:
        """Assembled (with `accepted` as its data), or rejected with the diagnostics of `rejected`."""
        if rejected is None:
            return Observation(p.case_id, assembled=True, data=accepted)
        diagnostics = [{"message": d.message, "rule": d.rule} for d in rejected.diagnostics]
        return Observation(p.case_id, assembled=False, data={"diagnostics": diagnostics, "log": rejected.log.strip()[:200]})
