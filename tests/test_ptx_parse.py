"""The PTX parser: every generated instruction written in any accepted spelling reads back into
itself (round trip), the ISA's own examples and the spellings real code writes read into the
values their text states, constants are followed only where that is sound, and text outside
the model is refused with a reason."""

from __future__ import annotations

import random
from dataclasses import fields, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.core.instructions import (
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05Shift,
    Tcgen05St,
    WgmmaMma,
)
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.legality.operands import OPERANDS_READ, undecided_rules
from tcgen05_conformance.core.legality.rules import RULES
from tcgen05_conformance.core.ptx.inline_asm import asm_statements, read_asm
from tcgen05_conformance.core.ptx.parse import integer, read_ptx, statements
from tcgen05_conformance.core.ptx.render import draw_spelling
from tcgen05_conformance.device.ptx.kernels import MODULE_PREAMBLE, entry_for
from tcgen05_conformance.generators.instructions import legal_instructions
from tcgen05_conformance.generators.violations import illegal_instructions

TARGET_NAMES = st.sampled_from(tuple(t for t in TARGETS if t != "sm_80"))


def read_one(text: str):
    parsed = read_ptx(text)
    assert len(parsed) == 1, parsed
    return parsed[0]


@settings(max_examples=400)
@given(st.data())
def test_every_generated_instruction_reads_back_from_any_accepted_spelling(data):
    target = data.draw(TARGET_NAMES)
    if data.draw(st.booleans()):
        instr = data.draw(legal_instructions(target))
    else:
        _, instr = data.draw(illegal_instructions(target))
    spelling = draw_spelling(instr, random.Random(data.draw(st.integers(0, 2**32))))
    parsed = read_one(MODULE_PREAMBLE + entry_for(instr, 0, spelling))  # the module declares the shared symbols
    assert parsed.problem is None and parsed.unknown == frozenset()
    assert parsed.instruction == instr


# --- the ISA's own examples (PTX ISA 9.7.16.7.1, 9.7.16.8.3, 9.7.16.9.2-3, 9.7.16.12.1) ----------


# What the ISA's example fragments use, declared (a name nothing declares is unparsed: ptxas rejects it)
ISA_EXAMPLE_NAMES = (".shared .b32 sMemAddr1;\n.shared .b64 mbarObj0;\n.reg .b32 taddr, taddr1, taddr3, redVal, r<8>;\n"
                     ".reg .b64 sdesc1;\n")


def test_spec_examples_read_into_the_values_they_state():
    alloc = read_one(ISA_EXAMPLE_NAMES + "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [sMemAddr1], 32;")
    assert alloc.instruction == Tcgen05Alloc(1, 32, "shared::cta", 64)
    dealloc = read_one(ISA_EXAMPLE_NAMES + "tcgen05.dealloc.cta_group::2.sync.aligned.b32  taddr, 32;")
    assert dealloc.instruction == Tcgen05Dealloc(2, 32) and dealloc.unknown == {"taddr"}
    # the type written before the reduction operation, as 9.7.16.8.3's example does
    ld = read_one(ISA_EXAMPLE_NAMES + "tcgen05.ld.red.sync.aligned.16x32bx2.x8.u32.max {r0, r1, r2, r3, r4, r5, r6, r7},\n"
                  "                                 redVal, [taddr3], 16;")
    assert ld.instruction == Tcgen05Ld("16x32bx2", 8, red_op="max", red_type="u32", split_offset=16)
    assert ld.unknown == {"taddr"}
    cp = read_one(ISA_EXAMPLE_NAMES + "tcgen05.cp.cta_group::2.128x128b.b8x16.b6x16_p32 [taddr1], sdesc1;")
    assert cp.instruction == Tcgen05Cp("128x128b", cta_group=2, src_fmt="b6x16_p32") and cp.unknown == {"taddr", "s_desc"}
    shift = read_one(ISA_EXAMPLE_NAMES + "tcgen05.shift.down.cta_group::2 [taddr1];")
    assert shift.instruction == Tcgen05Shift(cta_group=2)
    commit = read_one(ISA_EXAMPLE_NAMES + "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [mbarObj0];")
    assert commit.instruction == Tcgen05Commit(1, state_space=None, address_bits=64)


@pytest.mark.parametrize("text, name", [
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [sMemAddr1], 32;", "sMemAddr1"),
    (".reg .b32 taddr;\ntcgen05.dealloc.cta_group::2.sync.aligned.b32 taddr2, 32;", "taddr2"),
    (".shared .b64 mbarObj0;\ntcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [mbarObj1];", "mbarObj1"),
])
def test_a_name_nothing_declares_is_unparsed_and_named(text, name):
    parsed = read_one(text)
    assert parsed.instruction is None and name in parsed.problem and "declared by no" in parsed.problem


# --- the spellings issue 14 names -----------------------------------------------------------------

DECLARED = ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.reg .pred %p;\n.reg .b16 %h;\n"


