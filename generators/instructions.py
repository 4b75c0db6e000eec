"""Strategies for legal instructions of every family on a target; every value drawn satisfies
the legality model (tcgen05_conformance.core.legality), which the tests check."""

from __future__ import annotations

import functools
from typing import Callable

from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
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
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper, mma
from tcgen05_conformance.core.isa.targets import Target
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.generators.descriptors import smem_descriptors, swizzles_for, tmem_addresses, zero_column_masks


def shape_classes_for(t: Target) -> list[mma.ShapeClass]:
    """Table 39 classes available on the target (K=96 on sm_103a only; i8 per Target Notes)."""
    return [
        c for c in mma.SHAPE_CLASSES
        if (c.feature is None or c.feature in t.features)
        and (c.kind != "i8" or "kind::i8" in t.features)
    ]


def shape_classes_for_target(target: str) -> list[mma.ShapeClass]:
    return shape_classes_for(target_named(target))


@st.composite
def tcgen05_mma(draw, target: str, shape_class: mma.ShapeClass | None = None,
                columns: int = dm.TMEM_COLUMNS, reach: str = "anywhere", fixed: dict | None = None) -> Tcgen05Mma:
    """A legal tcgen05.mma{.ws}{.sp} of a Table 39 class (drawn, or the one given), with every
    TMEM operand inside the first `columns` columns and descriptors within `reach`. `fixed` names
    instruction-descriptor choices not to draw (dtype, atype, btype, saturate, scale_type: legal
    ones for the class), for programs aimed at value coverpoints."""
    fixed = fixed or {}

    def choose(name: str, strategy: st.SearchStrategy):
        return fixed[name] if name in fixed else draw(strategy)

    t = target_named(target)
    c = shape_class or draw(st.sampled_from(shape_classes_for(t)))
    kind = c.kind
    n = draw(st.sampled_from(c.n))
    dtype = choose("dtype", st.sampled_from(sorted(mma.D_TYPES[kind])))
    types = mma.D_TYPES[kind][dtype]
    atype = choose("atype", st.sampled_from(types))
    btype = choose("btype", st.sampled_from(types)) if kind in mma.MIXED_AB_KINDS else atype

    def transposable(typ: str, is_b: bool) -> bool:
        bits = mma.TYPE_BITS[typ]
        if not mma.TRANSPOSE_SUPPORTED[kind] or bits not in mma.TRANSPOSE_SWIZZLE_RULE:
            return False
        if is_b and bits == 8:
            lo, step = mma.TRANSPOSE_B_8BIT_N[c.cta_group]
            return lo <= n <= 256 and n % step == 0
        return True

    transpose_a = transposable(atype, False) and draw(st.booleans())
    transpose_b = transposable(btype, True) and draw(st.booleans())
    negate = mma.NEGATE_SUPPORTED[kind]
    scaled = kind in mma.BLOCK_SCALED_KINDS
    scale_vec, sv = None, None
    if scaled:
        options = [s for s in mma.SCALE_VECTORS if s.kind == kind and s.k96 == (c.k == 96)
                   and fixed.get("scale_type", "ue8m0") in s.scale_types]
        sv = draw(st.sampled_from(options))
        omit = sv.qualifier == mma.DEFAULT_SCALE_VEC.get(kind) and draw(st.booleans())
        scale_vec = None if omit else sv.qualifier
    d = idesc_codec.InstrDescriptor(
        m=c.m, n=n, atype=atype, btype=btype, dtype=dtype, sparse=c.sparse,
        sparse_selector=draw(st.sampled_from(mma.SPARSITY_SELECTORS.get(kind, (0,)))) if c.sparse else 0,
        saturate=kind == "i8" and choose("saturate", st.booleans()),
        negate_a=negate and draw(st.booleans()), negate_b=negate and draw(st.booleans()),
        transpose_a=transpose_a, transpose_b=transpose_b,
        max_shift=draw(st.integers(0, 3)) if c.ws else 0,
        sfa_id=draw(st.sampled_from(sv.sf_ids)) if sv else 0,
        sfb_id=draw(st.sampled_from(sv.sf_ids)) if sv else 0,
        scale_type=choose("scale_type", st.sampled_from(sorted(sv.scale_types))) if sv else None,
        k96=c.k == 96,
    )
    layout = mma.data_path_layout(c.m, c.cta_group, c.sparse, c.ws)
    alignment = draw(st.sampled_from(layout.lane_alignments))
    a_in_tmem = draw(st.booleans())
    ashift = (not c.ws and not scaled and a_in_tmem and c.m in mma.ASHIFT_M and draw(st.booleans()))
    collector = None
    if draw(st.booleans()):
        buffer = draw(st.sampled_from(mma.COLLECTOR_BUFFERS_WS)) if c.ws else "a"
        ops = ("lastuse", "discard") if ashift else mma.COLLECTOR_OPS
        collector = f"{buffer}::{draw(st.sampled_from(ops))}"

    def descriptor(typ: str, transposed: bool) -> int:
        swizzle = draw(st.sampled_from(swizzles_for(mma.TYPE_BITS[typ], transposed)))
        absolute = ("lbo-absolute" in t.features and swizzle == "128B" and not transposed
                    and draw(st.booleans()))
        return draw(smem_descriptors(swizzle, absolute, reach=reach))

    plain_form = not c.ws and not scaled
    return Tcgen05Mma(
        kind=kind, cta_group=c.cta_group, ws=c.ws, sparse=c.sparse, block_scale=scaled,
        scale_vec=scale_vec, collector=collector, ashift=ashift,
        idesc=idesc_codec.encode(kind, d),
        a_desc=0 if a_in_tmem else descriptor(atype, transpose_a),
        b_desc=descriptor(btype, transpose_b),
        d_tmem=draw(tmem_addresses(alignment, n, columns)),
        a_tmem=draw(tmem_addresses(alignment, 1, columns)) if a_in_tmem else None,
        sp_meta_tmem=draw(tmem_addresses(alignment, 1, columns)) if c.sparse else 0,
        scale_a_tmem=draw(tmem_addresses(0, 1, columns)) if scaled else 0,
        scale_b_tmem=draw(tmem_addresses(0, 1, columns)) if scaled else 0,
        enable_input_d=draw(st.booleans()),
        disable_output_lane=(
            tuple(draw(st.integers(0, 2**32 - 1)) for _ in range(mma.DISABLE_OUTPUT_LANE_WORDS[c.cta_group]))
            if plain_form and draw(st.booleans()) else None
        ),
        scale_input_d=(
            draw(st.sampled_from(mma.SCALE_INPUT_D_RANGE))
            if plain_form and kind in mma.SCALE_INPUT_D_KINDS and draw(st.booleans()) else None
        ),
        zero_column_mask=draw(zero_column_masks(c.m)) if c.ws and draw(st.booleans()) else None,
    )


