"""check(instruction, target): every legality rule the instruction breaks on the target."""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import (
    Instruction,
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
    family,
)
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper, mma
from tcgen05_conformance.core.isa.targets import Target
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.legality.rules import RULES


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str

    @property
    def reference(self) -> str:
        return RULES[self.rule].reference

    @property
    def checked_by(self) -> str:
        return RULES[self.rule].checked_by

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message} ({self.reference})"


class Findings(list):
    """The violations found so far: `add` records one, `require` one when its condition fails."""

    def add(self, rule: str, message: str) -> None:
        assert rule in RULES, rule
        self.append(Violation(rule, message))

    def require(self, ok: bool, rule: str, message: str) -> None:
        if not ok:
            self.add(rule, message)


def check(instr: Instruction, target: str | Target) -> list[Violation]:
    """All rules `instr` breaks on `target` (empty when legal)."""
    t = target_named(target) if isinstance(target, str) else target
    found = Findings()
    fam = family(instr)
    found.require(fam in t.families, "target.family", f"{instr.OP} is not supported on {t.name}")
    if fam in t.families:
        _check(instr, t, found)
    return list(found)


def is_legal(instr: Instruction, target: str | Target) -> bool:
    return not check(instr, target)


@singledispatch
def _check(instr: Instruction, t: Target, found: Findings) -> None:
    """The rules of one instruction type beyond its family's target: one registration per type."""
    raise TypeError(f"no legality rules for {type(instr).__name__}")


def checked_types() -> frozenset[type]:
    """The instruction types the legality model has rules for."""
    return frozenset(t for t in _check.registry if t is not object)


def _qualifier(found: Findings, name: str, value: object, allowed: tuple) -> None:
    found.require(value in allowed, "syntax.qualifier", f"{name} {value!r} (allowed: {allowed})")


@_check.register
def _(i: Tcgen05Fence, t: Target, found: Findings) -> None:
    _qualifier(found, ".fence", i.what, dm.FENCES)


@_check.register
def _(i: Tcgen05Wait, t: Target, found: Findings) -> None:
    _qualifier(found, ".wait", i.what, dm.WAITS)


