"""The generators against the legality model: legal strategies make legal values on every
target, illegal ones break exactly their labelled rule, and every rule is reachable."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TARGETS, TCGEN05_TARGETS
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.generators.instructions import legal_instructions, shape_classes_for_target, tcgen05_mma
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.generators.violations import BREAKERS, breakable_rules, illegal_instructions

TARGET_NAMES = st.sampled_from(tuple(TARGETS))


@settings(max_examples=300)
@given(st.data())
def test_legal_instructions_are_legal(data):
    target = data.draw(TARGET_NAMES)
    instr = data.draw(legal_instructions(target))
    assert check(instr, target) == []


@settings(max_examples=300)
@given(st.data())
def test_illegal_instructions_break_exactly_their_rule(data):
    target = data.draw(TARGET_NAMES)
    rule, instr = data.draw(illegal_instructions(target))
    assert {v.rule for v in check(instr, target)} == {rule}


def test_every_breaker_is_reachable_on_some_target():
    reachable = {r for t in TARGETS for r in breakable_rules(t)}
    assert reachable == set(BREAKERS)


def test_every_rule_with_a_breaker_yields_an_example_on_each_target_that_allows_it():
    for target in TARGETS:
        for rule in breakable_rules(target):
            (got_rule, instr), = draw_examples(illegal_instructions(target, rule), 1, seed=11)
            assert got_rule == rule and {v.rule for v in check(instr, target)} == {rule}


def test_every_table_39_class_is_generated_on_a_target():
    for c in mma.SHAPE_CLASSES:
        targets = [t for t in TCGEN05_TARGETS if c in shape_classes_for_target(t)]
        assert targets, c.id
        (instr,) = draw_examples(tcgen05_mma(targets[0], c), 1, seed=3)
        assert check(instr, targets[0]) == []


def test_the_same_seed_draws_the_same_examples():
    a = draw_examples(legal_instructions("sm_103a"), 20, seed=5)
    b = draw_examples(legal_instructions("sm_103a"), 20, seed=5)
    assert a == b
    assert a != draw_examples(legal_instructions("sm_103a"), 20, seed=6)
