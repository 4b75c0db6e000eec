"""Data-movement programs of a run: one per form (each tcgen05.cp shape, multicast and
decompression format, each ld/st shape, each .ld.red type, shift), legal, defined, and assembled
by the ptxas backend (instruction by instruction where the program kernel cannot hold them), as
the harness judges it."""

from __future__ import annotations

from collections import Counter

import pytest

from tcgen05_conformance.core.instructions import Tcgen05Shift
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.harness.coverage import coverage
from tcgen05_conformance.harness.runner import execute, target_with
from tcgen05_conformance.generators import instructions as legal
from tcgen05_conformance.generators.programs import data_movement_forms, data_movement_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run
from tests.conftest import needs_assembler

FORMS = data_movement_forms()


def test_the_forms_are_the_isa_tables():
    """Counted from the data-movement tables independently of how the forms are built."""
    cp = sum(len(s.multicasts) for s in dm.CP_SHAPES.values()) + len(dm.CP_DECOMPRESS)
    assert len(FORMS) == cp + 2 * len(dm.LDST_SHAPES) + len(dm.LD_RED_TYPES) + 1
    assert {"tcgen05.cp.64x128b.warpx2::02_13", "tcgen05.cp.b4x16_p64", "tcgen05.ld.16x256b", "tcgen05.ld.red.s32",
            "tcgen05.st.16x64b", "tcgen05.shift"} <= set(FORMS)


def _forms_by_hand(op) -> set[str]:
    """The form labels of one data-movement instruction, read off its fields."""
    if op.OP == "tcgen05.cp":
        return {f"tcgen05.cp.{op.shape}" + (f".{op.multicast}" if op.multicast else "")} | (
            {f"tcgen05.cp.{op.src_fmt}"} if op.src_fmt else set())
    if op.OP == "tcgen05.ld" and op.red_op is not None:
        return {f"tcgen05.ld.red.{op.red_type}"}
    return {op.OP} if op.OP == "tcgen05.shift" else {f"{op.OP}.{op.shape}"}


def test_each_form_matches_exactly_the_instructions_of_that_form():
    """A plain tcgen05.ld (whose red_type field defaults to f32) is no .ld.red form, and every
    drawn data-movement instruction is of the forms its fields name."""
    ops = [op for target in TCGEN05_TARGETS for strategy in (legal.tcgen05_cp, legal.tcgen05_ld, legal.tcgen05_st)
           for op in draw_examples(strategy(target), 60, 3)]
    ops += draw_examples(legal.STRATEGIES[Tcgen05Shift]("sm_100a"), 5, 3)
    assert any(op.OP == "tcgen05.ld" and op.red_op is None and op.red_type == "f32" for op in ops)
    for op in ops:
        assert {label for label, (_, matches) in FORMS.items() if matches(op)} == _forms_by_hand(op), op


@pytest.fixture(scope="module")
def programs():
    return {label: draw_examples(data_movement_programs(target_with(feature), label), 1, k)[0]
            for k, (label, (feature, _)) in enumerate(FORMS.items())}


def test_each_program_starts_with_its_form_is_legal_and_defined(programs):
    for label, p in programs.items():
        first = p.ops[0]
        assert FORMS[label][1](first), (label, first)
        assert not [v for op in p.ops for v in check(op, p.target)], label
        groups = {op.cta_group for op in p.ops if hasattr(op, "cta_group")}
        assert groups <= {p.ctas}, label
        state = run(p)
        assert len(state.loads) == sum(op.OP == "tcgen05.ld" for op in p.ops)


def test_the_data_movement_heat_map_counts_each_programs_forms(programs):
    """Cells counted here from the instructions' fields; each form's program fills its row, and
    .ld.red needs sm_103a (Target ISA Notes of 9.7.16.8.3)."""
    hm = coverage(list(programs.values()))["heat_maps"]["data_movement"]
    cases = Counter(cell for p in programs.values() for cell in {(form, p.target) for op in p.ops for form in _forms_by_hand(op)})
    counted = {(r, c): hm["cases"][i][j] for i, r in enumerate(hm["rows"]) for j, c in enumerate(hm["columns"])}
    assert counted == {cell: cases[cell] for cell in counted} and set(cases) <= set(counted)
    assert all(sum(row) for row in hm["cases"])
    applicable = {(r, c): hm["applicable"][i][j] for i, r in enumerate(hm["rows"]) for j, c in enumerate(hm["columns"])}
    assert [cell for cell, ok in applicable.items() if not ok] == [(f"tcgen05.ld.red.{t}", "sm_100a") for t in dm.LD_RED_TYPES]


@needs_assembler
def test_ptxas_assembles_every_form(programs):
    results = execute(list(programs.values()), ["ptxas"]).results["ptxas"]
    assert [r.status for r in results] == ["pass"] * len(programs), [r.detail for r in results if r.status != "pass"]
    by_instruction = [r for r, p in zip(results, programs.values()) if any(op.OP in ("tcgen05.ld", "tcgen05.st") for op in p.ops)]
    assert by_instruction and all("instruction by instruction" in r.detail for r in by_instruction)