@_check.register
def _(i: Tcgen05Commit, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    _qualifier(found, "state space", i.state_space, dm.COMMIT_STATE_SPACES)
    _qualifier(found, "address register width", i.address_bits, dm.ADDRESS_REGISTER_BITS)


@_check.register
def _(i: Tcgen05RelinquishAllocPermit, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)


# --- tcgen05.mma ---------------------------------------------------------------------------


@_check.register
def _(i: Tcgen05Mma, t: Target, found: Findings) -> None:
    _check_mma_qualifiers(i, t, found)
    if i.kind not in mma.KINDS:
        return
    d = idesc_codec.decode(i.kind, i.idesc)
    _check_idesc(i, d, t, found)
    _check_mma_tmem(i, d, found)
    for name, word in (("A", i.a_desc if i.a_tmem is None else None), ("B", i.b_desc)):
        if word is not None:
            _check_sdesc(name, word, d, t, found)
    if i.zero_column_mask is not None:
        z = zcmask_codec.decode(i.zero_column_mask)
        found.require(not z.fixed_field_errors, "zcmask.reserved", "; ".join(z.fixed_field_errors))
        limit = mma.ZCMASK_MAX_SHIFT.get(d.m, mma.ZCMASK_MAX_SHIFT_DEFAULT)
        found.require(z.column_shift <= limit, "zcmask.shift",
                      f"column shift {z.column_shift} exceeds {limit} for M = {d.m}")


def _check_mma_qualifiers(i: Tcgen05Mma, t: Target, found: Findings) -> None:
    scaled = i.kind in mma.BLOCK_SCALED_KINDS
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    _qualifier(found, ".kind", i.kind, mma.KINDS)
    found.require(i.kind != "i8" or "kind::i8" in t.features, "target.kind-i8",
                  f".kind::i8 is not supported on {t.name}")
    if i.ws:
        found.require(i.cta_group == 1, "mma.ws.cta-group", f".ws with .cta_group::{i.cta_group}")
        found.require(i.kind in mma.WS_KINDS, "mma.ws.kind", f".ws with .kind::{i.kind}")
        found.require(not i.ashift, "mma.ashift.ws", ".ashift with .ws")
    found.require(not scaled or i.block_scale, "mma.block-scale.required",
                  f".kind::{i.kind} without .block_scale")
    found.require(scaled or not i.block_scale, "mma.block-scale.kind",
                  f".block_scale with .kind::{i.kind}")
    if i.scale_vec is not None:
        legal = {sv.qualifier for sv in mma.SCALE_VECTORS if sv.kind == i.kind}
        found.require(i.block_scale and i.scale_vec in legal, "mma.scale-vec.kind",
                      f".{i.scale_vec} with .kind::{i.kind}"
                      + ("" if i.block_scale else " without .block_scale"))
    found.require(not (i.kind == "mxf4nvf4" and i.block_scale and i.scale_vec is None),
                  "mma.scale-vec.required", ".kind::mxf4nvf4 without .scale_vectorsize")
    if i.collector is not None:
        buffer, _, op = i.collector.partition("::")
        buffers = mma.COLLECTOR_BUFFERS_WS if i.ws else ("a",)
        found.require(buffer in buffers and op in mma.COLLECTOR_OPS, "mma.collector.buffer",
                      f".collector::{i.collector} {'with' if i.ws else 'without'} .ws")
        found.require(not (i.ashift and op in ("fill", "use")), "mma.ashift.collector",
                      f".ashift with .collector::{i.collector}")
    if i.ashift:
        found.require(i.a_tmem is not None, "mma.ashift.a-tmem", ".ashift with A in shared memory")
        found.require(not scaled, "mma.ashift.kind", f".ashift with .kind::{i.kind}")
    dol_form = not i.ws and not i.block_scale
    if i.disable_output_lane is not None:
        found.require(dol_form, "mma.disable-output-lane.form",
                      "disable-output-lane with " + (".ws" if i.ws else ".block_scale"))
        words = mma.DISABLE_OUTPUT_LANE_WORDS.get(i.cta_group)
        found.require(len(i.disable_output_lane) == words, "mma.disable-output-lane.size",
                      f"{len(i.disable_output_lane)} disable-output-lane words with "
                      f".cta_group::{i.cta_group} (needs {words})")
    if i.scale_input_d is not None:
        found.require(not i.block_scale, "mma.scale-input-d.form", "scale-input-d with .block_scale")
        found.require(not i.ws, "mma.scale-input-d.ws", "scale-input-d with .ws")
        found.require(i.kind in mma.SCALE_INPUT_D_KINDS or i.kind == "i8" or not dol_form,
                      "mma.scale-input-d.kind", f"scale-input-d with .kind::{i.kind}")
        found.require(i.kind != "i8", "mma.scale-input-d.i8", "scale-input-d with .kind::i8")
        found.require(i.scale_input_d in mma.SCALE_INPUT_D_RANGE, "mma.scale-input-d.range",
                      f"scale-input-d = {i.scale_input_d}")
    found.require(i.zero_column_mask is None or i.ws, "mma.zero-column-mask.form",
                  "zero-column mask operand without .ws")


def _check_idesc(i: Tcgen05Mma, d: idesc_codec.InstrDescriptor, t: Target, found: Findings) -> None:
    kind = i.kind
    found.require(not d.reserved_bits, "idesc.reserved", "; ".join(d.reserved_bits))
    found.require(d.sparse == i.sparse, "idesc.sparse-flag",
                  f"idesc sparsity bit {int(d.sparse)} with{'' if i.sparse else 'out'} .sp")
    classes = mma.shape_classes(kind, i.ws, i.cta_group, i.sparse)
    cls = mma.shape_class_for(kind, i.ws, i.cta_group, i.sparse, d.m, d.k96)
    legal_m = sorted({c.m for c in classes})
    if d.k96:
        found.require(cls is not None, "idesc.shape-k96",
                      f"K = 96 with {kind} {'sparse' if i.sparse else 'dense'} "
                      f".cta_group::{i.cta_group} M = {d.m}")
        found.require("K=96" in t.features, "target.k96", f"K = 96 on {t.name}")
    elif classes:  # an empty Table 39 row is reported by the qualifier rule that empties it
        found.require(d.m in legal_m, "idesc.shape-m",
                      f"M = {d.m} for {kind}{' .ws' if i.ws else ''} .cta_group::{i.cta_group}"
                      f"{' .sp' if i.sparse else ''} (Table 39 allows {legal_m or 'nothing'})")
    if cls is not None:
        found.require(d.n in cls.n, "idesc.shape-n", f"N = {d.n} not in Table 39 for {cls.id}")
    dtypes = mma.D_TYPES[kind]
    found.require(d.dtype in dtypes, "idesc.dtype", f"D type {d.dtype} with .kind::{kind}")
    if d.dtype in dtypes:
        atypes = dtypes[d.dtype]
        found.require(d.atype in atypes and d.btype in atypes, "idesc.abtype",
                      f"A {d.atype} / B {d.btype} with D {d.dtype} and .kind::{kind}")
    found.require(kind in mma.MIXED_AB_KINDS or d.atype == d.btype, "idesc.abtype-mixed",
                  f"A {d.atype} and B {d.btype} differ with .kind::{kind}")
    found.require(not d.saturate or kind == "i8", "idesc.saturate", f"saturate with .kind::{kind}")
    found.require(mma.NEGATE_SUPPORTED[kind] or not (d.negate_a or d.negate_b), "idesc.negate",
                  f"negate with .kind::{kind}")
    transposed = [(n, typ) for n, typ, tr in (("A", d.atype, d.transpose_a), ("B", d.btype, d.transpose_b)) if tr]
    found.require(mma.TRANSPOSE_SUPPORTED[kind] or not transposed, "idesc.transpose-kind",
                  f"transpose with .kind::{kind}")
    for name, typ in transposed:
        bits = mma.TYPE_BITS.get(typ, 0)
        found.require(bits in mma.TRANSPOSE_SWIZZLE_RULE or not mma.TRANSPOSE_SUPPORTED[kind],
                      "idesc.transpose-size", f"transposed {name} of {bits}-bit {typ}")
    if (d.transpose_b and mma.TYPE_BITS.get(d.btype) == 8 and mma.TRANSPOSE_SUPPORTED[kind]
            and i.cta_group in mma.TRANSPOSE_B_8BIT_N):  # another .cta_group breaks a qualifier rule instead
        lo, step = mma.TRANSPOSE_B_8BIT_N[i.cta_group]
        found.require(lo <= d.n <= 256 and d.n % step == 0, "idesc.transpose-b-8bit-n",
                      f"8-bit transpose B with N = {d.n} and .cta_group::{i.cta_group}")
    selectors = mma.SPARSITY_SELECTORS.get(kind, (0,)) if i.sparse else (0,)
    found.require(d.sparse_selector in selectors, "idesc.sparse-selector",
                  f"sparsity selector {d.sparse_selector} with .kind::{kind}"
                  f"{' .sp' if i.sparse else ' (dense)'}")
    found.require(i.ws or d.max_shift == 0, "idesc.max-shift",
                  f"maximum B-reuse shift code {d.max_shift} without .ws")
    if kind in mma.BLOCK_SCALED_KINDS:
        _check_scale_vector(i, d, found)


def _check_scale_vector(i: Tcgen05Mma, d: idesc_codec.InstrDescriptor, found: Findings) -> None:
    sv = mma.scale_vector(i.kind, i.scale_vec, d.k96)
    named = [s for s in mma.SCALE_VECTORS if s.kind == i.kind and s.qualifier == (i.scale_vec or mma.DEFAULT_SCALE_VEC.get(i.kind))]
    if d.k96 and named:
        found.require(sv is not None, "mma.scale-vec.k96", f".{i.scale_vec} with K = 96")
    if sv is None:
        return
    found.require(d.scale_type in sv.scale_types, "idesc.scale-type",
                  f"scale type {d.scale_type} with .kind::{i.kind} .{sv.qualifier}")
    found.require(d.sfa_id in sv.sf_ids and d.sfb_id in sv.sf_ids, "idesc.sf-id",
                  f"scale factor IDs A={d.sfa_id} B={d.sfb_id} with .{sv.qualifier}"
                  f"{' K=96' if d.k96 else ''} (legal {sv.sf_ids})")


def _check_mma_tmem(i: Tcgen05Mma, d: idesc_codec.InstrDescriptor, found: Findings) -> None:
    layout = mma.data_path_layout(d.m, i.cta_group, i.sparse, i.ws)
    operands = {"D": i.d_tmem}
    if i.a_tmem is not None:
        operands["A"] = i.a_tmem
    if i.sparse:
        operands["metadata"] = i.sp_meta_tmem
    alignments = {}
    for name, address in operands.items():
        lane, _ = taddr_codec.decode(address)
        alignments[name] = lane % dm.LANES_PER_WARP_QUARTER
        found.require(alignments[name] in layout.lane_alignments, "tmem.lane-alignment",
                      f"{name} at lane {lane}: layout {layout.layout} needs lane alignment "
                      f"{' or '.join(map(str, layout.lane_alignments))}")
    if len(layout.lane_alignments) > 1:
        found.require(len(set(alignments.values())) == 1, "tmem.same-alignment",
                      f"layout {layout.layout} with lane alignments {alignments}")
    _, column = taddr_codec.decode(i.d_tmem)
    found.require(column + d.n <= dm.TMEM_COLUMNS, "tmem.columns",
                  f"D at column {column} with N = {d.n} passes column {dm.TMEM_COLUMNS}")
    if i.ashift:
        found.require(d.m in mma.ASHIFT_M, "mma.ashift.m", f".ashift with M = {d.m}")


def _check_sdesc(name: str, word: int, d: idesc_codec.InstrDescriptor, t: Target, found: Findings) -> None:
    s = sdesc_codec.decode(word)
    found.require(not s.fixed_field_errors, "sdesc.fixed", f"{name} descriptor: " + "; ".join(s.fixed_field_errors))
    found.require(not s.swizzle.startswith("?"), "sdesc.swizzle", f"{name} descriptor swizzle code {s.swizzle[1:]}")
    transposed = d.transpose_a if name == "A" else d.transpose_b
    typ = d.atype if name == "A" else d.btype
    if transposed and not s.swizzle.startswith("?"):
        rule = mma.TRANSPOSE_SWIZZLE_RULE.get(mma.TYPE_BITS.get(typ, 0))
        atom32 = s.swizzle == "128B_base32B"
        found.require(rule is None or (atom32 if rule == "only-128B-32B-atom" else not atom32),
                      "idesc.transpose-swizzle", f"transposed {name} ({typ}) with swizzle {s.swizzle}")
    if s.lbo_absolute:
        found.require("lbo-absolute" in t.features, "target.lbo-absolute",
                      f"{name} descriptor uses the absolute leading-dimension mode on {t.name}")
        found.require(s.swizzle == "128B" and not transposed and s.base_offset == 0,
                      "sdesc.lbo-absolute",
                      f"{name} descriptor: absolute mode with swizzle {s.swizzle}, "
                      f"{'MN' if transposed else 'K'}-major, base offset {s.base_offset}")


# --- other tcgen05 ---------------------------------------------------------------------------


def _check_columns(columns: int, in_register: bool, found: Findings) -> None:
    rule = "alloc.columns-register" if in_register else "alloc.columns"
    found.require(columns in dm.ALLOC_COLUMN_COUNTS, rule, f"nCols = {columns}{' (in a register)' if in_register else ''}")


@_check.register
def _(i: Tcgen05Alloc, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    _qualifier(found, "state space", i.state_space, dm.ALLOC_STATE_SPACES)
    _qualifier(found, "address register width", i.address_bits, dm.ADDRESS_REGISTER_BITS)
    _check_columns(i.columns, i.columns_register, found)


@_check.register
def _(i: Tcgen05Dealloc, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    _check_columns(i.columns, i.columns_register, found)


def _check_ldst_common(shape: str, num: int, split_offset: int | None, found: Findings) -> dm.LdStShape | None:
    s = dm.LDST_SHAPES.get(shape)
    found.require(s is not None and num in dm.LDST_NUMS and num <= s.max_num, "ldst.num",
                  f".{shape}.x{num}")
    if s is not None:
        found.require((split_offset is not None) == s.split, "ldst.split-offset",
                      f"immHalfSplitoff {'missing' if s.split else 'given'} for .{shape}")
    return s


@_check.register
def _(i: Tcgen05Ld, t: Target, found: Findings) -> None:
    _check_ldst_common(i.shape, i.num, i.split_offset, found)
    if i.red_op is not None:
        _qualifier(found, ".redOp", i.red_op, dm.LD_RED_OPS)
        _qualifier(found, ".red type", i.red_type, dm.LD_RED_TYPES)
        found.require("tcgen05.ld.red" in t.features, "target.ld-red", f"tcgen05.ld.red on {t.name}")
        found.require(i.shape in dm.LD_RED_SHAPES, "ld.red.shape", f".red with .{i.shape}")
        found.require(i.num >= dm.LD_RED_MIN_NUM, "ld.red.num", f".red with .x{i.num}")
        found.require(i.red_type == "f32" or not (i.red_abs or i.red_nan), "ld.red.abs-nan",
                      f".abs/.NaN with .{i.red_type}")
        found.require(not i.pack, "ld.red.pack", ".pack::16b with .red")


@_check.register
def _(i: Tcgen05St, t: Target, found: Findings) -> None:
    _check_ldst_common(i.shape, i.num, i.split_offset, found)


@_check.register
def _(i: Tcgen05Cp, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    _qualifier(found, ".src_fmt", i.src_fmt, (None, *dm.CP_DECOMPRESS))
    s = dm.CP_SHAPES.get(i.shape)
    found.require(s is not None and i.multicast in s.multicasts, "cp.multicast",
                  f".{i.shape} with multicast {i.multicast}")


@_check.register
def _(i: Tcgen05Shift, t: Target, found: Findings) -> None:
    _qualifier(found, ".cta_group", i.cta_group, dm.CTA_GROUPS)
    found.require("tcgen05.shift" in t.features, "target.family", f"tcgen05.shift on {t.name}")
    lane, _ = taddr_codec.decode(i.taddr)
    found.require(lane % dm.SHIFT_LANE_ALIGNMENT == 0, "shift.lane-alignment", f"lane {lane}")


# --- wgmma and mma.sp --------------------------------------------------------------------------


@_check.register
def _(i: WgmmaMma, t: Target, found: Findings) -> None:
    fam_name = hopper.wgmma_type_family(i.atype)
    fam = hopper.WGMMA_TYPES.get(fam_name or "")
    found.require(fam is not None and i.btype in fam.types and (fam.mixed or i.atype == i.btype)
                  and i.dtype in fam.dtypes, "wgmma.types",
                  f".{i.dtype}.{i.atype}.{i.btype}")
    if fam is None:
        return
    k = fam.k_dense * (2 if i.sparse else 1)
    found.require(i.k == k and i.n in fam.n, "wgmma.shape", f"m64n{i.n}k{i.k} with .{i.atype}")
    trans_ok = (i.imm_trans_a is None or (fam.transpose and not i.a_in_registers and i.imm_trans_a in (0, 1))) \
        and (i.imm_trans_b is None or (fam.transpose and i.imm_trans_b in (0, 1)))
    found.require(trans_ok, "wgmma.transpose", f"imm-trans operands with .{i.atype}")
    found.require(i.imm_scale_a in (1, -1) and i.imm_scale_b in (1, -1)
                  and (fam.negate or (i.imm_scale_a, i.imm_scale_b) == (1, 1)),
                  "wgmma.negate", f"imm-scale {i.imm_scale_a}, {i.imm_scale_b} with .{i.atype}")
    found.require(not i.satfinite or fam.saturate, "wgmma.satfinite", f".satfinite with .{i.atype}")
    if i.sparse:
        found.require(i.sparse_selector in hopper.WGMMA_SPARSE_SELECTORS[fam_name],
                      "wgmma.sparse-selector", f"selector {i.sparse_selector} with .{i.atype}")
    for name, word in (("A", None if i.a_in_registers else i.a_desc), ("B", i.b_desc)):
        if word is not None:
            s = sdesc_codec.decode(word, "sm90")
            found.require(not s.fixed_field_errors, "sdesc.sm90-reserved",
                          f"{name} descriptor: " + "; ".join(s.fixed_field_errors))


@_check.register
def _(i: MmaSp, t: Target, found: Findings) -> None:
    # .kind / .block_scale forms need sm_120a (9.7.14.6.3 Target ISA Notes): none of this project's targets
    sm120_form = i.kind is not None or i.block_scale or i.scale_vec is not None or i.stype is not None
    found.require(not sm120_form, "mma-sp.kind-target", f".kind::{i.kind} / .block_scale on {t.name}")
    if sm120_form:
        return
    fam_name = hopper.mma_sp_family(i.atype)
    fam = hopper.MMA_SP_SHAPES.get(fam_name or "")
    found.require(fam is not None and i.btype in fam.types and (fam.mixed or i.atype == i.btype)
                  and i.dtype in fam.dtypes and i.dtype == i.ctype, "mma-sp.types",
                  f".{i.dtype}.{i.atype}.{i.btype}.{i.ctype}")
    if fam is None:
        return
    found.require(i.k in fam.ks, "mma-sp.shape", f"m16n8k{i.k} with .{i.atype}")
    found.require(fam.feature != "f8" or t.sm >= hopper.MMA_SP_F8_MIN_SM, "mma-sp.f8-target",
                  f".{i.atype} on {t.name}")
    found.require(i.sparse_selector in (hopper.mma_sp_selectors(fam_name, i.k, i.dtype) if i.k in fam.ks else hopper.MMA_SP_SELECTOR_RANGE),
                  "mma-sp.selector", f"selector {i.sparse_selector} with .{i.atype} K = {i.k}")
    if i.k in fam.ks and i.sparse_selector in hopper.mma_sp_selectors(fam_name, i.k, i.dtype):
        found.require(i.sparse_selector in hopper.mma_sp_selectors(fam_name, i.k, i.dtype, silicon=True),
                      "mma-sp.selector-silicon", f"selector {i.sparse_selector} with .{i.atype} K = {i.k} and .{i.dtype} D")
    found.require(not i.satfinite or fam.saturate, "mma-sp.satfinite", f".satfinite with .{i.atype}")
