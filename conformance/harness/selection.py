"""Case selection: which of a run's cases `run`, `export` and `replay` keep, by queries over case
ids, instruction families, MMA kinds, shapes, options, targets and labels (as the WebGPU CTS selects
its cases by queries). A query is `KEY=VALUE[,KEY=VALUE...]`: a case matches it when it matches
every term; `--select` given more than once keeps the cases matching any query. A VALUE is a
shell-style pattern (`*`, `?`, `[...]`); an `id` is a prefix of the case id. docs/cli.md lists the
keys with examples. Light to import (the CLI builds its help from `KEYS`): what matching needs is
imported when a query is matched."""

from __future__ import annotations

import fnmatch
import functools
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tcgen05_conformance.core.program import Program

#: What each key matches, as `--help` and docs/cli.md say it.
KEYS: dict[str, str] = {
    "id": "the case id starts with VALUE (hex digits)",
    "family": "an instruction of the program is VALUE (tcgen05.mma, tcgen05.cp, tcgen05.ld, tcgen05.st, "
              "tcgen05.shift, wgmma.mma_async, mma.sp, ...)",
    "kind": "an MMA of the program has kind VALUE (tcgen05.mma: f16, tf32, f8f6f4, i8, mxf8f6f4, mxf4, mxf4nvf4; "
            "wgmma and mma.sp: their kind or A type, e.g. bf16)",
    "shape": "an instruction of the program has shape VALUE: a Table 39 class id (f16.dense.cta1.m128.k16), a Hopper "
             "row (wgmma.mma_async, wgmma.mma_async.sp, mma.sp) or a data-movement form (tcgen05.ld.32x32b)",
    "option": "a tcgen05.mma of the program exercises option VALUE, as the option heat map names them "
              "(a.swizzle=128B, collector=a::fill, ...)",
    "target": "the program's target (sm_100a, sm_103a, sm_90a)",
    "label": "the program's label",
}


class QueryError(ValueError):
    """A query that cannot be read: one line naming the term and what is wrong."""


@dataclass(frozen=True)
class Query:
    """A parsed query: its (key, value) terms, all of which a case must match, and the text as given."""

    terms: tuple[tuple[str, str], ...]
    text: str

    def matches(self, program: Program) -> bool:
        return all(_matches(key, value, program) for key, value in self.terms)


def parse(text: str) -> Query:
    """The query `text` (`KEY=VALUE[,KEY=VALUE...]`), or QueryError saying what is wrong with it."""
    terms = []
    for term in text.split(","):
        key, equals, value = term.strip().partition("=")
        if not equals or not key:
            raise QueryError(f"query {text!r}: {term.strip()!r} is not KEY=VALUE (keys: {', '.join(KEYS)})")
        if key not in KEYS:
            raise QueryError(f"query {text!r}: unknown key {key!r} (keys: {', '.join(KEYS)})")
        if not value:
            raise QueryError(f"query {text!r}: {key}= has no value")
        if key == "id" and not set(value.lower()) <= set(string.hexdigits):
            raise QueryError(f"query {text!r}: id={value} is not a case id prefix (hex digits)")
        terms.append((key, value.lower() if key == "id" else value))
    return Query(tuple(terms), text)


def select(programs: Sequence[Program], queries: Iterable[Query]) -> list[Program]:
    """The programs matching any of `queries`, in their order; all of them when there is none."""
    queries = list(queries)
    return [p for p in programs if not queries or any(q.matches(p) for q in queries)]


def _matches(key: str, value: str, program: Program) -> bool:
    if key == "id":
        return program.case_id.startswith(value)
    return any(fnmatch.fnmatchcase(name, value) for name in NAMES[key](program))


def _families(p: Program) -> set[str]:
    return {op.OP for op in p.ops}


def _kinds(p: Program) -> set[str]:
    from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Mma, WgmmaMma

    kinds = set()
    for op in p.ops:
        if isinstance(op, Tcgen05Mma):
            kinds.add(op.kind)
        elif isinstance(op, (WgmmaMma, MmaSp)):
            kinds.update(k for k in (getattr(op, "kind", None), op.atype) if k)
    return kinds


@functools.cache
def _forms() -> dict:
    from tcgen05_conformance.generators.programs import data_movement_forms

    return data_movement_forms()


def _shapes(p: Program) -> set[str]:
    from tcgen05_conformance.harness.coverage import hopper_row, shape_class_of

    shapes = {s for op in p.ops for s in (shape_class_of(op), hopper_row(op)) if s}
    return shapes | {label for op in p.ops for label, (_, holds) in _forms().items() if holds(op)}


def _options(p: Program) -> set[str]:
    from tcgen05_conformance.core.instructions import Tcgen05Mma
    from tcgen05_conformance.harness.coverage import mma_options

    return {label for op in p.ops if isinstance(op, Tcgen05Mma) for label in mma_options(op)}


NAMES: dict[str, Callable[[Program], Iterable[str]]] = {
    "family": _families,
    "kind": _kinds,
    "shape": _shapes,
    "option": _options,
    "target": lambda p: [p.target],
    "label": lambda p: [p.label],
}
