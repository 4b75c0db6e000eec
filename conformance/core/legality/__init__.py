"""The legality model: every rule an instruction on a target can break, with its ISA reference
and whether the assembler can see it (qualifiers, immediates, target) or only the oracle can
(runtime register values: descriptors, TMEM addresses); and the undefined behaviour of legal
instructions in a program (its TMEM allocation, shared memory, CTAs), checked on the program."""

from tcgen05_conformance.core.legality.check import Violation, check, is_legal
from tcgen05_conformance.core.legality.rules import RULES, Rule
from tcgen05_conformance.core.legality.undefined import undefined_behaviour

__all__ = ["RULES", "Rule", "Violation", "check", "is_legal", "undefined_behaviour"]
