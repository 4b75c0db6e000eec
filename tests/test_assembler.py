"""The legality model and the generated kernels against the assembler (ptxas in nvJitLink)."""

import random

import pytest

from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.legality.rules import ASSEMBLER, RULES
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.against_assembler import assemble_instructions, run_legality
from tcgen05_conformance.device.assembler import assemble, assemble_entries, module_header, rule_for_diagnostic
from tcgen05_conformance.device.ptx.kernels import UnsupportedProgram, kernel
from tcgen05_conformance.generators.instructions import shape_classes_for_target
from tcgen05_conformance.generators.programs import hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.generators.violations import breakable_rules, illegal_instructions
from tests.conftest import needs_assembler

pytestmark = needs_assembler


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_90a", "sm_80"])
def test_model_and_assembler_agree_on_random_instructions(arch):
    report = run_legality(arch, 400, seed=1)
    assert report.legal_rejected == 0, report.disagreements
    assert report.illegal_accepted == 0, report.disagreements
    assert report.legal_accepted == 200 and report.illegal == 200


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_90a"])
def test_each_assembler_rule_is_rejected_by_ptxas(arch):
    rules = [r for r in breakable_rules(arch) if RULES[r].checked_by == ASSEMBLER]
    drawn = [draw_examples(illegal_instructions(arch, r), 1, seed=2)[0] for r in rules]
    outcomes = assemble_instructions([i for _, i in drawn], arch)
    accepted = [rule for (rule, _), o in zip(drawn, outcomes) if o.ok]
    assert accepted == []


def test_known_diagnostics_map_to_rules():
    assert rule_for_diagnostic("Feature '.kind::i8' not supported on .target 'sm_103a'") == "target.kind-i8"
    assert rule_for_diagnostic("Argument 1 of instruction 'tcgen05.alloc': value '16' out of range") == "alloc.columns"
    assert rule_for_diagnostic("something new") is None


@pytest.mark.parametrize("target", TCGEN05_TARGETS)
def test_every_table_39_class_kernel_assembles_for_each_target_that_has_it(target):
    # the blackwell backend links these kernels for the program's own target: sm_100a or sm_103a
    classes = list(shape_classes_for_target(target))
    lacks = {"sm_100a": lambda c: c.feature == "K=96", "sm_103a": lambda c: c.kind == "i8"}[target]  # Target ISA Notes
    assert classes == [c for c in mma.SHAPE_CLASSES if not lacks(c)]
    for c in classes:
        p = draw_examples(tcgen05_programs(target, c), 1, seed=4)[0]
        result = assemble(kernel(p), target)
        assert result.ok, (target, p.label, [d.message for d in result.diagnostics][:3])


def test_hopper_kernels_assemble_for_sm_90a():
    for p in draw_examples(hopper_programs(), 12, seed=9):
        result = assemble(kernel(p), "sm_90a")
        assert result.ok, (p.ops[0], [d.message for d in result.diagnostics][:3])


def test_a_tcgen05_kernel_does_not_assemble_for_hopper():
    p = draw_examples(tcgen05_programs("sm_100a", mma.SHAPE_CLASSES[0]), 1, seed=4)[0]
    result = assemble(kernel(p), "sm_90a")
    assert not result.ok


def test_mixed_cta_groups_in_one_kernel_are_refused():
    a = draw_examples(tcgen05_programs("sm_100a", mma.SHAPE_CLASSES[0]), 1, seed=4)[0]
    cta2 = next(c for c in mma.SHAPE_CLASSES if c.cta_group == 2 and c.kind == "f16")
    b = draw_examples(tcgen05_programs("sm_100a", cta2), 1, seed=4)[0]
    with pytest.raises(UnsupportedProgram, match="kernel.cta-group"):
        kernel(Program(target="sm_100a", ops=a.ops + b.ops, ctas=2))


_ENTRY = ".entry k{i}() {{\n  .reg .b32 r;\n  {instruction}\n  ret;\n}}"
_KINDS = {
    "legal": "mov.b32 r, 1;",
    "out of range": "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [r], 7;",  # columns: a power of 2 >= 32
    "undeclared": "mov.b32 q{i}, 1;",
    "parse error": "mov.b32 r, ;",  # ptxas stops parsing: a fatal error without a line
}


def test_a_batched_module_judges_each_entry_as_alone():
    """`assemble_entries` attributes every diagnostic to its entry and, where ptxas stops at a fatal
    parse error, judges the entries again in halves: in a module of 300 entries of every kind, in
    random order, each is accepted exactly when it is legal, as when assembled alone."""
    rng = random.Random(3)
    kinds = [rng.choice(list(_KINDS)) for _ in range(300)]
    bodies = [_ENTRY.format(i=i, instruction=_KINDS[k].format(i=i)) for i, k in enumerate(kinds)]
    outcomes = assemble_entries(bodies, "sm_100a")
    assert [o.ok for o in outcomes] == [k == "legal" for k in kinds]
    alone = {k: assemble(module_header("sm_100a") + _ENTRY.format(i=0, instruction=_KINDS[k].format(i=0)), "sm_100a").ok
             for k in _KINDS}
    assert alone == {k: k == "legal" for k in _KINDS}
