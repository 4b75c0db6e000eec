"""The undefined-behaviour rules of the legality model (`legality.undefined_behaviour`) against
the oracle, which reaches its own verdict from the cells each operation touches.

Directed programs sit on either side of each rule's boundary, worked out from the ISA's shapes
(9.7.16.2.3: a .LANESxBITS shape covers LANES lanes and BITS / 32 columns, .num times); drawn
programs, the data-movement generator's candidates before it filters them, hold the rules and
the oracle to the same answer, and to the same first undefined operation.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Cp, Tcgen05Ld, Tcgen05Mma, Tcgen05Shift, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.legality import RULES, check, undefined_behaviour
from tcgen05_conformance.core.legality.rules import PROGRAM
from tcgen05_conformance.core.program import SMEM_BYTES, Program, SmemSegment
from tcgen05_conformance.core.state import NotModelled, UndefinedBehaviour
from tcgen05_conformance.harness.runner import target_with
from tcgen05_conformance.generators.instructions import shape_classes_for_target
from tcgen05_conformance.generators.programs import data_movement_forms, data_movement_programs, hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.probes import build

ROWS_16B = sdesc_codec.encode(sdesc_codec.SmemDescriptor(0, 16, 128))  # cp rows of 16 bytes, back to back from byte 0
CP_BYTES = 128 * 16  # .128x128b reads 128 rows of 16 bytes


def at(lane: int, column: int) -> int:
    return taddr_codec.encode(lane, column)


def program(*ops, ctas: int = 1, columns: int = 512, smem: int = CP_BYTES, target: str = "sm_100a") -> Program:
    return Program(target=target, ops=ops, ctas=ctas, tmem_columns=columns,
                   smem=tuple(SmemSegment(0, bytes(smem), c) for c in range(ctas)))


def oracle_refusal(p: Program) -> str | None:
    try:
        run(p)
    except UndefinedBehaviour as e:
        return str(e)
    except NotModelled:
        pass
    return None


def first_op(message: str) -> int:
    return int(re.match(r"ops\[(\d+)\]", message).group(1))


CASES = [  # (program, the rules it breaks)
    # .32x32b.x32: 32 columns from taddr; 480-511 fit 512 columns, 481-512 do not.
    (program(Tcgen05Ld("32x32b", 32, taddr=at(0, 480))), set()),
    (program(Tcgen05Ld("32x32b", 32, taddr=at(0, 481))), {"program.tmem-allocation"}),
    (program(Tcgen05Ld("32x32b", 32, taddr=at(0, 224)), columns=256), set()),
    (program(Tcgen05Ld("32x32b", 32, taddr=at(0, 225)), columns=256), {"program.tmem-allocation"}),
    # .16x256b.x4.pack::16b: 4 x 8 columns, doubled by the packing: 64 columns.
    (program(Tcgen05Ld("16x256b", 4, pack=True, taddr=at(0, 448))), set()),
    (program(Tcgen05Ld("16x256b", 4, pack=True, taddr=at(0, 449))), {"program.tmem-allocation"}),
    (program(Tcgen05St("16x64b", 8, unpack=True, taddr=at(32, 480))), set()),
    (program(Tcgen05St("16x64b", 8, unpack=True, taddr=at(32, 481))), {"program.tmem-allocation"}),
    # .16x32bx2.x8: two accesses of 8 columns, the second immHalfSplitoff columns on.
    (program(Tcgen05Ld("16x32bx2", 8, taddr=at(0, 0), split_offset=504)), set()),
    (program(Tcgen05Ld("16x32bx2", 8, taddr=at(0, 0), split_offset=505)), {"program.tmem-allocation"}),
    # Halves that overlap: loading them is defined, storing them is not (A-ST-SPLIT-OVERLAP).
    (program(Tcgen05Ld("16x32bx2", 4, split_offset=0)), set()),
    (program(Tcgen05St("16x32bx2", 4, split_offset=3)), {"program.st-split-overlap"}),
    (program(Tcgen05St("16x32bx2", 4, split_offset=4)), set()),
    (program(Tcgen05St("16x32bx2", 4, unpack=True, split_offset=7)), {"program.st-split-overlap"}),
    (program(Tcgen05St("16x32bx2", 4, unpack=True, split_offset=8)), set()),
    # 9.7.16.8.1: a warp reaches the 32 lanes of its quarter only; a 16-lane shape fits from lane 16.
    (program(Tcgen05Ld("16x128b", 1, taddr=at(16, 0))), set()),
    (program(Tcgen05Ld("16x128b", 1, taddr=at(17, 0))), {"program.ldst-warp-lanes"}),
    (program(Tcgen05St("32x32b", 1, taddr=at(96, 0))), set()),
    (program(Tcgen05St("32x32b", 1, taddr=at(97, 0))), {"program.ldst-warp-lanes", "program.tmem-allocation"}),
    # tcgen05.cp: .128x128b writes 128 lanes x 4 columns, .4x256b lanes 0, 32, 64, 96 from taddr.
    (program(Tcgen05Cp("128x128b", taddr=at(0, 508), s_desc=ROWS_16B)), set()),
    (program(Tcgen05Cp("128x128b", taddr=at(0, 509), s_desc=ROWS_16B)), {"program.tmem-allocation"}),
    (program(Tcgen05Cp("128x128b", taddr=at(1, 0), s_desc=ROWS_16B)), {"program.tmem-allocation"}),
    (program(Tcgen05Cp("4x256b", taddr=at(31, 0), s_desc=ROWS_16B)), set()),
    (program(Tcgen05Cp("4x256b", taddr=at(32, 0), s_desc=ROWS_16B)), {"program.tmem-allocation"}),
    (program(Tcgen05Cp("128x128b", cta_group=2, s_desc=ROWS_16B)), {"program.cta-pair"}),
    (program(Tcgen05Cp("128x128b", cta_group=2, s_desc=ROWS_16B), ctas=2), set()),
    # Its source: 128 rows of 16 bytes; decompression reads 8 (4-bit) or 12 (6-bit) of each 16.
    (program(Tcgen05Cp("128x128b", s_desc=ROWS_16B), smem=CP_BYTES - 1), {"program.cp-source-initialised"}),
    (program(Tcgen05Cp("128x128b", src_fmt="b4x16_p64", s_desc=ROWS_16B), smem=CP_BYTES - 8), set()),
    (program(Tcgen05Cp("128x128b", src_fmt="b4x16_p64", s_desc=ROWS_16B), smem=CP_BYTES - 9), {"program.cp-source-initialised"}),
    (program(Tcgen05Cp("128x128b", src_fmt="b6x16_p32", s_desc=ROWS_16B), smem=CP_BYTES - 4), set()),
    (program(Tcgen05Cp("128x128b", src_fmt="b6x16_p32", s_desc=ROWS_16B), smem=CP_BYTES - 5), {"program.cp-source-initialised"}),
    (program(Tcgen05Cp("128x128b", s_desc=sdesc_codec.encode(sdesc_codec.SmemDescriptor(SMEM_BYTES - 1024, 16, 128)))),
     {"program.cp-source-initialised"}),
    (program(Tcgen05Cp("128x128b", s_desc=0)), {"program.cp-source-descriptor"}),  # bits 46-48 must hold 0b001
    # tcgen05.shift: 32 lanes x 8 columns.
    (program(Tcgen05Shift(taddr=at(96, 504)), target="sm_103a"), set()),
    (program(Tcgen05Shift(taddr=at(96, 505)), target="sm_103a"), {"program.tmem-allocation"}),
    (program(Tcgen05Shift(cta_group=2), target="sm_103a"), {"program.cta-pair"}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_each_rule_at_its_boundary_agrees_with_the_oracle(case):
    p, broken = CASES[case]
    assert not [v for op in p.ops for v in check(op, p.target)], "the instructions themselves are legal"
    assert {v.rule for v in undefined_behaviour(p)} == broken
    assert (oracle_refusal(p) is not None) == bool(broken)


def test_the_first_undefined_operation_is_named():
    p = program(Tcgen05Ld("32x32b", 1), Tcgen05St("16x32bx2", 2, split_offset=1), Tcgen05Ld("32x32b", 1, taddr=at(0, 511)))
    found = undefined_behaviour(p)
    assert [v.rule for v in found] == ["program.st-split-overlap"]
    assert found[0].message.startswith("ops[1] tcgen05.st: ")
    assert first_op(oracle_refusal(p)) == 1


def test_an_illegal_operation_is_left_to_the_instruction_check():
    p = program(Tcgen05St("16x32bx2", 4), Tcgen05Cp("256x256b", s_desc=ROWS_16B), Tcgen05St("16x32bx2", 4, split_offset=0))
    assert {v.rule for op in p.ops for v in check(op, p.target)} == {"ldst.split-offset", "cp.multicast"}
    assert [v.message for v in undefined_behaviour(p)] == [
        "ops[2] tcgen05.st: .16x32bx2.x4 halves of 4 columns start 0 columns apart (immHalfSplitoff)"]


def test_a_cta_pair_mma_in_one_cta_is_undefined():
    pair_class = next(c for c in shape_classes_for_target("sm_100a") if c.cta_group == 2)
    p = draw_examples(tcgen05_programs("sm_100a", pair_class), 1, 3)[0]
    alone = dataclasses.replace(p, ctas=1, smem=tuple(s for s in p.smem if s.cta == 0), tmem=tuple(r for r in p.tmem if r.cta == 0))
    assert undefined_behaviour(p) == [] and oracle_refusal(p) is None
    assert [v.rule for v in undefined_behaviour(alone)] == ["program.cta-pair"]
    assert oracle_refusal(alone) is not None


def test_the_data_movement_probes_are_undefined_where_they_expect_the_oracle_to_refuse():
    """The probes' own record (`Probe.refusal`) of which programs the oracle refuses."""
    probes = [p for p in build.probes() if not any(isinstance(op, (Tcgen05Mma, WgmmaMma, MmaSp)) for op in p.program.ops)]
    assert {"A-ST-SPLIT-OVERLAP", "A-SHIFT-ROW0"} <= {p.name for p in probes}
    for probe in probes:
        assert bool(undefined_behaviour(probe.program)) == (probe.refusal is not None), probe.name