@st.composite
def tcgen05_ld(draw, target: str) -> Tcgen05Ld:
    t = target_named(target)
    reduce = "tcgen05.ld.red" in t.features and draw(st.booleans())
    shape = dm.LDST_SHAPES[draw(st.sampled_from(dm.LD_RED_SHAPES if reduce else tuple(dm.LDST_SHAPES)))]
    nums = [n for n in dm.LDST_NUMS if n <= shape.max_num and (not reduce or n >= dm.LD_RED_MIN_NUM)]
    split = draw(st.integers(0, 256)) if shape.split else None
    taddr = taddr_codec.encode(draw(st.integers(0, 3)) * dm.LANES_PER_WARP_QUARTER, draw(st.integers(0, 255)))
    if not reduce:
        return Tcgen05Ld(shape.name, draw(st.sampled_from(nums)), pack=draw(st.booleans()),
                         taddr=taddr, split_offset=split)
    red_type = draw(st.sampled_from(dm.LD_RED_TYPES))
    f32 = red_type == "f32"
    return Tcgen05Ld(shape.name, draw(st.sampled_from(nums)), red_op=draw(st.sampled_from(dm.LD_RED_OPS)),
                     red_type=red_type, red_abs=f32 and draw(st.booleans()),
                     red_nan=f32 and draw(st.booleans()), taddr=taddr, split_offset=split)


@st.composite
def tcgen05_st(draw, target: str) -> Tcgen05St:
    shape = dm.LDST_SHAPES[draw(st.sampled_from(tuple(dm.LDST_SHAPES)))]
    num = draw(st.sampled_from([n for n in dm.LDST_NUMS if n <= shape.max_num]))
    taddr = taddr_codec.encode(draw(st.integers(0, 3)) * dm.LANES_PER_WARP_QUARTER, draw(st.integers(0, 255)))
    return Tcgen05St(shape.name, num, unpack=draw(st.booleans()), taddr=taddr,
                     split_offset=draw(st.integers(0, 256)) if shape.split else None)


