"""Strategies for illegal instructions: a legal one with exactly one rule broken, labelled with
that rule's id. Each breaker below turns a legal value into one that breaks its rule; the
strategy keeps only results whose violations are exactly {rule}."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from hypothesis import assume
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import (
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05Shift,
)
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper, mma
from tcgen05_conformance.core.isa.swizzle import INVALID_TCGEN05_SWIZZLE_CODES
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.generators import instructions as legal


def _idesc(i: Tcgen05Mma, **changes) -> Tcgen05Mma:
    d = idesc_codec.decode(i.kind, i.idesc)
    return replace(i, idesc=idesc_codec.encode(i.kind, replace(d, **changes)))


def _mma_where(target: str, keep: Callable[[mma.ShapeClass], bool]) -> st.SearchStrategy:
    classes = [c for c in legal.shape_classes_for(target_named(target)) if keep(c)]
    assume(classes)
    return st.sampled_from(classes).flatmap(lambda c: legal.tcgen05_mma(target, c))


Breaker = Callable[[st.DrawFn, str], object]
BREAKERS: dict[str, Breaker] = {}


def breaks(rule: str):
    def register(fn: Breaker) -> Breaker:
        BREAKERS[rule] = fn
        return fn
    return register


@breaks("target.family")
def _(draw, target):
    others = [n for n, t in TARGETS.items() if n != target]
    foreign = draw(st.sampled_from(others))
    instr = draw(legal.legal_instructions(foreign))
    assume(instr.OP.split(".")[0] not in {f.split(".")[0] for f in target_named(target).families}
           or (instr.OP == "tcgen05.shift" and "tcgen05.shift" not in target_named(target).features))
    return instr


@breaks("target.kind-i8")
def _(draw, target):
    return draw(_mma_where("sm_100a", lambda c: c.kind == "i8"))


@breaks("target.ld-red")
def _(draw, target):
    return draw(legal.tcgen05_ld("sm_103a").filter(lambda i: i.red_op is not None))


@breaks("target.k96")
def _(draw, target):
    return draw(_mma_where("sm_103a", lambda c: c.k == 96))


@breaks("target.lbo-absolute")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(not d.transpose_b)
    b = sdesc_codec.decode(i.b_desc)
    return replace(i, b_desc=sdesc_codec.encode(replace(b, swizzle="128B", base_offset=0, lbo_absolute=True, fixed_field_errors=())))


@breaks("syntax.qualifier")
def _(draw, target):
    assume("tcgen05" in target_named(target).families)
    return draw(st.sampled_from((
        Tcgen05Alloc(cta_group=draw(st.sampled_from((0, 3, 4))), columns=32),
        Tcgen05Alloc(state_space=draw(st.sampled_from(("shared::cluster", "shared")))),
        Tcgen05Commit(state_space=draw(st.sampled_from(("shared::cta", "shared")))),
        Tcgen05Cp("128x256b", src_fmt="b2x16_p8"),
        Tcgen05Ld("32x32b", 2, red_op="add", red_type="u32"),
    )))


@breaks("mma.ws.cta-group")
def _(draw, target):
    return replace(draw(_mma_where(target, lambda c: c.ws and c.m == 128)), cta_group=2)


@breaks("mma.ws.kind")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in mma.BLOCK_SCALED_KINDS and c.cta_group == 1))
    return replace(i, ws=True, collector=None, ashift=False)


@breaks("mma.block-scale.required")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("mxf8f6f4", "mxf4")))
    return replace(i, block_scale=False, scale_vec=None, scale_a_tmem=0, scale_b_tmem=0)


@breaks("mma.block-scale.kind")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind not in mma.BLOCK_SCALED_KINDS))
    return replace(i, block_scale=True, disable_output_lane=None, scale_input_d=None)


@breaks("mma.scale-vec.kind")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in mma.BLOCK_SCALED_KINDS and c.k != 96))
    legal_q = {s.qualifier for s in mma.SCALE_VECTORS if s.kind == i.kind}
    return replace(i, scale_vec=draw(st.sampled_from([q for q in mma.SCALE_VEC_QUALIFIERS if q not in legal_q])))


@breaks("mma.scale-vec.required")
def _(draw, target):
    return replace(draw(_mma_where(target, lambda c: c.kind == "mxf4nvf4")), scale_vec=None)


@breaks("mma.scale-vec.k96")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.k == 96))
    return replace(i, scale_vec="scale_vec::2X" if i.scale_vec in (None, "block32") else "scale_vec::4X")


@breaks("mma.collector.buffer")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    op = draw(st.sampled_from(("lastuse", "discard")))
    return replace(i, collector=f"a::{op}" if i.ws else f"b{draw(st.integers(0, 3))}::{op}")


@breaks("mma.ashift.a-tmem")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.m in mma.ASHIFT_M))
    assume(i.collector is None or i.collector.endswith(("lastuse", "discard")))
    return replace(i, ashift=True, a_tmem=None, a_desc=i.b_desc)


@breaks("mma.ashift.ws")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.ws and c.m == 128))
    assume(i.collector is None or i.collector.endswith(("lastuse", "discard")))
    return replace(i, ashift=True, a_tmem=i.a_tmem if i.a_tmem is not None else 0, a_desc=0)


@breaks("mma.ashift.collector")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.m in mma.ASHIFT_M))
    assume(i.a_tmem is not None)
    return replace(i, ashift=True, collector=f"a::{draw(st.sampled_from(('fill', 'use')))}")


@breaks("mma.ashift.kind")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in mma.BLOCK_SCALED_KINDS and c.m in mma.ASHIFT_M))
    assume(i.a_tmem is not None and (i.collector is None or i.collector.endswith(("lastuse", "discard"))))
    return replace(i, ashift=True)


@breaks("mma.ashift.m")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.m not in mma.ASHIFT_M))
    assume(i.a_tmem is not None)
    return replace(i, ashift=True, collector=None)


@breaks("mma.disable-output-lane.size")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind not in mma.BLOCK_SCALED_KINDS))
    words = 8 if i.cta_group == 1 else 4
    return replace(i, disable_output_lane=(0,) * words)


@breaks("mma.disable-output-lane.form")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.ws))
    return replace(i, disable_output_lane=(0,) * 4)


@breaks("mma.scale-input-d.kind")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind == "f8f6f4"))
    return replace(i, scale_input_d=draw(st.integers(0, 15)))


@breaks("mma.scale-input-d.i8")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind == "i8"))
    return replace(i, scale_input_d=draw(st.integers(0, 15)))


@breaks("mma.scale-input-d.range")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind in mma.SCALE_INPUT_D_KINDS))
    return replace(i, scale_input_d=draw(st.integers(16, 255)))


@breaks("mma.scale-input-d.form")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in mma.BLOCK_SCALED_KINDS))
    return replace(i, scale_input_d=draw(st.integers(0, 15)))


@breaks("mma.zero-column-mask.form")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws))
    return replace(i, zero_column_mask=0)


@breaks("idesc.reserved")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    layout = idesc_codec.LAYOUT_OF_KIND[i.kind]
    field = draw(st.sampled_from([f for f in layout.fields if f.fixed is not None]))
    return replace(i, idesc=i.idesc | (1 << field.lo))


@breaks("idesc.sparse-flag")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.sparse))
    return _idesc(i, sparse=True)


@breaks("idesc.shape-m")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.k != 96))
    legal_m = {c.m for c in mma.shape_classes(i.kind, i.ws, i.cta_group, i.sparse)}
    unit = 128 if i.kind in mma.BLOCK_SCALED_KINDS else 16
    m = draw(st.sampled_from([v for v in range(unit, 512, unit) if v not in legal_m]))
    assume(not (i.ashift or i.zero_column_mask is not None))
    return _idesc(i, m=m)


@breaks("idesc.shape-n")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    cls = mma.shape_class_for(i.kind, i.ws, i.cta_group, i.sparse, d.m, d.k96)
    n = draw(st.sampled_from([v for v in range(8, 504, 8) if v not in cls.n]))
    assume(not d.transpose_b and taddr_codec.decode(i.d_tmem)[1] + n <= dm.TMEM_COLUMNS)
    return _idesc(i, n=n)


@breaks("idesc.shape-k96")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("mxf4", "mxf4nvf4") and c.k != 96
                        and mma.shape_class_for(c.kind, c.ws, c.cta_group, c.sparse, c.m, k96=True) is None))
    assume(target == "sm_103a" and i.scale_vec in ("block32", "block16", None))
    return _idesc(i, k96=True)


@breaks("idesc.dtype")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("f16", "tf32", "f8f6f4", "i8")))
    bad = [t for t in ("f16", "f32", "s32", "?3") if t not in mma.D_TYPES[i.kind]]
    return _idesc(i, dtype=draw(st.sampled_from(bad)))


@breaks("idesc.abtype")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    width = 3 if i.kind not in ("mxf4", "mxf4nvf4") else 2
    codes = mma.AB_TYPE_CODES[i.kind]
    bad = [f"?{c}" for c in range(1 << width) if c not in codes.values()]
    assume(bad and not d.transpose_a and not d.transpose_b)
    code = draw(st.sampled_from(bad))
    return _idesc(i, atype=code, btype=code)


@breaks("idesc.abtype-mixed")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind == "f16"))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(d.dtype == "f32" and not d.transpose_a and not d.transpose_b)
    return _idesc(i, btype="bf16" if d.atype == "f16" else "f16")


@breaks("idesc.saturate")
def _(draw, target):
    return _idesc(draw(_mma_where(target, lambda c: c.kind in ("f16", "tf32", "f8f6f4"))), saturate=True)


@breaks("idesc.negate")
def _(draw, target):
    return _idesc(draw(_mma_where(target, lambda c: c.kind == "i8")), negate_a=True)


@breaks("idesc.transpose-kind")
def _(draw, target):
    return _idesc(draw(_mma_where(target, lambda c: c.kind in ("mxf4", "mxf4nvf4"))), transpose_a=True)


@breaks("idesc.transpose-size")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("f8f6f4", "mxf8f6f4")))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(mma.TYPE_BITS[d.atype] < 8)
    return _idesc(i, transpose_a=True)


@breaks("idesc.transpose-swizzle")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("f16", "tf32")))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(i.a_tmem is None and not d.transpose_a)
    s = sdesc_codec.decode(i.a_desc)
    swizzle = "128B" if i.kind == "tf32" else "128B_base32B"
    a_desc = sdesc_codec.encode(replace(s, swizzle=swizzle, lbo_absolute=False))
    return replace(_idesc(i, transpose_a=True), a_desc=a_desc)


@breaks("idesc.transpose-b-8bit-n")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("f8f6f4", "i8", "mxf8f6f4") and not c.ws))
    d = idesc_codec.decode(i.kind, i.idesc)
    lo, step = mma.TRANSPOSE_B_8BIT_N[i.cta_group]
    assume(mma.TYPE_BITS[d.btype] == 8 and (d.n < lo or d.n % step))
    s = sdesc_codec.decode(i.b_desc)
    b_desc = sdesc_codec.encode(replace(s, swizzle="128B" if s.swizzle == "128B_base32B" else s.swizzle, lbo_absolute=False))
    return replace(_idesc(i, transpose_b=True), b_desc=b_desc)


@breaks("idesc.sparse-selector")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("i8", "f8f6f4") or not c.sparse))
    assume(i.kind in ("f16", "tf32", "f8f6f4", "i8"))
    return _idesc(i, sparse_selector=draw(st.integers(1, 3)))


@breaks("idesc.max-shift")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: not c.ws and c.kind in ("f16", "tf32", "f8f6f4", "i8")))
    return _idesc(i, max_shift=draw(st.integers(1, 3)))


@breaks("idesc.scale-type")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in ("mxf8f6f4", "mxf4")))
    return _idesc(i, scale_type="ue4m3")


@breaks("idesc.sf-id")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.kind in mma.BLOCK_SCALED_KINDS))
    d = idesc_codec.decode(i.kind, i.idesc)
    sv = mma.scale_vector(i.kind, i.scale_vec, d.k96)
    bad = [v for v in range(4) if v not in sv.sf_ids]
    assume(bad)
    return _idesc(i, sfa_id=draw(st.sampled_from(bad)))


@breaks("tmem.lane-alignment")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.m != 64 and not (c.m == 128 and c.cta_group == 2 and c.sparse)))
    lane, column = taddr_codec.decode(i.d_tmem)
    return replace(i, d_tmem=taddr_codec.encode(draw(st.sampled_from((8, 16, 24))), column))


@breaks("tmem.same-alignment")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: (c.m == 64 and not c.ws) or (c.m == 128 and c.cta_group == 2 and c.sparse)))
    assume(i.a_tmem is not None)
    lane, column = taddr_codec.decode(i.a_tmem)
    return replace(i, a_tmem=taddr_codec.encode(16 - lane, column))


@breaks("tmem.columns")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    lane, _ = taddr_codec.decode(i.d_tmem)
    return replace(i, d_tmem=taddr_codec.encode(lane, draw(st.integers(513 - d.n, 1023))))


@breaks("sdesc.fixed")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    bit = draw(st.sampled_from((14, 30, 46, 47, 48, 53, 60)))
    return replace(i, b_desc=i.b_desc ^ (1 << bit))


@breaks("sdesc.swizzle")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(not d.transpose_b)
    swizzle, lbo_mode = sdesc_codec.TABLE_40.field("swizzle"), sdesc_codec.TABLE_40.field("lbo_mode")
    return replace(i, b_desc=swizzle.with_value(lbo_mode.with_value(i.b_desc, 0), draw(st.sampled_from(INVALID_TCGEN05_SWIZZLE_CODES))))


@breaks("sdesc.lbo-absolute")
def _(draw, target):
    assume("lbo-absolute" in target_named(target).features)
    i = draw(_mma_where(target, lambda c: True))
    d = idesc_codec.decode(i.kind, i.idesc)
    assume(not d.transpose_b)
    s = sdesc_codec.decode(i.b_desc)
    return replace(i, b_desc=sdesc_codec.encode(replace(s, swizzle="64B", lbo_absolute=True, base_offset=0)))


@breaks("zcmask.reserved")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.ws))
    return replace(i, zero_column_mask=(i.zero_column_mask or 0) | (1 << draw(st.sampled_from((36, 37, 38, 62, 63)))))


@breaks("zcmask.shift")
def _(draw, target):
    i = draw(_mma_where(target, lambda c: c.ws))
    d = idesc_codec.decode(i.kind, i.idesc)
    limit = mma.ZCMASK_MAX_SHIFT.get(d.m, mma.ZCMASK_MAX_SHIFT_DEFAULT)
    z = zcmask_codec.decode(i.zero_column_mask or 0)
    return replace(i, zero_column_mask=zcmask_codec.encode(replace(z, column_shift=draw(st.integers(limit + 1, 63)))))


@breaks("alloc.columns")
def _(draw, target):
    cols = draw(st.integers(0, 2048).filter(lambda n: n not in dm.ALLOC_COLUMN_COUNTS))
    return Tcgen05Alloc(cta_group=draw(st.sampled_from(dm.CTA_GROUPS)), columns=cols)


@breaks("alloc.columns-register")
def _(draw, target):
    cols = draw(st.integers(0, 2048).filter(lambda n: n not in dm.ALLOC_COLUMN_COUNTS))
    if draw(st.booleans()):
        return Tcgen05Alloc(cta_group=draw(st.sampled_from((1, 2))), columns=cols, columns_register=True)
    return Tcgen05Dealloc(cta_group=draw(st.sampled_from((1, 2))), columns=cols, columns_register=True)


@breaks("ldst.num")
def _(draw, target):
    shape = draw(st.sampled_from(("16x128b", "16x256b")))
    num = 128 if shape == "16x128b" else draw(st.sampled_from((64, 128)))
    return Tcgen05Ld(shape, num, taddr=0)


@breaks("ldst.split-offset")
def _(draw, target):
    i = draw(legal.tcgen05_ld(target).filter(lambda i: i.red_op is None))
    return replace(i, split_offset=None if i.split_offset is not None else 16)


@breaks("ld.red.shape")
def _(draw, target):
    return Tcgen05Ld(draw(st.sampled_from(("16x64b", "16x128b"))), 2, red_op="min", red_type="u32")


@breaks("ld.red.num")
def _(draw, target):
    return Tcgen05Ld("32x32b", 1, red_op="max", red_type="s32")


@breaks("ld.red.abs-nan")
def _(draw, target):
    return Tcgen05Ld("32x32b", 4, red_op="min", red_type=draw(st.sampled_from(("u32", "s32"))), red_abs=True)


@breaks("ld.red.pack")
def _(draw, target):
    return Tcgen05Ld("32x32b", 4, pack=True, red_op="min", red_type="f32")


@breaks("cp.multicast")
def _(draw, target):
    i = draw(legal.tcgen05_cp(target))
    wrong = [m for m in (None, "warpx2::02_13", "warpx2::01_23", "warpx4") if m not in dm.CP_SHAPES[i.shape].multicasts]
    return replace(i, multicast=draw(st.sampled_from(wrong)))


@breaks("shift.lane-alignment")
def _(draw, target):
    assume("tcgen05.shift" in target_named(target).features)
    return Tcgen05Shift(taddr=taddr_codec.encode(draw(st.integers(1, 31)), 0))


@breaks("wgmma.shape")
def _(draw, target):
    i = draw(legal.wgmma(target))
    return replace(i, k=i.k * 2) if draw(st.booleans()) else replace(i, n=draw(st.sampled_from((4, 12, 264, 512))))


@breaks("wgmma.types")
def _(draw, target):
    i = draw(legal.wgmma(target).filter(lambda i: i.atype in ("bf16", "tf32")))
    return replace(i, dtype="f16")


@breaks("wgmma.transpose")
def _(draw, target):
    i = draw(legal.wgmma(target).filter(lambda i: i.atype in ("tf32", "e4m3", "e5m2")))
    return replace(i, imm_trans_b=1)


@breaks("wgmma.negate")
def _(draw, target):
    i = draw(legal.wgmma(target).filter(lambda i: i.atype not in ("s8", "u8")))
    return replace(i, imm_scale_a=draw(st.sampled_from((0, 2, -2))))


@breaks("wgmma.satfinite")
def _(draw, target):
    return replace(draw(legal.wgmma(target).filter(lambda i: i.atype not in ("s8", "u8"))), satfinite=True)


@breaks("sdesc.sm90-reserved")
def _(draw, target):
    i = draw(legal.wgmma(target))
    return replace(i, b_desc=i.b_desc | (1 << draw(st.sampled_from((14, 30, 46, 47, 48, 52, 61)))))


@breaks("wgmma.sparse-selector")
def _(draw, target):
    i = draw(legal.wgmma(target).filter(lambda i: i.sparse))
    return replace(i, sparse_selector=draw(st.integers(0, 3).filter(
        lambda s: s not in hopper.WGMMA_SPARSE_SELECTORS[hopper.wgmma_type_family(i.atype)])))


@breaks("mma-sp.shape")
def _(draw, target):
    i = draw(legal.mma_sp(target))
    return replace(i, k=draw(st.sampled_from((4, 256))))


@breaks("mma-sp.types")
def _(draw, target):
    i = draw(legal.mma_sp(target).filter(lambda i: i.atype == "f16"))
    return replace(i, ctype="f32" if i.dtype == "f16" else "f16")


@breaks("mma-sp.f8-target")
def _(draw, target):
    assume(target_named(target).sm < hopper.MMA_SP_F8_MIN_SM)
    return draw(legal.mma_sp("sm_90a").filter(lambda i: i.atype in ("e4m3", "e5m2")))


@breaks("mma-sp.kind-target")
def _(draw, target):
    return MmaSp(k=64, dtype="f32", ctype="f32", atype="e3m2", btype="e2m1", kind="f8f6f4")


@breaks("mma-sp.selector")
def _(draw, target):
    i = draw(legal.mma_sp(target))
    legal_values = hopper.mma_sp_selectors(hopper.mma_sp_family(i.atype), i.k, i.dtype)
    return replace(i, sparse_selector=draw(st.integers(0, 15).filter(lambda v: v not in legal_values)))


@breaks("mma-sp.selector-silicon")
def _(draw, target):
    return MmaSp(k=32, dtype="f32", ctype="f32", atype="f16", btype="f16", ordered_metadata=draw(st.booleans()),
                 sparse_selector=draw(st.sampled_from((2, 3))), metadata=draw(st.integers(0, 2**32 - 1)))


@breaks("mma-sp.satfinite")
def _(draw, target):
    return replace(draw(legal.mma_sp(target).filter(lambda i: i.atype in ("f16", "bf16", "tf32"))), satfinite=True)


FAMILY_OF_RULE_PREFIX = {"wgmma": "wgmma", "mma-sp": "mma.sp", "target": None}
FAMILY_OF_RULE = {"sdesc.sm90-reserved": "wgmma"}
# Target features a rule can be broken alone with (+) or only without (-).
RULE_TARGET_NEEDS: dict[str, tuple[str, bool]] = {
    "target.kind-i8": ("kind::i8", False),
    "target.ld-red": ("tcgen05.ld.red", False),
    "target.k96": ("K=96", False),
    "target.lbo-absolute": ("lbo-absolute", False),
    "idesc.negate": ("kind::i8", True),
    "mma.scale-input-d.i8": ("kind::i8", True),
    "idesc.shape-k96": ("K=96", True),
    "mma.scale-vec.k96": ("K=96", True),
    "sdesc.lbo-absolute": ("lbo-absolute", True),
    "shift.lane-alignment": ("tcgen05.shift", True),
    "syntax.qualifier": ("tcgen05.ld.red", True),
    "ld.red.shape": ("tcgen05.ld.red", True),
    "ld.red.num": ("tcgen05.ld.red", True),
    "ld.red.abs-nan": ("tcgen05.ld.red", True),
    "ld.red.pack": ("tcgen05.ld.red", True),
}


def breakable_rules(target: str) -> list[str]:
    """Rules a one-rule-broken instruction can be drawn for on `target`."""
    t = target_named(target)
    rules = []
    for rule in BREAKERS:
        prefix = rule.split(".")[0]
        fam = FAMILY_OF_RULE.get(rule, FAMILY_OF_RULE_PREFIX.get(prefix, "tcgen05"))
        if fam is not None and fam not in t.families:
            continue
        if rule.startswith("target.") and rule != "target.family" and "tcgen05" not in t.families:
            continue
        feature, present = RULE_TARGET_NEEDS.get(rule, (None, True))
        if feature is not None and (feature in t.features) != present:
            continue
        if rule == "mma-sp.f8-target" and t.sm >= hopper.MMA_SP_F8_MIN_SM:
            continue
        rules.append(rule)
    return rules


@st.composite
def illegal_instructions(draw, target: str, rule: str | None = None) -> tuple[str, object]:
    """(rule id, instruction) where the instruction breaks exactly that rule on `target`."""
    rule = rule or draw(st.sampled_from(breakable_rules(target)))
    instr = BREAKERS[rule](draw, target)
    found = {v.rule for v in check(instr, target)}
    assume(found == {rule})
    return rule, instr
