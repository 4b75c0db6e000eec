"""Value coverpoints: the classes come from the number formats' definitions, what a program hits
is read back from the images a generator wrote, and the run reports it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tcgen05_conformance.core import coverpoints as cov
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import Tcgen05Ld
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.program import Program, TmemRegion
from tcgen05_conformance.harness.report import value_coverage_markdown, value_heat_map_svg
from tcgen05_conformance.harness.value_coverage import value_coverage
from tcgen05_conformance.generators.instructions import tcgen05_mma
from tcgen05_conformance.generators.programs import Palette, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.generators.value_programs import value_programs
from tcgen05_conformance.oracles.execute import run

# IEEE 754-2019 binary16 encodings: +0, -0, the smallest subnormal, the smallest normal, the
# largest finite, the infinities and a quiet NaN.
BINARY16 = {0x0000: "+0", 0x8000: "-0", 0x0001: "subnormal", 0x0400: "min normal", 0x7BFF: "max normal",
            0x7C00: "+inf", 0xFC00: "-inf", 0x7E00: "nan"}
# OCP MX v1.0 E4M3: no infinities, S.1111.111 is NaN, the largest normal 448 = 0x7E, the smallest normal 2^-6 = 0x08.
E4M3 = {0x00: "+0", 0x80: "-0", 0x07: "subnormal", 0x08: "min normal", 0x7E: "max normal", 0xFF: "nan"}


@pytest.mark.parametrize("fmt, codes", [("f16", BINARY16), ("e4m3", E4M3)])
def test_each_code_falls_in_the_class_its_format_defines(fmt, codes):
    for code, value in codes.items():
        assert cov.classify(np.array([code]), fmt) == {value}, hex(code)
    assert set(cov.value_classes(fmt)) == set(codes.values())


def test_the_universe_has_every_code_of_the_narrow_and_scale_formats():
    ids = [c.id for c in cov.COVERPOINTS]
    assert len(ids) == len(set(ids))
    for kind, fmt, codes in (("f8f6f4", "e2m3", 64), ("f8f6f4", "e3m2", 64), ("mxf4", "e2m1", 16)):
        for operand in ("A", "B"):
            assert sum(c.id.startswith(f"mma.{kind}.{operand}.{fmt}.code") for c in cov.COVERPOINTS) == codes
    assert sum(c.id.startswith("mma.mxf4nvf4.scale_A.ue8m0.code") for c in cov.COVERPOINTS) == 256
    assert sum(c.id.startswith("mma.mxf4nvf4.scale_B.ue4m3.code") for c in cov.COVERPOINTS) == 128  # sign bit 0
    assert not any(c.id.startswith("mma.mxf8f6f4.scale_A.ue4m3") for c in cov.COVERPOINTS)  # Table 55: ue8m0 only
    assert [c.id for c in cov.COVERPOINTS if "scale-input-d" in c.id] == [
        f"mma.{k}.scale-input-d.{v}" for k in mma.KINDS if k in mma.SCALE_INPUT_D_KINDS for v in range(16)]


def test_reachability_follows_the_targets_features():
    ld_red = cov.COVERPOINT_BY_ID["ld.red.f32.min.+0 before -0"]
    assert cov.reachability(ld_red, TCGEN05_TARGETS) == (True, "")
    wgmma = cov.COVERPOINT_BY_ID["wgmma.imm-scale-a.-1"]
    assert cov.reachability(wgmma, cov.RUN_TARGETS) == (True, "") and not cov.reachability(wgmma, TCGEN05_TARGETS)[0]
    without = [t for t in TCGEN05_TARGETS if "tcgen05.ld.red" not in target_named(t).features]
    assert without  # sm_100a has no tcgen05.ld.red (PTX ISA 9.7.16.8.3: sm_103a)
    reachable, why = cov.reachability(ld_red, without)
    assert not reachable and "tcgen05.ld.red" in why
    assert cov.reachability(cov.COVERPOINT_BY_ID["mma.f16.A.f16.-0"], without) == (True, "")


def _program(kind: str, palette: Palette, seed: int = 3, **fixed) -> Program:
    c = next(c for c in mma.SHAPE_CLASSES if c.kind == kind and not c.ws and not c.sparse and c.cta_group == 1)
    target = next(t for t in TCGEN05_TARGETS if kind != "i8" or t == "sm_100a")
    op = tcgen05_mma(target, c, reach="compact", fixed=fixed).map(lambda o: dataclasses.replace(o, scale_input_d=None, enable_input_d=True))
    return draw_examples(op.flatmap(lambda o: tcgen05_programs(target, c, o, palette)), 1, seed)[0]


def test_the_hits_are_the_codes_the_generator_wrote():
    p = _program("f16", Palette(a=(0x8000,), b=(0x0001, 0x7C00)), atype="f16", btype="f16", dtype="f32")
    hit = cov.hits(p)
    assert {h for h in hit if h.startswith("mma.f16.A.")} == {"mma.f16.A.f16.-0"}
    assert {h for h in hit if h.startswith("mma.f16.B.")} == {"mma.f16.B.f16.subnormal", "mma.f16.B.f16.+inf"}
    assert cov.hits(p) == hit  # a function of the program


@pytest.mark.parametrize("saturate", [True, False])
def test_i8_sums_past_the_s32_limit_are_hit_with_their_qualifier(saturate):
    # 32 products of 127 x 127 (s8) on an accumulator of 2^31 - 1 pass the s32 maximum.
    p = _program("i8", Palette(a=(127,), b=(127,), c=(2**31 - 1,)), atype="s8", btype="s8", dtype="s32", saturate=saturate)
    suffix = "satfinite" if saturate else "wrap"
    assert f"mma.i8.D.s32.above max.{suffix}" in cov.hits(p)
    assert f"mma.i8.D.s32.above max.{'wrap' if saturate else 'satfinite'}" not in cov.hits(p)
    exact = 2**31 - 1 + 32 * 127 * 127  # K = 32
    wrapped = exact % 2**32
    assert (run(p).tmem == np.uint32(2**31 - 1 if saturate else wrapped)).any()


def _ld_red(words: list[int], red_op: str = "min", nan: bool = False) -> Program:
    op = Tcgen05Ld("32x32b", len(words), red_op=red_op, red_type="f32", red_nan=nan, taddr=taddr_codec.encode(0, 0))
    image = np.zeros((128, 32), dtype="<u4")
    image[:, :len(words)] = words
    return Program("sm_103a", (op,), tmem_columns=32, tmem=(TmemRegion(0, 0, 128, 32, image.tobytes()),))


def test_ld_red_signed_zero_orders_and_nans():
    assert "ld.red.f32.min.+0 before -0" in cov.hits(_ld_red([0, 0x80000000]))
    assert "ld.red.f32.min.-0 before +0" in cov.hits(_ld_red([0x80000000, 0]))
    assert not any("before" in h for h in cov.hits(_ld_red([0, 0])))
    assert "ld.red.f32.max.NaN with .NaN" in cov.hits(_ld_red([0x7FC00000, 0], "max", nan=True))
    assert "ld.red.f32.max.NaN skipped" in cov.hits(_ld_red([0x7FC00000, 0], "max"))
    assert "ld.red.f32.max.all NaN" in cov.hits(_ld_red([0x7FC00000, 0xFFC00000], "max"))


def test_operand_patterns_of_the_instruction():
    assert cov._dol_patterns((0, 0, 0, 0)) == {"none disabled"}
    assert cov._dol_patterns((0, 0, 0, 0x80000000)) == {"last lane only"}
    assert cov._dol_patterns((0,) * 4 + (1, 0, 0, 0)) == {cov.DOL_PEER_PATTERN}
    word = zcmask_codec.encode(zcmask_codec.ZeroColumnMask(skip_span=255, use_span=0, column_shift=16))
    assert {"skip span 255", "use span 0", "column shift 16 (max)"} <= cov._zcmask_values(word, 32)
    assert "column shift 16 (max)" not in cov._zcmask_values(word, 64)  # Table 45: 32 is the limit there


def test_aimed_programs_hit_what_the_others_missed_reproducibly():
    before = [_program("f16", Palette())]
    aimed = value_programs(before, 2, 11)
    assert 1 <= len(aimed) <= 2
    missed = set(cov.COVERPOINT_BY_ID) - set().union(*map(cov.hits, before))
    for p in aimed:
        assert cov.hits(p) & missed
        run(p)  # the oracle computes them: nothing undefined
    assert [p.case_id for p in value_programs(before, 2, 11)] == [p.case_id for p in aimed]


def test_summary_and_reports_carry_value_coverage():
    programs = [_program("f16", Palette(a=(0x8000,))), _program("f16", Palette(a=(0x8000,)), seed=4)]
    vc = value_coverage(programs)
    point = vc["points"]["mma.f16.A.f16.-0"]
    assert point == {"hits": 2, "first_case": programs[0].case_id}
    assert vc["hit"] + len(vc["missed"]) == vc["reachable"] == vc["coverpoints"] - len(vc["not_reachable"])
    cell = vc["per_kind_operand"]["tcgen05.mma kind::f16"]["A"]
    assert cell["hit"] >= 1 and cell["reachable"] == len(cov.value_classes("f16")) + len(cov.value_classes("bf16"))
    json.dumps(vc)
    text = "\n".join(value_coverage_markdown({"value_coverage": vc}))
    assert f"{vc['hit']} of {vc['reachable']} reachable" in text and "mma.f16.A.f16.+0" in text
    svg = value_heat_map_svg(vc)
    assert 'data-map="values" data-row="A" data-column="tcgen05.mma kind::f16"' in svg  # operands down, kinds across


def test_an_absolute_leading_dimension_address_counts_only_where_it_is_read():
    from tcgen05_conformance.core.encoding import sdesc
    from tcgen05_conformance.generators.value_programs import _lbo_absolute_aim

    point = f"mma.desc.B.{cov.LBO_ABSOLUTE_READ}"
    p = draw_examples(_lbo_absolute_aim({point}), 1, 5)[0]
    assert point in cov.hits(p)  # K = 96 e2m1: 48-byte rows, the third chunk at the LBO address
    op = p.ops[0]
    relative = dataclasses.replace(op, b_desc=sdesc.encode(dataclasses.replace(sdesc.decode(op.b_desc), lbo_absolute=False)))
    assert point not in cov.hits(dataclasses.replace(p, ops=(relative,)))


def test_run_require_coverage_exits_4_when_a_reachable_coverpoint_is_missed(tmp_path, capsys):
    from tcgen05_conformance.cli import main

    # Two programs draw no random ones, so no aimed ones either: most coverpoints stay missed.
    args = ["run", "--backend", "oracle", "--count", "2", "--out", str(tmp_path)]
    assert main(args) == 0
    assert main([*args, "--require-coverage"]) == 4
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["value_coverage"]["missed"] and "value coverpoints hit:" in capsys.readouterr().out
    assert "## Value coverage" in (tmp_path / "report.md").read_text()
    assert 'data-map="values"' in (tmp_path / "report.html").read_text()