@st.composite
def tcgen05_cp(draw, target: str) -> Tcgen05Cp:
    shape = dm.CP_SHAPES[draw(st.sampled_from(tuple(dm.CP_SHAPES)))]
    return Tcgen05Cp(
        shape.name, cta_group=draw(st.sampled_from(dm.CTA_GROUPS)),
        multicast=draw(st.sampled_from(shape.multicasts)),
        src_fmt=draw(st.sampled_from((None, *dm.CP_DECOMPRESS))),
        taddr=draw(st.integers(0, 255)), s_desc=draw(smem_descriptors("none")),
    )


def tcgen05_other(target: str) -> st.SearchStrategy:
    """The non-MMA tcgen05 instructions."""
    types = [Tcgen05Alloc, Tcgen05Dealloc, Tcgen05RelinquishAllocPermit, Tcgen05Ld, Tcgen05St, Tcgen05Cp,
             Tcgen05Wait, Tcgen05Fence, Tcgen05Commit]
    if "tcgen05.shift" in target_named(target).features:
        types.append(Tcgen05Shift)
    return st.one_of([STRATEGIES[cls](target) for cls in types])


def tcgen05_shift(cta_group: st.SearchStrategy[int]) -> st.SearchStrategy[Tcgen05Shift]:
    """A legal tcgen05.shift of a `cta_group` drawn from the strategy: its lane aligned to 32
    (9.7.16.9.3), at column 0."""
    lanes = st.integers(0, 3).map(lambda q: taddr_codec.encode(q * dm.SHIFT_LANE_ALIGNMENT, 0))
    return st.builds(Tcgen05Shift, cta_group=cta_group, taddr=lanes)


SM90_SWIZZLES = ("none", "128B", "64B", "32B")  # the wgmma descriptor's layout types

# The strategies `wgmma` and `mma_sp` draw from, built once rather than at each draw: looking each up
# in Hypothesis's strategy cache (and building those of list arguments afresh) cost a fifth of a
# campaign's instruction draws. Drawing from them is drawing from the ones built at each draw.
_BOOLEANS = st.booleans()
_BIT = st.integers(0, 1)
_SIGNS = st.sampled_from((1, -1))
_SM90_SWIZZLE = st.sampled_from(SM90_SWIZZLES)
_WGMMA_FAMILIES = st.sampled_from(tuple(hopper.WGMMA_TYPES))
_METADATA_WORDS = st.integers(0, 2**32 - 1)


@functools.lru_cache(maxsize=None)
def _wgmma_choices(family: str) -> tuple[st.SearchStrategy, ...]:
    """A wgmma family's types, N, accumulator types and sparsity selectors, as strategies."""
    fam = hopper.WGMMA_TYPES[family]
    return (st.sampled_from(fam.types), st.sampled_from(fam.n), st.sampled_from(fam.dtypes),
            st.sampled_from(hopper.WGMMA_SPARSE_SELECTORS[family]))


@st.composite
def wgmma(draw, target: str = "sm_90a", reach: str = "anywhere", sparse: bool | None = None,
          a_in_registers: bool | None = None) -> WgmmaMma:
    """A legal wgmma.mma_async; `sparse` / `a_in_registers` fix those forms (None: drawn)."""
    fam_name = draw(_WGMMA_FAMILIES)
    fam = hopper.WGMMA_TYPES[fam_name]
    types, ns, dtypes, selectors = _wgmma_choices(fam_name)
    sparse = draw(_BOOLEANS) if sparse is None else sparse
    atype = draw(types)
    btype = draw(types) if fam.mixed else atype
    a_regs = draw(_BOOLEANS) if a_in_registers is None else a_in_registers
    return WgmmaMma(
        n=draw(ns), k=fam.k_dense * (2 if sparse else 1),
        dtype=draw(dtypes), atype=atype, btype=btype, sparse=sparse,
        a_in_registers=a_regs, satfinite=fam.saturate and draw(_BOOLEANS),
        scale_d=draw(_BOOLEANS),
        imm_scale_a=draw(_SIGNS) if fam.negate else 1,
        imm_scale_b=draw(_SIGNS) if fam.negate else 1,
        imm_trans_a=draw(_BIT) if fam.transpose and not a_regs else None,
        imm_trans_b=draw(_BIT) if fam.transpose else None,
        sparse_selector=draw(selectors) if sparse else 0,
        a_desc=0 if a_regs else draw(smem_descriptors(draw(_SM90_SWIZZLE), variant="sm90", reach=reach)),
        b_desc=draw(smem_descriptors(draw(_SM90_SWIZZLE), variant="sm90", reach=reach)),
    )


@functools.lru_cache(maxsize=None)
def _mma_sp_families(target: str) -> st.SearchStrategy[str]:
    """The mma.sp shape families `target` has, as a strategy."""
    t = target_named(target)
    return st.sampled_from([n for n, s in hopper.MMA_SP_SHAPES.items()
                            if s.feature != "f8" or t.sm >= hopper.MMA_SP_F8_MIN_SM])


