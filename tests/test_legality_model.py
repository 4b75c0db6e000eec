"""The legality model: check(instruction, target) -> violations with rule ids from RULES.

Legal instructions are the spec's own Examples (PTX ISA 9.7.16.7-10), given valid descriptors.
Each minimal violation changes one thing in a legal instruction and must report exactly the
rule that forbids it. Table 39 is re-stated here from the spec text and compared with
tcgen05_conformance.core.isa.mma.SHAPE_CLASSES.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tcgen05_conformance.core.encoding import idesc, sdesc, taddr, zcmask
from tcgen05_conformance.core.encoding.idesc import InstrDescriptor
from tcgen05_conformance.core.encoding.sdesc import SmemDescriptor
from tcgen05_conformance.core.encoding.zcmask import ZeroColumnMask
from tcgen05_conformance.core.instructions import (
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Fence,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05RelinquishAllocPermit,
    Tcgen05Shift,
    Tcgen05St,
    Tcgen05Wait,
    WgmmaMma,
)
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import RULES, check, is_legal

# --- Builders ------------------------------------------------------------------------------

SMEM_128B = sdesc.encode(SmemDescriptor(0x1000, 0x10, 0x400, "128B"))
SMEM_128B_32B_ATOM = sdesc.encode(SmemDescriptor(0x1000, 0x10, 0x400, "128B_base32B"))
SMEM_64B = sdesc.encode(SmemDescriptor(0x1000, 0x10, 0x200, "64B"))
SM90_128B = sdesc.encode(SmemDescriptor(0x1000, 0x10, 0x400, "128B"), "sm90")

DEFAULT_TYPES = {  # kind -> (A/B type, D type); Table 39
    "f16": ("f16", "f32"),
    "tf32": ("tf32", "f32"),
    "f8f6f4": ("e4m3", "f32"),
    "i8": ("s8", "s32"),
    "mxf8f6f4": ("e4m3", "f32"),
    "mxf4": ("e2m1", "f32"),
    "mxf4nvf4": ("e2m1", "f32"),
}


def mma_instr(kind: str, m: int = 128, n: int = 128, *, sparse: bool = False,
              idesc_kw: dict | None = None, **instr_kw) -> Tcgen05Mma:
    """A legal-by-default tcgen05.mma: D at TMEM lane 0 column 0, A and B in SMEM (128B)."""
    ab, dtype = DEFAULT_TYPES[kind]
    fields = dict(m=m, n=n, atype=ab, btype=ab, dtype=dtype, sparse=sparse)
    scaled = kind in mma.BLOCK_SCALED_KINDS
    if scaled:
        fields["scale_type"] = "ue8m0"
    fields.update(idesc_kw or {})
    instr_kw.setdefault("block_scale", scaled)
    if kind == "mxf4nvf4":
        instr_kw.setdefault("scale_vec", "block32")
    instr_kw.setdefault("a_desc", SMEM_128B)
    instr_kw.setdefault("b_desc", SMEM_128B)
    return Tcgen05Mma(kind=kind, sparse=sparse, idesc=idesc.encode(kind, InstrDescriptor(**fields)),
                      **instr_kw)


def with_idesc(instr: Tcgen05Mma, set_: int = 0, clear: int = 0) -> Tcgen05Mma:
    return replace(instr, idesc=(instr.idesc | set_) & ~clear)


def rules(instr, target: str = "sm_100a") -> set[str]:
    return {v.rule for v in check(instr, target)}


# --- The spec's own examples are legal --------------------------------------------------------

SPEC_EXAMPLES = [
    # 9.7.16.10.9.1: tcgen05.mma.cta_group::1.kind::tf32 [taddr0], adesc, bdesc, idesc,
    #                {m0, m1, m2, m3}, p;
    pytest.param(mma_instr("tf32", 128, 256, disable_output_lane=(0, 0, 0, 0)), id="mma-tf32"),
    # tcgen05.mma.cta_group::1.kind::mxf8f6f4 [taddr2], [taddr1], bdesc, idesc, [scaleA],
    # [scaleB], p;  (the syntax requires .block_scale, which the example omits)
    pytest.param(mma_instr("mxf8f6f4", 128, 128, a_tmem=taddr.encode(0, 256),
                           scale_a_tmem=taddr.encode(0, 384), scale_b_tmem=taddr.encode(0, 388)),
                 id="mma-mxf8f6f4-a-tmem"),
    # 9.7.16.10.9.2: tcgen05.mma.sp.cta_group::1.kind::f16 [taddr0], adesc, bdesc,
    #                [tmem_spmeta0], idesc, p;
    pytest.param(mma_instr("f16", 128, 128, sparse=True, sp_meta_tmem=taddr.encode(0, 256)),
                 id="mma-sp-f16"),
    # tcgen05.mma.sp.cta_group::1.kind::mxf8f6f4.collector::a:fill [taddr2], [taddr1], bdesc,
    #                [tmem_spmeta1], idesc, [tmem_scaleA], [tmem_scaleB], p;
    pytest.param(mma_instr("mxf8f6f4", 128, 64, sparse=True, collector="a::fill",
                           a_tmem=taddr.encode(0, 128), sp_meta_tmem=taddr.encode(0, 256),
                           scale_a_tmem=taddr.encode(0, 300), scale_b_tmem=taddr.encode(0, 304)),
                 id="mma-sp-mxf8f6f4-collector-a-fill"),
    # 9.7.16.10.9.3: tcgen05.mma.ws.cta_group::1.kind::i8.collector::b2:use [taddr2], [taddr1],
    #                bdesc, idesc, p;
    pytest.param(mma_instr("i8", 128, 256, ws=True, collector="b2::use",
                           a_tmem=taddr.encode(0, 256)), id="mma-ws-i8-collector-b2-use"),
    # 9.7.16.10.9.4: tcgen05.mma.ws.sp.cta_group::1.kind::tf32.collector::b1::fill [taddr1],
    #                [taddr0], bdesc, [tmem_spmeta0], idesc, p;
    pytest.param(mma_instr("tf32", 64, 128, sparse=True, ws=True, collector="b1::fill",
                           a_tmem=taddr.encode(0, 128), sp_meta_tmem=taddr.encode(0, 256)),
                 id="mma-ws-sp-tf32-collector-b1-fill"),
    # 9.7.16.7: alloc / dealloc / relinquish_alloc_permit, cta_group::1 and ::2, 32 columns.
    pytest.param(Tcgen05Alloc(1, 32), id="alloc-cta1"),
    pytest.param(Tcgen05Alloc(2, 32), id="alloc-cta2"),
    pytest.param(Tcgen05Dealloc(1, 32, taddr.encode(0, 0)), id="dealloc-cta1"),
    pytest.param(Tcgen05Dealloc(2, 32, taddr.encode(0, 0)), id="dealloc-cta2"),
    pytest.param(Tcgen05RelinquishAllocPermit(1), id="relinquish-cta1"),
    pytest.param(Tcgen05RelinquishAllocPermit(2), id="relinquish-cta2"),
    # 9.7.16.8.3: tcgen05.ld.sync.aligned.32x32b.x2.b32 / 16x128b.x4.b32
    pytest.param(Tcgen05Ld("32x32b", 2), id="ld-32x32b-x2"),
    pytest.param(Tcgen05Ld("16x128b", 4), id="ld-16x128b-x4"),
    # 9.7.16.8.4: tcgen05.st.sync.aligned.16x64b.x4.b32 / 16x128b.x1.unpack::16b.b32
    pytest.param(Tcgen05St("16x64b", 4), id="st-16x64b-x4"),
    pytest.param(Tcgen05St("16x128b", 1, unpack=True), id="st-16x128b-x1-unpack"),
    # 9.7.16.8.5 / 9.7.16.8.x examples: wait::ld, wait::st
    pytest.param(Tcgen05Wait("ld"), id="wait-ld"),
    pytest.param(Tcgen05Wait("st"), id="wait-st"),
    # 9.7.16.9.2: tcgen05.cp examples
    pytest.param(Tcgen05Cp("128x256b", 1), id="cp-128x256b"),
    pytest.param(Tcgen05Cp("128x128b", 2, src_fmt="b6x16_p32"), id="cp-128x128b-b6x16_p32"),
    pytest.param(Tcgen05Cp("64x128b", 1, multicast="warpx2::02_13"), id="cp-64x128b-warpx2"),
    # 9.7.16.9.3: tcgen05.shift.down.cta_group::1 / ::2
    pytest.param(Tcgen05Shift(1, taddr.encode(0, 0)), id="shift-cta1"),
    pytest.param(Tcgen05Shift(2, taddr.encode(32, 0)), id="shift-cta2"),
    # tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [mbarObj0];
    pytest.param(Tcgen05Commit(1), id="commit-cta1"),
    pytest.param(Tcgen05Fence("before_thread_sync"), id="fence-before"),
    pytest.param(Tcgen05Fence("after_thread_sync"), id="fence-after"),
]


@pytest.mark.parametrize("instr", SPEC_EXAMPLES)
def test_spec_examples_are_legal_on_sm_100a(instr):
    assert check(instr, "sm_100a") == []
    assert is_legal(instr, "sm_100a")


def test_ld_red_example_is_legal_on_sm_103a_only():
    # tcgen05.ld.red.sync.aligned.16x32bx2.x8.u32.max {...}, redVal, [taddr3], 16;
    instr = Tcgen05Ld("16x32bx2", 8, red_op="max", red_type="u32", split_offset=16)
    assert check(instr, "sm_103a") == []
    assert rules(instr, "sm_100a") == {"target.ld-red"}


def test_check_accepts_a_target_object_and_rejects_unknown_names():
    instr = Tcgen05Alloc(1, 48)
    assert rules(instr) == {v.rule for v in check(instr, TARGETS["sm_100a"])}
    with pytest.raises(ValueError):
        check(instr, "sm_99z")


def test_violations_carry_rule_metadata():
    (v,) = check(Tcgen05Alloc(1, 48), "sm_100a")
    assert v.rule == "alloc.columns"
    assert v.reference == RULES["alloc.columns"].reference
    assert v.checked_by == RULES["alloc.columns"].checked_by
    assert "alloc.columns" in str(v)


# --- One minimal violation per rule -------------------------------------------------------------


def zc(**kw) -> int:
    return zcmask.encode(ZeroColumnMask(**kw))


MINIMAL_VIOLATIONS = [
    # targets
    ("target.k96", mma_instr("mxf4", 256, 256, cta_group=2, idesc_kw={"k96": True}), "sm_100a"),
    ("target.kind-i8", mma_instr("i8", 128, 256), "sm_103a"),
    ("target.ld-red", Tcgen05Ld("32x32b", 2, red_op="min"), "sm_100a"),
    ("target.family", WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16"), "sm_100a"),
    ("target.family", Tcgen05Alloc(1, 32), "sm_90a"),
    ("target.family", mma_instr("f16"), "sm_80"),
    ("target.lbo-absolute",
     mma_instr("f16", b_desc=sdesc.encode(SmemDescriptor(0x1000, 0x1800, 0x400, "128B",
                                                         lbo_absolute=True))), "sm_100a"),
    # shapes (Table 39)
    ("idesc.shape-m", mma_instr("mxf8f6f4", 256, 128, cta_group=1), "sm_100a"),
    # M = 64 written into Table 43's M >> 7 field is 0: the descriptor says M = 0.
    ("idesc.shape-m", with_idesc(mma_instr("mxf8f6f4"), clear=3 << 27), "sm_100a"),
    ("idesc.shape-m", mma_instr("f16", 64, 128, cta_group=2), "sm_100a"),
    ("idesc.shape-m", mma_instr("f16", 256, 128, ws=True), "sm_100a"),
    ("idesc.shape-m", mma_instr("mxf8f6f4", 128, 128, cta_group=2, sparse=True), "sm_100a"),
    ("idesc.shape-n", mma_instr("f16", 128, 264), "sm_100a"),
    ("idesc.shape-n", mma_instr("f16", 128, 24, cta_group=2), "sm_100a"),
    ("idesc.shape-n", mma_instr("i8", 128, 40), "sm_100a"),
    ("idesc.shape-n", mma_instr("tf32", 64, 256, ws=True, sparse=True), "sm_100a"),
    ("idesc.shape-k96", mma_instr("mxf4", 128, 128, sparse=True, idesc_kw={"k96": True}), "sm_103a"),
    # qualifiers
    ("mma.ws.cta-group", mma_instr("f16", 128, 128, ws=True, cta_group=2), "sm_100a"),
    ("mma.ws.kind", mma_instr("mxf8f6f4", 128, 128, ws=True), "sm_100a"),
    ("mma.block-scale.required", mma_instr("mxf4", block_scale=False), "sm_100a"),
    ("mma.block-scale.kind", mma_instr("f16", block_scale=True), "sm_100a"),
    ("mma.scale-vec.kind", mma_instr("mxf4", scale_vec="scale_vec::4X"), "sm_100a"),
    ("mma.scale-vec.kind", mma_instr("mxf8f6f4", scale_vec="scale_vec::2X"), "sm_100a"),
    ("mma.scale-vec.required", mma_instr("mxf4nvf4", scale_vec=None), "sm_100a"),
    # 9.7.16.10.9.1 aliases: .scale_vec::2X is .block32 only "when ... K = 64 or 128"; with
    # K = 96 only .block16/.block32 name a scale vector (assumption A-K96-SCALEVEC).
    ("mma.scale-vec.k96",
     mma_instr("mxf4", 256, 256, cta_group=2, scale_vec="scale_vec::2X", idesc_kw={"k96": True}),
     "sm_103a"),
    ("mma.collector.buffer", mma_instr("f16", collector="b0::fill"), "sm_100a"),
    ("mma.collector.buffer", mma_instr("f16", 128, 128, ws=True, collector="a::fill"), "sm_100a"),
    ("mma.ashift.a-tmem", mma_instr("f16", ashift=True), "sm_100a"),
    ("mma.ashift.ws",
     mma_instr("f16", 128, 128, ws=True, ashift=True, a_tmem=taddr.encode(0, 256)), "sm_100a"),
    ("mma.ashift.collector",
     mma_instr("f16", ashift=True, a_tmem=taddr.encode(0, 256), collector="a::use"), "sm_100a"),
    ("mma.ashift.collector",
     mma_instr("f16", ashift=True, a_tmem=taddr.encode(0, 256), collector="a::fill"), "sm_100a"),
    # .ashift appears only in syntax forms 3 and 6 (f16, tf32, f8f6f4, i8).
    ("mma.ashift.kind",
     mma_instr("mxf8f6f4", ashift=True, a_tmem=taddr.encode(0, 256)), "sm_100a"),
    ("mma.ashift.m",
     mma_instr("f16", 64, 128, ashift=True, a_tmem=taddr.encode(0, 256)), "sm_100a"),
    ("mma.disable-output-lane.size", mma_instr("f16", disable_output_lane=(0,) * 8), "sm_100a"),
    ("mma.disable-output-lane.size",
     mma_instr("f16", 256, 128, cta_group=2, disable_output_lane=(0,) * 4), "sm_100a"),
    ("mma.disable-output-lane.form",
     mma_instr("f16", 128, 128, ws=True, disable_output_lane=(0,) * 4), "sm_100a"),
    ("mma.scale-input-d.kind", mma_instr("f8f6f4", scale_input_d=1), "sm_100a"),
    ("mma.scale-input-d.i8", mma_instr("i8", 128, 256, scale_input_d=1), "sm_100a"),
    ("mma.scale-input-d.range", mma_instr("f16", scale_input_d=16), "sm_100a"),
    ("mma.scale-input-d.ws", mma_instr("f16", 128, 128, ws=True, scale_input_d=1), "sm_100a"),
    ("mma.scale-input-d.form", mma_instr("mxf4", scale_input_d=1), "sm_100a"),
    ("mma.zero-column-mask.form", mma_instr("f16", zero_column_mask=zc()), "sm_100a"),
    # instruction descriptor
    ("idesc.reserved", with_idesc(mma_instr("f16"), set_=1 << 23), "sm_100a"),
    ("idesc.sparse-flag", replace(mma_instr("f16"), sparse=True), "sm_100a"),
    ("idesc.sparse-flag", replace(mma_instr("f16", sparse=True), sparse=False), "sm_100a"),
    ("idesc.dtype", mma_instr("tf32", idesc_kw={"dtype": "f16"}), "sm_100a"),
    ("idesc.abtype", mma_instr("f16", idesc_kw={"dtype": "f16", "atype": "bf16", "btype": "bf16"}),
     "sm_100a"),
    ("idesc.abtype-mixed", mma_instr("f16", idesc_kw={"atype": "f16", "btype": "bf16"}), "sm_100a"),
    ("idesc.saturate", mma_instr("f16", idesc_kw={"saturate": True}), "sm_100a"),
    ("idesc.negate", mma_instr("i8", 128, 256, idesc_kw={"negate_a": True}), "sm_100a"),
    ("idesc.transpose-kind", mma_instr("mxf4", idesc_kw={"transpose_a": True}), "sm_100a"),
    ("idesc.transpose-size",
     mma_instr("f8f6f4", idesc_kw={"atype": "e2m1", "btype": "e2m1", "transpose_a": True}),
     "sm_100a"),
    ("idesc.transpose-swizzle", mma_instr("tf32", idesc_kw={"transpose_b": True}), "sm_100a"),
    ("idesc.transpose-swizzle",
     mma_instr("f16", idesc_kw={"transpose_a": True}, a_desc=SMEM_128B_32B_ATOM), "sm_100a"),
    ("idesc.transpose-b-8bit-n",
     mma_instr("f8f6f4", 128, 24, idesc_kw={"transpose_b": True}), "sm_100a"),
    ("idesc.transpose-b-8bit-n",
     mma_instr("f8f6f4", 256, 48, cta_group=2, idesc_kw={"transpose_b": True}), "sm_100a"),
    ("idesc.sparse-selector",
     mma_instr("i8", 128, 256, sparse=True, idesc_kw={"sparse_selector": 1}), "sm_100a"),
    ("idesc.sparse-selector", mma_instr("f16", idesc_kw={"sparse_selector": 1}), "sm_100a"),
    ("idesc.max-shift", mma_instr("f16", idesc_kw={"max_shift": 1}), "sm_100a"),
    ("idesc.scale-type", mma_instr("mxf4", idesc_kw={"scale_type": "ue4m3"}), "sm_100a"),
    ("idesc.scale-type",
     mma_instr("mxf4nvf4", scale_vec="scale_vec::2X", idesc_kw={"scale_type": "ue4m3"}),
     "sm_100a"),
    ("idesc.scale-type", mma_instr("mxf8f6f4", idesc_kw={"scale_type": "ue4m3"}), "sm_100a"),
    ("idesc.sf-id", mma_instr("mxf4", scale_vec="scale_vec::2X", idesc_kw={"sfa_id": 1}),
     "sm_100a"),
    ("idesc.sf-id", mma_instr("mxf4nvf4", scale_vec="scale_vec::4X", idesc_kw={"sfb_id": 2}),
     "sm_100a"),
    # TMEM operands
    ("tmem.lane-alignment", mma_instr("f16", 128, 128, d_tmem=taddr.encode(16, 0)), "sm_100a"),
    ("tmem.lane-alignment",
     mma_instr("f16", 256, 128, cta_group=2, d_tmem=taddr.encode(16, 0)), "sm_100a"),
    ("tmem.same-alignment",
     mma_instr("f16", 64, 128, d_tmem=taddr.encode(16, 0), a_tmem=taddr.encode(0, 256)),
     "sm_100a"),
    ("tmem.same-alignment",
     mma_instr("f16", 128, 128, cta_group=2, sparse=True, d_tmem=taddr.encode(16, 0),
               sp_meta_tmem=taddr.encode(0, 256)), "sm_100a"),
    ("tmem.columns", mma_instr("f16", 128, 256, d_tmem=taddr.encode(0, 384)), "sm_100a"),
    # shared-memory descriptors
    ("sdesc.fixed", mma_instr("f16", b_desc=SMEM_128B & ~(1 << 46)), "sm_100a"),
    ("sdesc.fixed", mma_instr("f16", a_desc=SMEM_128B | 1 << 53), "sm_100a"),
    ("sdesc.swizzle", mma_instr("f16", b_desc=(SMEM_128B & ~(7 << 61)) | 5 << 61), "sm_100a"),
    ("sdesc.lbo-absolute",
     mma_instr("f16", b_desc=sdesc.encode(SmemDescriptor(0x1000, 0x1800, 0x400, "64B",
                                                         lbo_absolute=True))), "sm_103a"),
    # zero-column mask (.ws only)
    ("zcmask.reserved", mma_instr("f16", 128, 128, ws=True, zero_column_mask=1 << 36), "sm_100a"),
    ("zcmask.shift",
     mma_instr("f16", 32, 128, ws=True, zero_column_mask=zc(column_shift=17)), "sm_100a"),
    ("zcmask.shift",
     mma_instr("f16", 64, 128, ws=True, zero_column_mask=zc(column_shift=33)), "sm_100a"),
    # alloc / ld / st / cp / shift
    ("alloc.columns", Tcgen05Alloc(1, 48), "sm_100a"),
    ("alloc.columns", Tcgen05Alloc(1, 16), "sm_100a"),
    ("alloc.columns", Tcgen05Alloc(1, 1024), "sm_100a"),
    ("alloc.columns", Tcgen05Dealloc(1, 96), "sm_100a"),
    ("ldst.num", Tcgen05Ld("16x256b", 64), "sm_100a"),
    ("ldst.num", Tcgen05Ld("16x128b", 128), "sm_100a"),
    ("ldst.num", Tcgen05St("32x32b", 3), "sm_100a"),
    ("ldst.split-offset", Tcgen05Ld("16x32bx2", 2), "sm_100a"),
    ("ldst.split-offset", Tcgen05St("32x32b", 2, split_offset=16), "sm_100a"),
    ("ld.red.shape", Tcgen05Ld("16x64b", 2, red_op="max"), "sm_103a"),
    ("ld.red.num", Tcgen05Ld("32x32b", 1, red_op="max"), "sm_103a"),
    ("ld.red.abs-nan", Tcgen05Ld("32x32b", 2, red_op="min", red_type="s32", red_abs=True),
     "sm_103a"),
    ("ld.red.pack", Tcgen05Ld("32x32b", 2, red_op="min", pack=True), "sm_103a"),
    ("cp.multicast", Tcgen05Cp("64x128b"), "sm_100a"),
    ("cp.multicast", Tcgen05Cp("32x128b", multicast="warpx2::01_23"), "sm_100a"),
    ("cp.multicast", Tcgen05Cp("128x256b", multicast="warpx4"), "sm_100a"),
    ("shift.lane-alignment", Tcgen05Shift(1, taddr.encode(16, 0)), "sm_100a"),
    # mma.sp (warp level)
    ("mma-sp.f8-target", MmaSp(k=64, dtype="f32", atype="e4m3", btype="e4m3", ctype="f32"),
     "sm_80"),
    ("mma-sp.kind-target",
     MmaSp(k=64, dtype="f32", atype="e4m3", btype="e4m3", ctype="f32", kind="f8f6f4"), "sm_100a"),
    ("mma-sp.shape", MmaSp(k=8, dtype="f32", atype="f16", btype="f16", ctype="f32"), "sm_80"),
    ("mma-sp.selector",
     MmaSp(k=32, dtype="f32", atype="f16", btype="f16", ctype="f32", sparse_selector=4), "sm_80"),
    ("mma-sp.satfinite",
     MmaSp(k=32, dtype="f32", atype="f16", btype="f16", ctype="f32", satfinite=True), "sm_80"),
    ("mma-sp.types", MmaSp(k=32, dtype="f32", atype="f16", btype="f16", ctype="f16"), "sm_80"),
    # wgmma
    ("wgmma.shape", WgmmaMma(n=64, k=32, dtype="f32", atype="f16", btype="f16"), "sm_90a"),
    ("wgmma.shape", WgmmaMma(n=12, k=16, dtype="f32", atype="f16", btype="f16"), "sm_90a"),
    ("wgmma.types", WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="bf16"), "sm_90a"),
    ("wgmma.satfinite",
     WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16", satfinite=True), "sm_90a"),
    # imm-trans-a/b exist only for .f16/.bf16; integer wgmma has no imm-scale-a/b (9.7.15.5.2).
    ("wgmma.transpose",
     WgmmaMma(n=64, k=8, dtype="f32", atype="tf32", btype="tf32", imm_trans_b=1), "sm_90a"),
    ("wgmma.transpose",
     WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16", a_in_registers=True,
              imm_trans_a=1), "sm_90a"),
    ("wgmma.negate",
     WgmmaMma(n=64, k=32, dtype="s32", atype="s8", btype="s8", imm_scale_a=-1), "sm_90a"),
    ("sdesc.sm90-reserved",
     WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16", b_desc=SM90_128B | 1 << 46),
     "sm_90a"),
]


@pytest.mark.parametrize(
    "rule, instr, target",
    [pytest.param(*row, id=f"{row[0]}-{i}") for i, row in enumerate(MINIMAL_VIOLATIONS)],
)
def test_minimal_violation_reports_only_its_rule(rule, instr, target):
    assert rule in RULES
    assert rules(instr, target) == {rule}


# --- Legal neighbours of the minimal violations -------------------------------------------------


LEGAL_NEIGHBOURS = [
    (mma_instr("mxf4", 256, 256, cta_group=2, idesc_kw={"k96": True}), "sm_103a"),
    (mma_instr("mxf4nvf4", 256, 256, cta_group=2, scale_vec="block16",
               idesc_kw={"k96": True, "scale_type": "ue4m3"}), "sm_103a"),
    (mma_instr("i8", 128, 256), "sm_100a"),
    (mma_instr("i8", 128, 24), "sm_100a"),
    (mma_instr("i8", 128, 48), "sm_100a"),
    (mma_instr("f16", 128, 256, d_tmem=taddr.encode(0, 256)), "sm_100a"),
    # Layout F (M = 64, not .ws): lane alignment 0 or 16.
    (mma_instr("f16", 64, 128, d_tmem=taddr.encode(16, 0)), "sm_100a"),
    (mma_instr("f16", 64, 128, d_tmem=taddr.encode(16, 0), a_tmem=taddr.encode(16, 256)),
     "sm_100a"),
    # Layout C (M = 128, cta_group::2, sparse): 0 or 16, same for D and metadata.
    (mma_instr("f16", 128, 128, cta_group=2, sparse=True, d_tmem=taddr.encode(16, 0),
               sp_meta_tmem=taddr.encode(16, 256)), "sm_100a"),
    (mma_instr("f16", 128, 128, ashift=True, a_tmem=taddr.encode(0, 256)), "sm_100a"),
    (mma_instr("f16", 256, 128, cta_group=2, ashift=True, a_tmem=taddr.encode(0, 256),
               collector="a::lastuse"), "sm_100a"),
    (mma_instr("tf32", idesc_kw={"transpose_b": True}, b_desc=SMEM_128B_32B_ATOM), "sm_100a"),
    (mma_instr("f16", idesc_kw={"transpose_a": True, "transpose_b": True}, a_desc=SMEM_64B),
     "sm_100a"),
    (mma_instr("f8f6f4", 128, 16, idesc_kw={"transpose_b": True}), "sm_100a"),
    (mma_instr("f8f6f4", 256, 32, cta_group=2, idesc_kw={"transpose_b": True}), "sm_100a"),
    (mma_instr("mxf4", idesc_kw={"negate_a": True, "negate_b": True}), "sm_100a"),
    (mma_instr("mxf4", scale_vec="scale_vec::2X", idesc_kw={"sfa_id": 2, "sfb_id": 2}), "sm_100a"),
    (mma_instr("mxf4nvf4", scale_vec="scale_vec::4X", idesc_kw={"scale_type": "ue4m3"}),
     "sm_100a"),
    (mma_instr("mxf4nvf4", scale_vec="block16", idesc_kw={"scale_type": "ue8m0"}), "sm_100a"),
    (mma_instr("mxf8f6f4", scale_vec="scale_vec::1X", idesc_kw={"sfa_id": 3, "sfb_id": 1}),
     "sm_100a"),
    (mma_instr("f16", scale_input_d=15), "sm_100a"),
    (mma_instr("tf32", scale_input_d=0), "sm_100a"),
    (mma_instr("tf32", 128, 128, sparse=True, idesc_kw={"sparse_selector": 3}), "sm_100a"),
    (mma_instr("f16", 128, 128, ws=True, idesc_kw={"max_shift": 3}), "sm_100a"),
    (mma_instr("f16", 256, 256, cta_group=2, disable_output_lane=(0,) * 8), "sm_100a"),
    (mma_instr("f16", 32, 64, ws=True, zero_column_mask=zc(column_shift=16)), "sm_100a"),
    (mma_instr("f16", 64, 256, ws=True, zero_column_mask=zc(column_shift=32)), "sm_100a"),
    (mma_instr("f16", b_desc=sdesc.encode(SmemDescriptor(0x1000, 0x1800, 0x400, "128B",
                                                         lbo_absolute=True))), "sm_103a"),
    (Tcgen05Ld("16x256b", 32), "sm_100a"),
    (Tcgen05St("16x128b", 64), "sm_100a"),
    (Tcgen05Ld("32x32b", 128), "sm_100a"),
    (Tcgen05Ld("16x32bx2", 128, split_offset=32), "sm_100a"),
    (Tcgen05Ld("32x32b", 2, red_op="min", red_type="f32", red_abs=True, red_nan=True), "sm_103a"),
    (Tcgen05Cp("64x128b", multicast="warpx2::01_23"), "sm_100a"),
    (Tcgen05Cp("32x128b", multicast="warpx4"), "sm_100a"),
    (Tcgen05Cp("4x256b"), "sm_100a"),
    (Tcgen05Shift(1, taddr.encode(96, 0)), "sm_103a"),
    *[(Tcgen05Alloc(1, c), "sm_100a") for c in (32, 64, 128, 256, 512)],
    (MmaSp(k=64, dtype="f32", atype="e4m3", btype="e4m3", ctype="f32"), "sm_90a"),
    (MmaSp(k=32, dtype="f32", atype="f16", btype="f16", ctype="f32"), "sm_80"),
    (MmaSp(k=64, dtype="s32", atype="s8", btype="u8", ctype="s32", satfinite=True), "sm_80"),
    (WgmmaMma(n=256, k=16, dtype="f32", atype="f16", btype="f16", b_desc=SM90_128B,
              a_desc=SM90_128B), "sm_90a"),
]


@pytest.mark.parametrize("instr, target", LEGAL_NEIGHBOURS)
def test_legal_neighbours(instr, target):
    assert check(instr, target) == []


def test_mxf8f6f4_m64_is_not_encodable():
    # Table 43 holds M >> 7: M = 64 cannot be written into a .kind::mxf8f6f4 descriptor.
    with pytest.raises(ValueError):
        mma_instr("mxf8f6f4", 64, 128)


def test_k96_on_sm_103a_is_dense_m128_or_cta2_m256():
    # K1 = 96: Table 39 prints it for dense cta_group::2 M = 256; CUTLASS's SM103 atoms (shipped in
    # B300 kernels) also build cta_group::1 M = 128 with N a multiple of 16 and cta_group::2 M = 128
    # (assumption A-K96-SHAPES); sparse K = 96 exists in neither.
    for cta_group, m, n in ((2, 256, 256), (1, 128, 16), (1, 128, 256), (2, 128, 32)):
        legal = mma_instr("mxf4", m, n, cta_group=cta_group, idesc_kw={"k96": True})
        assert check(legal, "sm_103a") == [], (cta_group, m, n)
    assert "idesc.shape-n" in rules(mma_instr("mxf4", 128, 8, idesc_kw={"k96": True}), "sm_103a")
    bad_sparse = mma_instr("mxf4", 256, 256, cta_group=2, sparse=True, idesc_kw={"k96": True})
    assert "idesc.shape-k96" in rules(bad_sparse, "sm_103a")
    bad_sparse_cta1 = mma_instr("mxf4", 128, 128, sparse=True, idesc_kw={"k96": True})
    assert "idesc.shape-k96" in rules(bad_sparse_cta1, "sm_103a")


# --- Qualifier values outside the PTX grammar ----------------------------------------------------

OUT_OF_GRAMMAR = [
    # ".cta_group = { .cta_group::1, .cta_group::2 }" (9.7.16.10.9.1, 9.7.16.7.1 syntax)
    pytest.param(mma_instr("f16", 128, 128, cta_group=3), id="mma-cta_group-3"),
    pytest.param(Tcgen05Alloc(3, 32), id="alloc-cta_group-3"),
    # ".src_fmt = { .b6x16_p32, .b4x16_p64 }" (9.7.16.9.2 syntax)
    pytest.param(Tcgen05Cp("128x256b", src_fmt="b5x16_p32"), id="cp-src_fmt"),
    # ".redOp = { .min, .max }", ".type = { .u32, .s32 }" or .f32 (9.7.16.8.3 syntax)
    pytest.param(Tcgen05Ld("32x32b", 2, red_op="add"), id="ld-red-op-add"),
    pytest.param(Tcgen05Ld("32x32b", 2, red_op="min", red_type="f16"), id="ld-red-type-f16"),
    # ".wait_operation = { .wait::ld, .wait::st }" (9.7.16.8.5 syntax)
    pytest.param(Tcgen05Wait("all"), id="wait-all"),
]


@pytest.mark.parametrize("instr", OUT_OF_GRAMMAR)
def test_out_of_grammar_qualifiers_are_illegal(instr):
    assert check(instr, "sm_103a") != []


# --- Table 39, restated from the spec text -------------------------------------------------------

N_STEP8 = frozenset(range(8, 257, 8))  # "N = {8, 16, 24, ... 256} steps of 8"
N_STEP16 = frozenset(range(16, 257, 16))  # "N = {16, 32, ... 256} steps of 16"
N_I8_CTA1 = frozenset({8, 16, 24, 32, *range(48, 257, 16)})  # "steps of 16 after N > 32"
N_I8_CTA2 = frozenset(range(32, 257, 32))  # "N = {32, 64, ... 256} steps of 32"
N_WS_DENSE = frozenset({64, 128, 256})
N_WS_SPARSE = frozenset({64, 128})

# (kind, ws, cta_group, sparse, M values, N set, K)
TABLE_39 = [
    ("f16", False, 1, False, (64, 128), N_STEP8, 16),
    ("f16", False, 1, True, (64, 128), N_STEP8, 32),
    ("f16", False, 2, False, (128, 256), N_STEP16, 16),
    ("f16", False, 2, True, (128, 256), N_STEP16, 32),
    ("f16", True, 1, False, (32, 64, 128), N_WS_DENSE, 16),
    ("f16", True, 1, True, (32, 64, 128), N_WS_SPARSE, 32),
    ("tf32", False, 1, False, (64, 128), N_STEP8, 8),
    ("tf32", False, 1, True, (64, 128), N_STEP8, 16),
    ("tf32", False, 2, False, (128, 256), N_STEP16, 8),
    ("tf32", False, 2, True, (128, 256), N_STEP16, 16),
    ("tf32", True, 1, False, (32, 64, 128), N_WS_DENSE, 8),
    ("tf32", True, 1, True, (32, 64, 128), N_WS_SPARSE, 16),
    ("f8f6f4", False, 1, False, (64, 128), N_STEP8, 32),
    ("f8f6f4", False, 1, True, (64, 128), N_STEP8, 64),
    ("f8f6f4", False, 2, False, (128, 256), N_STEP16, 32),
    ("f8f6f4", False, 2, True, (128, 256), N_STEP16, 64),
    ("f8f6f4", True, 1, False, (32, 64, 128), N_WS_DENSE, 32),
    ("f8f6f4", True, 1, True, (32, 64, 128), N_WS_SPARSE, 64),
    ("mxf8f6f4", False, 1, False, (128,), N_STEP8, 32),
    ("mxf8f6f4", False, 1, True, (128,), N_STEP8, 64),
    ("mxf8f6f4", False, 2, False, (128, 256), N_STEP16, 32),
    ("mxf8f6f4", False, 2, True, (256,), N_STEP16, 64),
    ("i8", False, 1, False, (64, 128), N_I8_CTA1, 32),
    ("i8", False, 1, True, (64, 128), N_I8_CTA1, 64),
    ("i8", False, 2, False, (128, 256), N_I8_CTA2, 32),
    ("i8", False, 2, True, (128, 256), N_I8_CTA2, 64),
    ("i8", True, 1, False, (32, 64, 128), N_WS_DENSE, 32),
    ("i8", True, 1, True, (32, 64, 128), N_WS_SPARSE, 64),
    ("mxf4", False, 1, False, (128,), N_STEP8, 64),
    ("mxf4", False, 1, False, (128,), N_STEP16, 96),  # K1 = 96 with M = 128: CUTLASS SM103 atoms (A-K96-SHAPES)
    ("mxf4", False, 1, True, (128,), N_STEP8, 128),
    ("mxf4", False, 2, False, (128, 256), N_STEP16, 64),
    ("mxf4", False, 2, False, (128, 256), N_STEP16, 96),  # 256xNxK1, K1 = 96; M = 128 as above
    ("mxf4", False, 2, True, (256,), N_STEP16, 128),
    ("mxf4nvf4", False, 1, False, (128,), N_STEP8, 64),
    ("mxf4nvf4", False, 1, False, (128,), N_STEP16, 96),
    ("mxf4nvf4", False, 1, True, (128,), N_STEP8, 128),
    ("mxf4nvf4", False, 2, False, (128, 256), N_STEP16, 64),
    ("mxf4nvf4", False, 2, False, (128, 256), N_STEP16, 96),
    ("mxf4nvf4", False, 2, True, (256,), N_STEP16, 128),
]


def spec_classes() -> set[tuple]:
    return {
        (kind, ws, cta, sparse, m, k, n)
        for kind, ws, cta, sparse, ms, n, k in TABLE_39
        for m in ms
    }


def test_shape_classes_equal_table_39():
    model = {(c.kind, c.ws, c.cta_group, c.sparse, c.m, c.k, frozenset(c.n))
             for c in mma.SHAPE_CLASSES}
    assert model == spec_classes()
    assert len(mma.SHAPE_CLASSES) == len(spec_classes())


@pytest.mark.parametrize("kind", mma.KINDS)
@pytest.mark.parametrize("cta_group", [1, 2])
@pytest.mark.parametrize("sparse", [False, True])
def test_invalid_table_39_rows_are_empty(kind, cta_group, sparse):
    # ".ws" with cta_group::2 is Invalid for every kind; .ws is Invalid for the block-scaled kinds.
    ws_classes = mma.shape_classes(kind, True, cta_group, sparse)
    if cta_group == 2 or kind in ("mxf8f6f4", "mxf4", "mxf4nvf4"):
        assert ws_classes == ()
    else:
        assert {c.m for c in ws_classes} == {32, 64, 128}
    # Without .ws every (kind, cta_group, sparsity) row has shapes.
    assert mma.shape_classes(kind, False, cta_group, sparse) != ()


def test_table_39_spot_facts():
    i8_cta1 = {n for c in mma.shape_classes("i8", False, 1, False) for n in c.n}
    assert {24, 48} <= i8_cta1 and 40 not in i8_cta1
    k96 = [c for c in mma.SHAPE_CLASSES if c.k == 96]
    # Table 39's 256xNxK1 and CUTLASS's SM103 atoms' M = 128 shapes (A-K96-SHAPES).
    assert {(c.kind, c.cta_group, c.sparse, c.m) for c in k96} == {
        (kind, cta_group, False, m) for kind in ("mxf4", "mxf4nvf4") for cta_group, m in ((1, 128), (2, 128), (2, 256))}
    assert all(c.feature == "K=96" for c in k96)
    for kind in ("f16", "tf32", "f8f6f4", "i8"):
        for c in mma.shape_classes(kind, True, 1, True):
            assert set(c.n) == {64, 128}
    assert mma.shape_class_for("mxf4", False, 2, False, 256, k96=True).k == 96
    assert mma.shape_class_for("mxf4", False, 2, False, 128, k96=True).k == 96
    assert mma.shape_class_for("mxf4", False, 2, True, 256, k96=True) is None
    assert mma.shape_class_for("mxf8f6f4", False, 2, True, 128) is None


def test_k96_feature_only_on_sm_103a():
    # 9.7.16.2.1.1: "K = 96 is only supported for target architecture sm_103a".
    assert "K=96" in TARGETS["sm_103a"].features
    assert "K=96" not in TARGETS["sm_100a"].features


def _row_id(r) -> str:
    return f"{r[0]}-ws{int(r[1])}-cta{r[2]}-sp{int(r[3])}-k{r[6]}"


@pytest.mark.parametrize("row", TABLE_39, ids=_row_id)
def test_every_table_39_shape_is_legal_and_its_neighbours_are_not(row):
    kind, ws, cta, sparse, ms, ns, k = row
    target = "sm_103a" if k == 96 else "sm_100a"
    kw = dict(ws=ws, cta_group=cta, sparse=sparse, idesc_kw={"k96": k == 96})
    if sparse:
        kw["sp_meta_tmem"] = taddr.encode(0, 256)
    for m in ms:
        for n in (min(ns), max(ns)):
            instr = mma_instr(kind, m, n, **kw)
            assert check(instr, target) == [], (m, n)
        bad_n = max(ns) + 8  # above 256: never in Table 39
        assert "idesc.shape-n" in rules(mma_instr(kind, m, bad_n, **kw), target)
        if min(ns) > 8:
            assert "idesc.shape-n" in rules(mma_instr(kind, m, min(ns) - 8, **kw), target)


# --- The rule table ---------------------------------------------------------------------------


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_metadata(rule_id):
    rule = RULES[rule_id]
    assert rule.id == rule_id
    assert rule.reference and rule.reference.startswith("PTX ISA")
    assert rule.statement
    assert rule.checked_by in {"assembler", "oracle"}


def test_rule_ids_are_unique_and_cover_minimal_violations():
    covered = {rule for rule, _, _ in MINIMAL_VIOLATIONS}
    assert covered <= set(RULES)
    # Descriptor and TMEM-address rules are invisible to an assembler.
    for rid in covered:
        if rid.startswith(("idesc.", "sdesc.", "zcmask.", "tmem.")):
            assert RULES[rid].checked_by == "oracle", rid


def test_an_unknown_kind_breaks_the_qualifier_syntax_rule():
    # ".kind = { .kind::f16, .kind::tf32, .kind::f8f6f4 }" ... (9.7.16.10.9.1 syntax): f64 is none of them.
    assert [v.rule for v in check(Tcgen05Mma(kind="f64"), "sm_100a")] == ["syntax.qualifier"]
