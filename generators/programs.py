"""Strategies for whole programs: one MMA with its shared-memory image and TMEM allocation."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.encoding import idesc as idesc_codec
from conformance.isa import data_movement as dm
from conformance.isa import mma
from conformance.program import Program, SmemSegment
from generators import instructions as legal


@st.composite
def smem_images(draw, ctas: int) -> tuple[SmemSegment, ...]:
    size = draw(st.sampled_from((256, 1024, 4096)))
    return tuple(SmemSegment(0, draw(st.binary(min_size=size, max_size=size)), cta) for cta in range(ctas))


@st.composite
def tcgen05_programs(draw, target: str, shape_class: mma.ShapeClass | None = None) -> Program:
    """A tcgen05 program: one legal MMA of a Table 39 class, in the smallest allocation that
    holds its D matrix (allocations are powers of 2 from 32 columns)."""
    c = shape_class or draw(st.sampled_from(legal.shape_classes_for_target(target)))
    columns = draw(st.sampled_from([k for k in dm.ALLOC_COLUMN_COUNTS if k >= min(c.n)]))
    op = draw(legal.tcgen05_mma(target, c, columns).filter(
        lambda i: idesc_codec.decode(i.kind, i.idesc).n <= columns))
    ctas = c.cta_group
    return Program(target=target, ops=(op,), ctas=ctas, tmem_columns=columns, smem=draw(smem_images(ctas)),
                   label=c.id, meta={"class": c.id})


@st.composite
def hopper_programs(draw, target: str = "sm_90a") -> Program:
    op = draw(st.one_of(legal.wgmma(target), legal.mma_sp(target)))
    return Program(target=target, ops=(op,), smem=draw(smem_images(1)), label=op.OP)