def test_generic_and_32_bit_addresses_of_alloc_and_commit():
    generic = read_one(DECLARED + "tcgen05.alloc.cta_group::1.sync.aligned.b32 [%rd1], 64;")
    assert generic.instruction == Tcgen05Alloc(1, 64, state_space=None, address_bits=64)
    commit32 = read_one(DECLARED + "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%r1];")
    assert commit32.instruction == Tcgen05Commit(1, state_space=None, address_bits=32)
    cluster32 = read_one(DECLARED + "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%r2];")
    assert cluster32.instruction == Tcgen05Commit(2, state_space="shared::cluster", address_bits=32)


def test_column_counts_in_registers_and_their_values():
    parsed = read_ptx(DECLARED + ".shared .b32 slot;\nmov.u32 %r3, 96;\n"
                      "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], %r3;\n"
                      "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r0, %r4;")
    assert parsed[0].instruction == Tcgen05Alloc(1, 96, columns_register=True)
    assert {v.rule for v in check(parsed[0].instruction, "sm_100a")} == {"alloc.columns-register"}
    assert parsed[1].instruction.columns_register and parsed[1].unknown == {"taddr", "columns"}


def test_qualifier_orders_real_code_writes():
    mma = read_one(DECLARED + "tcgen05.mma.cta_group::1.kind::f16.collector::a::discard.ashift [%r0], [%r1], %rd2, %r3, %p;")
    assert mma.instruction.ashift and mma.instruction.collector == "a::discard"
    cp = read_one(DECLARED + "tcgen05.cp.cta_group::2.warpx4.32x128b [%r0], %rd1;")
    assert cp.instruction == Tcgen05Cp("32x128b", cta_group=2, multicast="warpx4")
    ld = read_one(DECLARED + "tcgen05.ld.red.sync.aligned.32x32b.x2.f32.max.abs {%r0, %r1}, %r2, [%r3];")
    assert ld.instruction == Tcgen05Ld("32x32b", 2, red_op="max", red_type="f32", red_abs=True)


def test_tensor_memory_addresses_with_offsets_and_guards():
    text = DECLARED + """
        mov.b32 %r0, 0x00200010;          // lane 32, column 16
        setp.ne.b32 %p, 1, 0;
        @%p tcgen05.st.sync.aligned.32x32b.x2.b32 [%r0+-16], {%r1, %r2};
        @!%p tcgen05.st.sync.aligned.32x32b.x2.b32 [%r0 + 0x10], {%r1, %r2};"""
    taken, skipped = read_ptx(text)
    assert taken.instruction == Tcgen05St("32x32b", 2, taddr=0x00200000) and (taken.guard, taken.guard_value) == ("@%p", True)
    assert skipped.instruction.taddr == 0x00200020 and skipped.guard_value is False


def test_ws_reads_an_immediate_after_enable_input_d_as_the_zero_column_mask():
    """9.7.16.10.9.3: .ws has no scale-input-d; the operand there is zero-column-mask-desc."""
    ws = read_one(DECLARED + "tcgen05.mma.ws.cta_group::1.kind::f16 [%r0], %rd1, %rd2, %r3, %p, 3;")
    assert ws.instruction.zero_column_mask == 3 and ws.instruction.scale_input_d is None
    dense = read_one(DECLARED + "tcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd2, %r3, %p, 3;")
    assert dense.instruction.scale_input_d == 3 and dense.instruction.zero_column_mask is None


def test_integer_literals_in_every_ptx_notation():
    assert [integer(t) for t in ("0x1F", "0X1f", "31", "037", "0b11111", "31U", "-16", "0", "0U")] == [31] * 6 + [-16, 0, 0]
    assert integer("08") is None and integer("1e5") is None


# --- constants ------------------------------------------------------------------------------------


def _idesc_of(text: str) -> tuple[int, frozenset[str]]:
    p = read_ptx(DECLARED + text + "\ntcgen05.mma.cta_group::1.kind::f16 [%r0], %rd1, %rd2, %r3, 1;")[-1]
    return p.instruction.idesc, p.unknown


def test_a_mov_of_a_constant_is_followed_and_arithmetic_on_constants_too():
    assert _idesc_of("mov.b32 %r3, 0x08200490;")[0] == 0x08200490
    assert _idesc_of("mov.b32 %r4, 0x08200000;\nor.b32 %r3, %r4, 0x490;")[0] == 0x08200490
    assert _idesc_of("mov.b32 %r4, 17;\nshl.b32 %r3, %r4, 24;")[0] == 17 << 24
    assert _idesc_of("mov.b32 %r4, 1;\nmov.b32 %r3, %r4;")[0] == 1


@pytest.mark.parametrize("text", [
    "mov.b32 %r3, 5;\nLOOP:",  # a label: reachable from elsewhere
    "mov.b32 %r3, 5;\nld.shared.b32 %r3, [slot];",  # overwritten by a load
    "@%p mov.b32 %r3, 5;",  # a guard of unknown value
    "mov.b32 %r3, 5;\nadd.u32 %r3, %r3, %r7;",  # plus an unknown
    "{\n.reg .b32 %r3;\nmov.b32 %r3, 5;\n}",  # a block's own %r3
])
def test_a_value_is_unknown_where_it_may_differ(text):
    assert "idesc" in _idesc_of(text)[1]


