"""Semantics of tcgen05.mma{.ws}{.sp} (PTX ISA 9.7.16.10.9.1-4): D = A*B + D on the machine state.

Each CTA of the instruction's CTA group computes M / cta_group rows of D in its own Tensor
Memory, reading its rows of A from its own shared memory (or TMEM) and its N / cta_group columns
of B from its own shared memory; B is the concatenation of the CTAs' columns
(assumption A-CTA-PAIR-SPLIT, CUTLASS `SM100_MMA_*_2x1SM_*` partitioning). All arithmetic goes
through `tcgen05_conformance.oracles.numerics.inner_product` with the program's numeric profile.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.mma_shape import MmaShape, shape_of
from tcgen05_conformance.core.layouts.operands import block_scales, checked_tmem, operand_a, operand_b
from tcgen05_conformance.core.layouts.tmem import META_CHUNK_ELEMENTS, d_positions, meta_positions, read_fields
from tcgen05_conformance.oracles import numerics
from tcgen05_conformance.oracles.state import OracleState, UndefinedBehaviour

# 9.7.16.10.4.1: sub-word D elements are not packed; a 16-bit D sits in the low half of its word.
# The high half after an f16 MMA is written as 0 (assumption A-D16-HIGH-HALF).
D_WORD_MASK = {"f16": 0xFFFF, "f32": 0xFFFFFFFF, "s32": 0xFFFFFFFF}
# enable-input-d false computes D = A*B: the oracle adds -0, the identity of IEEE addition
# (+0 would turn an all -0 sum into +0).
NO_ACCUMULATOR = {"f16": 0x8000, "f32": 0x80000000, "s32": 0}


# --- operands --------------------------------------------------------------------------------


def expand_sparse(a: np.ndarray, meta: np.ndarray, kind: str, what: str) -> np.ndarray:
    """Dense A [..., K] from stored A [..., K/2] and 4-bit chunk metadata [..., K/E]
    (9.7.16.10.8.1-3): two 2-bit indices per chunk; for tf32 they index 16-bit halves (1:2),
    for mxf4 pairs of elements (4:8 in pairs)."""
    e = META_CHUNK_ELEMENTS[kind]
    granularity = isa.SPARSITY_GRANULARITY[kind]
    legal = np.isin(meta, isa.SPARSITY_METADATA_VALUES[granularity])
    if not legal.all():
        bad = int(meta[~legal].flat[0])
        raise UndefinedBehaviour(
            f"{what}: sparsity metadata 0b{bad:04b} is not a meaningful {granularity} value (PTX ISA 9.7.16.10.8)")
    idx = np.stack([meta & 3, meta >> 2], axis=-1).astype(np.int64)  # [..., chunks, 2]
    chunks = meta.shape[-1]
    if e == 2:  # tf32: the pair (0,1) or (2,3) of 16-bit halves names element 0 or 1
        positions = idx[..., :1] // 2
    elif e == 8:  # pairs of elements
        positions = np.stack([2 * idx, 2 * idx + 1], axis=-1).reshape(*idx.shape[:-1], 4)
    else:
        positions = idx
    positions = positions + e * np.arange(chunks)[:, None]
    dense = np.zeros((*a.shape[:-1], chunks * e), dtype=a.dtype)
    flat = positions.reshape(*positions.shape[:-2], -1)
    np.put_along_axis(dense, np.broadcast_to(flat, a.shape), a, axis=-1)
    return dense


def sparsity_metadata(state: OracleState, op: Tcgen05Mma, s: MmaShape, cta: int) -> np.ndarray:
    lane0, col0 = taddr_codec.decode(op.sp_meta_tmem)
    lanes, columns, bits = meta_positions(s.dp, s.kind, s.k, lane0, col0, s.d.sparse_selector)
    tmem = checked_tmem(state, cta, lanes, columns, "sparsity metadata")
    return read_fields(tmem[lanes, columns], bits, 4)


def negate(codes: np.ndarray, type_name: str) -> np.ndarray:
    """Negate A or B (Table 42 bits 13-14): flip the sign bit of each element code."""
    return codes ^ np.uint32(1 << (isa.TYPE_BITS[type_name] - 1))


def _scaled_accumulator(c: np.ndarray, fmt: str, exponent: int) -> np.ndarray:
    """D * 2^-scale_input_d (9.7.16.10.9.1) as codes; refuses a scaling that would round (the
    order of that rounding and the sum's is not modelled)."""
    dtype = np.float32 if fmt == "f32" else np.float16
    values = c.astype(np.uint32 if fmt == "f32" else np.uint16).view(dtype)
    exact = values.astype(np.float64) * 2.0 ** -exponent
    scaled = exact.astype(dtype)
    finite = np.isfinite(values)
    if (scaled[finite].astype(np.float64) != exact[finite]).any():
        raise UndefinedBehaviour(f"scale-input-d {exponent} makes D inexact before accumulation (not modelled)")
    return np.where(finite, scaled, values).astype(dtype).view(np.uint32 if fmt == "f32" else np.uint16).astype(np.uint32)


# --- the instruction -------------------------------------------------------------------------


def execute(state: OracleState, op: Tcgen05Mma, profile: str) -> None:
    """Apply one tcgen05.mma to the state (all CTAs of its CTA group)."""
    s = shape_of(op)
    d = s.d
    if op.cta_group > state.ctas:
        raise UndefinedBehaviour(f"cta_group::{op.cta_group} needs {op.cta_group} CTAs; the program has {state.ctas}")
    n = d.n
    mask = zcmask_codec.decode(op.zero_column_mask) if op.zero_column_mask is not None else None
    if mask is not None and d.m not in zcmask_codec.SUB_MASKS_PER_M:
        raise UndefinedBehaviour(f"a zero-column mask with M = {d.m}: Table 45 breaks the mask up for M = "
                                 f"{', '.join(map(str, zcmask_codec.SUB_MASKS_PER_M))} only (the .ws shapes)")
    shift = mask.column_shift if mask else 0
    b = operand_b(state, op, s, shift)[shift:shift + n]
    if mask is not None:
        zeroed = zcmask_codec.generate_mask(mask, d.m, n)
        b = np.where(np.array([(zeroed >> j) & 1 for j in range(n)], dtype=bool)[:, None], np.uint32(0), b)
    if d.negate_b:
        b = negate(b, d.btype)
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    d_lane, d_col = d_positions(s.dp, n, lane0)
    d_col += col0
    disabled = _disabled_lanes(op)
    for cta in range(op.cta_group):
        a = operand_a(state, op, s, cta)
        if d.sparse:
            a = expand_sparse(a, sparsity_metadata(state, op, s, cta), s.kind, "A")
        if d.negate_a:
            a = negate(a, d.atype)
        tmem = checked_tmem(state, cta, d_lane, d_col, "D")
        c = _accumulator(op, d.dtype, tmem[d_lane, d_col])
        scales = block_scales(state, op, s, cta, d_lane) if op.block_scale else {}
        result = np.empty((s.dp.rows, n), dtype=np.uint32)
        width = n // s.dp.splits
        for split in range(s.dp.splits):
            cols = slice(split * width, (split + 1) * width)
            split_scales = {"a_scale": scales["a"][split], "b_scale": scales["b"][cols], "scale_fmt": scales["fmt"],
                            "kind": s.kind} if scales else {}
            result[:, cols] = numerics.matmul(
                a[split], b[cols], c[:, cols], d.atype, d.btype, d.dtype, profile,
                saturate=d.saturate if s.kind == "i8" else None, **split_scales,
            )
        keep = ~disabled[cta * 128 + d_lane]
        state.tmem[cta][d_lane[keep], d_col[keep]] = result[keep] & np.uint32(D_WORD_MASK[d.dtype])


def _accumulator(op: Tcgen05Mma, acc: str, words: np.ndarray) -> np.ndarray:
    """C codes: D as read (scaled by scale-input-d), or -0 when enable-input-d is false."""
    if not op.enable_input_d:
        return np.full(words.shape, NO_ACCUMULATOR[acc], np.uint32)
    c = words & np.uint32(D_WORD_MASK[acc])
    return _scaled_accumulator(c, acc, op.scale_input_d) if op.scale_input_d else c


def _disabled_lanes(op: Tcgen05Mma) -> np.ndarray:
    """disable-output-lane as one flag per lane of the CTA group (bit i of word w: lane 32w + i;
    lanes 128.. belong to the peer CTA, assumption A-DOL-CTA2)."""
    words = op.disable_output_lane or (0,) * isa.DISABLE_OUTPUT_LANE_WORDS[op.cta_group]
    bits = np.array([(w >> i) & 1 for w in words for i in range(32)], dtype=bool)
    return np.concatenate([bits, np.zeros(256 - bits.size, dtype=bool)])
