"""Every instruction type is whole: a PTX renderer, legality rules, oracle semantics (or a place in
the list of types that change no state), a generator strategy and a coverage entry. A type added
to `tcgen05_conformance.core.instructions.INSTRUCTION_TYPES` fails here, naming each missing piece and
where it goes, until the family is complete (docs/architecture.md lists the files in order)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Callable, ClassVar

import pytest

from tcgen05_conformance.core.instructions import INSTRUCTION_TYPES, Instruction, family
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.legality.check import checked_types
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.coverage import COVERED_BY, HEAT_MAPS, NOT_COUNTED
from tcgen05_conformance.core.ptx.parse import READ_TYPES
from tcgen05_conformance.core.ptx.render import render, written_form
from tcgen05_conformance.generators.instructions import STRATEGIES
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import NO_STATE_CHANGE, semantics

PIECES: dict[str, Callable[[type], bool]] = {
    "a PTX renderer (conformance/core/ptx/render.py: @written_form.register)": lambda cls: cls in written_form.registry,
    "a PTX reader (conformance/core/ptx/parse.py: READERS, by its QUALIFIERS entry in spelling.py)":
        lambda cls: cls in READ_TYPES,
    "legality rules (conformance/core/legality/check.py: @_check.register)": lambda cls: cls in checked_types(),
    "oracle semantics (oracles/execute.py: @semantics.register, or NO_STATE_CHANGE)":
        lambda cls: cls in semantics.registry or cls in NO_STATE_CHANGE,
    "a generator strategy (generators/instructions.py: STRATEGIES)": lambda cls: cls in STRATEGIES,
    "a coverage entry (conformance/harness/coverage.py: COVERED_BY or NOT_COUNTED)":
        lambda cls: cls in COVERED_BY or cls in NOT_COUNTED,
}
TYPES = list(INSTRUCTION_TYPES.values())


def missing_pieces(cls: type) -> list[str]:
    return [piece for piece, present in PIECES.items() if not present(cls)]


@pytest.mark.parametrize("cls", TYPES, ids=list(INSTRUCTION_TYPES))
def test_every_instruction_type_has_every_piece(cls):
    missing = missing_pieces(cls)
    assert not missing, f"{cls.__name__} ({cls.OP}) lacks " + "; ".join(missing)


def test_a_new_instruction_type_is_named_with_every_missing_piece():
    @dataclass(frozen=True)
    class Tcgen05Fake:
        OP: ClassVar[str] = "tcgen05.fake"

    assert missing_pieces(Tcgen05Fake) == list(PIECES)


def test_the_registries_hold_only_instruction_types_and_agree_with_the_union():
    assert set(typing.get_args(Instruction)) == set(TYPES)
    assert all(cls.OP == op for op, cls in INSTRUCTION_TYPES.items())
    registered = {
        "render": set(written_form.registry) - {object},
        "parse": set(READ_TYPES),
        "legality": set(checked_types()),
        "semantics": (set(semantics.registry) - {object}) | set(NO_STATE_CHANGE),
        "strategies": set(STRATEGIES),
        "coverage": set(COVERED_BY) | set(NOT_COUNTED),
    }
    assert {name: types - set(TYPES) for name, types in registered.items()} == {name: set() for name in registered}
    assert not set(semantics.registry) & set(NO_STATE_CHANGE)
    assert not set(COVERED_BY) & NOT_COUNTED
    assert all(name in HEAT_MAPS for names in COVERED_BY.values() for name in names)


def _target_for(cls: type) -> str:
    """The first target with the type's family (and tcgen05.shift's feature)."""
    return next(name for name, t in TARGETS.items()
                if family(cls) in t.families and (cls.OP != "tcgen05.shift" or cls.OP in t.features))


@pytest.mark.parametrize("cls", TYPES, ids=list(INSTRUCTION_TYPES))
def test_the_pieces_work_together(cls):
    """What the strategy draws is of the type, legal, renders as its opcode, and fills a cell of
    each heat map that claims to count it."""
    target = _target_for(cls)
    for op in draw_examples(STRATEGIES[cls](target), 5, 0):
        assert type(op) is cls
        assert check(op, target) == [], op
        assert render(op).startswith(cls.OP), render(op)
        for name in COVERED_BY.get(cls, ()):
            assert HEAT_MAPS[name].cells(Program(target, (op,))), (name, op)
