"""The spelling tables against the assembler: the qualifier orders they call accepted are the
ones ptxas accepts (asked again here on a sample of every probed form), and every token the
renderer writes is read back into the slot it was written for."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.ptx.render import qualifier_tokens, syntax_key
from tcgen05_conformance.core.ptx.spelling import QUALIFIERS, QualifierSyntax
from tcgen05_conformance.lint.spellings import ORDER_PROBES, assemble_lines
from tcgen05_conformance.generators.instructions import legal_instructions
from tests.conftest import needs_assembler

SAMPLE = 24  # orders per probed form and target


def prediction(syntax: QualifierSyntax, order: tuple[str, ...], syntax_order: tuple[str, ...]) -> bool | None:
    """What the table says ptxas does with `order`: False when a leading slot is not where it
    must be; True when it is and each positional class keeps its syntax order; None otherwise
    (types read in another order name other types, which may or may not be legal)."""
    slots = [syntax.slot_of(token) for token in order]
    lead = [s for s in syntax.leading if s in slots]
    if slots[:len(lead)] != lead:
        return False
    for cls in syntax.positional:
        if [t for t in order if syntax.slot_of(t) == cls] != [t for t in syntax_order if syntax.slot_of(t) == cls]:
            return None
    return True


@needs_assembler
@pytest.mark.parametrize("probe", ORDER_PROBES, ids=lambda p: p.name)
def test_the_table_predicts_which_orders_ptxas_accepts(probe):
    syntax = QUALIFIERS[syntax_key(probe.opcode)]
    rng = random.Random(probe.name)
    orders = [tuple(rng.sample(probe.qualifiers, len(probe.qualifiers))) for _ in range(SAMPLE)]
    for arch in probe.archs:
        for order, accepted in zip(orders, assemble_lines([probe.line(o) for o in orders], arch)):
            expected = prediction(syntax, order, probe.qualifiers)
            assert expected is None or accepted == expected, (arch, probe.line(order))


@needs_assembler
def test_ptxas_rejects_the_forms_the_tables_leave_out():
    lines = ["tcgen05.mma.cta_group::1.kind::f16 [%rt+-16], %rda, %rdb, %ri, %p;",  # accepted: a negative offset
             "tcgen05.mma.cta_group::1.kind::f16 [%rt-16], %rda, %rdb, %ri, %p;",
             "tcgen05.mma.cta_group::1.kind::f16 [%rt], %rda, %rdb, %ri, {0, 0, 0, 0}, %p;",
             "tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32 {%v0, %v1}, 0, [%rt];",
             "tcgen05.mma.cta_group::1.kind::f16 [%rt], %rda, %rdb, %ri, %p, %r;"]
    assert assemble_lines(lines, "sm_103a") == [True, False, False, False, False]


@settings(max_examples=200)
@given(st.data())
def test_every_written_token_reads_back_into_its_slot(data):
    instr = data.draw(legal_instructions(data.draw(st.sampled_from(("sm_100a", "sm_103a", "sm_90a")))))
    opcode, qualifiers = qualifier_tokens(instr)
    syntax = QUALIFIERS[syntax_key(opcode)]
    for slot, token in qualifiers:
        assert syntax.slot_of(token) == slot, (opcode, slot, token)