def test_the_program_rules_are_oracle_rules_with_an_isa_section():
    program_rules = [r for r in RULES.values() if r.scope == PROGRAM]
    assert {r.id for r in program_rules} >= {"program.tmem-allocation", "program.st-split-overlap"}
    assert all(r.checked_by == "oracle" and r.reference.startswith("PTX ISA 9.7.16") for r in program_rules)


# --- drawn programs ------------------------------------------------------------------------------

CANDIDATES_PER_TARGET = 300
CANDIDATES_PER_FORM = 6


@pytest.fixture(scope="module")
def candidates() -> list[Program]:
    """What the data-movement generator draws before it drops the undefined programs."""
    drawn = [p for k, t in enumerate(TCGEN05_TARGETS)
             for p in draw_examples(data_movement_programs(t, only_defined=False), CANDIDATES_PER_TARGET, 90 + k)]
    for k, (label, (feature, _)) in enumerate(data_movement_forms().items()):
        drawn += draw_examples(data_movement_programs(target_with(feature), label, only_defined=False), CANDIDATES_PER_FORM, 900 + k)
    return drawn


def test_the_rules_and_the_oracle_agree_on_every_drawn_data_movement_program(candidates):
    seen, undefined = set(), 0
    for p in candidates:
        found, refusal = undefined_behaviour(p), oracle_refusal(p)
        assert bool(found) == (refusal is not None), (p.ops, found, refusal)
        if found:
            assert first_op(found[0].message) == first_op(refusal), (found, refusal)
            seen.update(v.rule for v in found)
            undefined += 1
    # the sample holds defined programs and every kind of undefined one the generator drops
    assert 0 < undefined < len(candidates)
    assert seen == {"program.tmem-allocation", "program.st-split-overlap"}


def test_the_generator_draws_only_defined_data_movement_programs():
    for p in draw_examples(st.sampled_from(TCGEN05_TARGETS).flatmap(data_movement_programs), 60, 17):
        assert undefined_behaviour(p) == [] and oracle_refusal(p) is None


def test_mma_programs_are_defined_for_the_rules_and_the_oracle():
    drawn = draw_examples(st.sampled_from(TCGEN05_TARGETS).flatmap(tcgen05_programs), 60, 23)
    drawn += draw_examples(hopper_programs(), 40, 29) + draw_examples(hopper_programs(inputs="discriminating"), 20, 31)
    for p in drawn:
        assert undefined_behaviour(p) == [] and oracle_refusal(p) is None, p.label