@functools.lru_cache(maxsize=None)
def _mma_sp_choices(family: str) -> tuple[st.SearchStrategy, ...]:
    """An mma.sp family's types, accumulator types and K, as strategies."""
    fam = hopper.MMA_SP_SHAPES[family]
    return st.sampled_from(fam.types), st.sampled_from(fam.dtypes), st.sampled_from(fam.ks)


@functools.lru_cache(maxsize=None)
def _mma_sp_selectors(family: str, k: int, dtype: str) -> st.SearchStrategy[int]:
    """The sparsity selectors silicon takes for an mma.sp family, K and accumulator type, as a strategy."""
    return st.sampled_from(hopper.mma_sp_selectors(family, k, dtype, silicon=True))


@st.composite
def mma_sp(draw, target: str) -> MmaSp:
    name = draw(_mma_sp_families(target))
    fam = hopper.MMA_SP_SHAPES[name]
    types, dtypes, ks = _mma_sp_choices(name)
    atype = draw(types)
    dtype = draw(dtypes)
    k = draw(ks)
    return MmaSp(
        k=k, dtype=dtype, ctype=dtype, atype=atype,
        btype=draw(types) if fam.mixed else atype,
        ordered_metadata=draw(_BOOLEANS), satfinite=fam.saturate and draw(_BOOLEANS),
        sparse_selector=draw(_mma_sp_selectors(name, k, dtype)),
        metadata=draw(_METADATA_WORDS),
    )


_CTA_GROUPS = st.sampled_from(dm.CTA_GROUPS)
_ALLOC_COLUMNS = st.sampled_from(dm.ALLOC_COLUMN_COUNTS)
_ADDRESS_BITS = st.sampled_from(dm.ADDRESS_REGISTER_BITS)

@st.composite
def _commit(draw) -> Tcgen05Commit:
    """A legal tcgen05.commit; ctaMask only where .multicast::cluster gives it an operand."""
    multicast = draw(st.booleans())
    return Tcgen05Commit(draw(_CTA_GROUPS), multicast, draw(st.integers(1, 0xFFFF)) if multicast else 1,
                         draw(st.sampled_from(dm.COMMIT_STATE_SPACES)), draw(_ADDRESS_BITS))


#: The strategy of legal instructions of each type, given a target that has the type's family
#: (and, for tcgen05.shift, its feature): `STRATEGIES[type](target)`.
STRATEGIES: dict[type, Callable[[str], st.SearchStrategy]] = {
    Tcgen05Mma: tcgen05_mma,
    Tcgen05Alloc: lambda target: st.builds(Tcgen05Alloc, cta_group=_CTA_GROUPS, columns=_ALLOC_COLUMNS,
                                           state_space=st.sampled_from(dm.ALLOC_STATE_SPACES),
                                           address_bits=_ADDRESS_BITS, columns_register=st.booleans()),
    Tcgen05Dealloc: lambda target: st.builds(Tcgen05Dealloc, cta_group=_CTA_GROUPS, columns=_ALLOC_COLUMNS,
                                             taddr=st.integers(0, dm.TMEM_COLUMNS - 1), columns_register=st.booleans()),
    Tcgen05RelinquishAllocPermit: lambda target: st.builds(Tcgen05RelinquishAllocPermit, cta_group=_CTA_GROUPS),
    Tcgen05Ld: tcgen05_ld,
    Tcgen05St: tcgen05_st,
    Tcgen05Cp: tcgen05_cp,
    Tcgen05Wait: lambda target: st.builds(Tcgen05Wait, what=st.sampled_from(dm.WAITS)),
    Tcgen05Fence: lambda target: st.builds(Tcgen05Fence, what=st.sampled_from(dm.FENCES)),
    Tcgen05Commit: lambda target: _commit(),
    Tcgen05Shift: lambda target: tcgen05_shift(_CTA_GROUPS),
    WgmmaMma: wgmma,
    MmaSp: mma_sp,
}


def legal_instructions(target: str) -> st.SearchStrategy:
    """Any legal instruction of any family the target supports."""
    t = target_named(target)
    parts = []
    if "tcgen05" in t.families:
        parts += [tcgen05_mma(target), tcgen05_mma(target), tcgen05_other(target)]
    if "wgmma" in t.families:
        parts += [wgmma(target), wgmma(target)]
    if "mma.sp" in t.families:
        parts.append(mma_sp(target))
    return st.one_of(parts)
