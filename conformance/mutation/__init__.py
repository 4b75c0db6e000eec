"""Mutation testing of the oracle: realistic bugs planted one at a time (`mutants`), and the default
suite run against each to measure what it catches (`suite`; `tcgen05-conformance mutants`).
"""

from __future__ import annotations

from tcgen05_conformance.mutation.mutants import MUTANTS, Mutant
from tcgen05_conformance.mutation.suite import run_mutants, MIN_SCORE

__all__ = ["MIN_SCORE", "MUTANTS", "Mutant", "run_mutants"]
