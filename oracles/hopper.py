"""Semantics of Hopper wgmma.mma_async (PTX ISA 9.7.15.5) with both operands in shared memory,
through the same descriptor gathering as tcgen05 (9.7.15.5.1.2 shares the canonical layouts; the
sm_90 descriptor layout is assumption A-WGMMA-DESC).

The accumulator C comes from the program's matrix "c" (zero when the program has none); with
the scale-d predicate false, D = A x B and C is not read. Operands A in registers and sparse A
are not modelled yet.
"""

from __future__ import annotations

import numpy as np

from conformance.encoding import sdesc as sdesc_codec
from conformance.instructions import WgmmaMma
from conformance.isa import hopper as isa
from conformance.isa import mma as tcgen05_isa
from oracles import numerics
from oracles.smem_operand import gather, storage_for
from oracles.state import MachineState, NotModelled, UndefinedBehaviour


def wgmma(state: MachineState, op: WgmmaMma, profile: str) -> np.ndarray:
    """D codes [64, N] (uint32; 16-bit D in the low half) of one wgmma.mma_async."""
    if op.a_in_registers or op.sparse:
        raise NotModelled("wgmma with A in registers or .sp reads registers, which programs do not carry yet")
    family = isa.WGMMA_TYPES[isa.wgmma_type_family(op.atype)]
    k = family.k_dense

    def operand(desc: int, type_name: str, rows: int, transposed: int | None, scale: int) -> np.ndarray:
        bits = tcgen05_isa.TYPE_BITS[type_name]
        codes = gather(state, 0, sdesc_codec.decode(desc, "sm90"), not transposed, rows, k, storage_for(bits, False), "wgmma")
        # imm-scale-a / imm-scale-b = -1 negates the operand (9.7.15.5.2): flip each sign bit.
        return codes ^ np.uint32(1 << (bits - 1)) if scale == -1 else codes

    a = operand(op.a_desc, op.atype, isa.WGMMA_M, op.imm_trans_a, op.imm_scale_a)
    b = operand(op.b_desc, op.btype, op.n, op.imm_trans_b, op.imm_scale_b)
    c = state.matrices.get("c")
    if c is None or not op.scale_d:  # scale-d false: D = A x B (9.7.15.5.2), as adding +0
        c = np.zeros((isa.WGMMA_M, op.n), dtype=np.uint32)
    elif c.shape != (isa.WGMMA_M, op.n):
        raise UndefinedBehaviour(f"the program's C is {c.shape[0]} x {c.shape[1]}, wgmma m64n{op.n} reads 64 x {op.n}")
    return numerics.matmul(a, b, c, op.atype, op.btype, op.dtype, profile,
                           saturate=op.satfinite if op.dtype == "s32" else None)
