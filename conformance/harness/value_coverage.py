"""Value coverage of a run: which value coverpoints (`tcgen05_conformance.core.coverpoints`) its programs
hit, how often, and the first program that hit each; summed per instruction kind and operand
(hit / reachable / not reachable under the run's targets) for summary.json's `value_coverage` and
the reports' value heat map."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Mapping, Sequence

from tcgen05_conformance.core.coverpoints import COVERPOINTS, RUN_TARGETS, hits, reachability
from tcgen05_conformance.core.program import Program


def value_coverage(programs: Sequence[Program], targets: Sequence[str] = RUN_TARGETS) -> dict:
    """summary.json's `value_coverage`: totals, the reachable coverpoints missed, why the others
    are not reachable, each coverpoint's hit count and first case, the per kind x operand counts."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for p in programs:
        for point in hits(p):
            counts[point] += 1
            first.setdefault(point, p.case_id)
    return value_coverage_of_hits(counts, first, targets)


def value_coverage_of_hits(counts: Mapping[str, int], first: Mapping[str, str],
                           targets: Sequence[str] = RUN_TARGETS) -> dict:
    """`value_coverage` from each coverpoint's hit count and first case (the shards' merged, for
    `report merge`)."""
    cells: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    not_reachable, missed = {}, []
    for c in COVERPOINTS:
        reachable, why = reachability(c, targets)
        cell = cells[c.kind][c.operand]
        if not reachable:
            not_reachable[c.id] = why
            cell["not_reachable"] += 1
            continue
        cell["reachable"] += 1
        if counts.get(c.id):
            cell["hit"] += 1
        else:
            missed.append(c.id)
    reachable_total = len(COVERPOINTS) - len(not_reachable)
    return {
        "coverpoints": len(COVERPOINTS),
        "reachable": reachable_total,
        "hit": reachable_total - len(missed),
        "missed": missed,
        "not_reachable": not_reachable,
        "points": {c.id: {"hits": counts.get(c.id, 0), "first_case": first.get(c.id)} for c in COVERPOINTS},
        "per_kind_operand": {kind: {operand: {k: cell[k] for k in ("hit", "reachable", "not_reachable")}
                                    for operand, cell in operands.items()} for kind, operands in cells.items()},
    }