def test_statements_skip_comments_and_keep_lines():
    text = "// header\n.reg .b32 %r<2>; /* a\nblock */ mov.b32 %r0,\n  4;\nL: ret;"
    found = [(s.line, s.kind, s.text) for s in statements(text)]
    assert found == [(2, "directive", ".reg .b32 %r<2>"), (3, "instruction", "mov.b32 %r0, 4"), (5, "label", "L"),
                     (5, "instruction", "ret")]


# --- what is not understood ---------------------------------------------------------------------


@pytest.mark.parametrize("text, why", [
    ("tcgen05.mma.cta_group::1.ws.kind::f16 [%r0], %rd1, %rd2, %r3, %p;", "only right after"),
    ("tcgen05.cp.cta_group::1.128x256b [16], %rd1;", "immediate Tensor Memory address"),
    ("tcgen05.mma.cta_group::1.kind::f16.bogus [%r0], %rd1, %rd2, %r3, %p;", ".bogus is not a qualifier"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r0}, [%r1];", "needs 2"),
    ("wgmma.fence.sync.aligned;", "not a tcgen05, wgmma.mma_async or mma.sp"),
])
def test_text_outside_the_model_is_refused_with_a_reason(text, why):
    parsed = read_one(DECLARED + text)
    assert parsed.instruction is None and why in parsed.problem


# --- inline asm in CUDA sources -------------------------------------------------------------------

CUDA = r'''
__device__ void issue(uint32_t tmem_c, uint64_t desc_a, uint64_t desc_b, uint32_t idesc, uint32_t scale_c) {
  // asm("tcgen05.fence::before_thread_sync;");  a comment, not a statement
  asm volatile(
    "{\n\t"
    ".reg .pred p;\n\t"
    "setp.ne.b32 p, %4, 0;\n\t"
    "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p; \n\t"
    "}\n"
    :
    : "r"(tmem_c), "l"(desc_a), "l"(desc_b), "r"(idesc), "r"(scale_c));
}
__device__ void alloc(uint32_t dst) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%[dst]], %[cols];"
               :: [dst] "r"(dst), [cols] "n"(128));
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(dst), "n"(Columns));
  __asm__ __volatile__("mov.u32 %%r9, 1;");
}
'''


def test_inline_asm_operands_read_by_their_constraints_at_their_source_lines():
    statements_ = asm_statements(CUDA)
    assert [s.line for s in statements_] == [4, 14, 16, 17]
    mma = read_asm(statements_[0])[0]
    assert statements_[0].source_line(mma.offset) == 8
    assert isinstance(mma.instruction, Tcgen05Mma) and mma.instruction.kind == "f16"
    assert mma.unknown == {"d_tmem", "a_desc", "b_desc", "idesc", "enable_input_d"}
    alloc = read_asm(statements_[1])[0]
    assert alloc.instruction == Tcgen05Alloc(1, 128, "shared::cta", 32)
    dealloc = read_asm(statements_[2])[0]
    assert not dealloc.instruction.columns_register and dealloc.unknown == {"taddr", "columns"}
    assert read_asm(statements_[3]) == []


# --- the rules' operand table ---------------------------------------------------------------------


def test_operand_table_names_real_rules_and_fields():
    for cls, table in OPERANDS_READ.items():
        names = {f.name for f in fields(cls)}
        for rule, read in table.items():
            assert rule in RULES and read <= names, (cls.__name__, rule)


OPERAND_FIELDS = {Tcgen05Mma: ("idesc", "a_desc", "b_desc", "d_tmem", "a_tmem", "sp_meta_tmem", "zero_column_mask"),
                  WgmmaMma: ("a_desc", "b_desc"), Tcgen05Shift: ("taddr",), Tcgen05Alloc: ("columns",)}


@settings(max_examples=300)
@given(st.data())
def test_placeholders_change_no_verdict_outside_the_undecided_rules(data):
    """Whatever a non-constant operand holds, every rule not listed as reading it is judged the same."""
    target = data.draw(TARGET_NAMES)
    instr = data.draw(legal_instructions(target)) if data.draw(st.booleans()) else data.draw(illegal_instructions(target))[1]
    names = [f for f in OPERAND_FIELDS.get(type(instr), ()) if getattr(instr, f) is not None]
    unknown = frozenset(data.draw(st.sets(st.sampled_from(names))) if names else ())
    placeholder = replace(instr, **{f: data.draw(st.integers(0, 2**32 - 1)) for f in unknown})
    undecided = undecided_rules(instr, unknown)
    before = {v.rule for v in check(instr, target)} - set(undecided)
    after = {v.rule for v in check(placeholder, target)} - set(undecided)
    assert before == after
