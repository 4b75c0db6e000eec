"""Semantics of Hopper wgmma.mma_async (PTX ISA 9.7.15.5) with both operands in shared memory,
through the same descriptor gathering as tcgen05 (9.7.15.5.1.2 shares the canonical layouts; the
sm_90 descriptor layout is assumption A-WGMMA-DESC).

The accumulator C comes from the program's matrix "c" (zero when the program has none); with
the scale-d predicate false, D = A x B and C is not read: the products' sum plus -0, which keeps an
exact sum of -0 products -0 (A-NO-ACCUMULATOR). A in registers comes from the matrix
"a" (64 x K). Sparse wgmma (.sp) reads the compressed A (64 x K/2) from shared memory and each
thread's metadata word from the matrix "e" (128 x 1); sparse A in registers is not modelled yet.

`wgmma` and `mma_sp` gather the operands and return the inner products as a `MatrixProduct`;
`tcgen05_conformance.oracles.execute` evaluates those of many programs together (`numerics.evaluate`).
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.isa import hopper as isa
from tcgen05_conformance.core.isa import mma as tcgen05_isa
from tcgen05_conformance.core.isa.fragments import WGMMA_METADATA, Fragment, mma_sp_fragments, selected_threads
from tcgen05_conformance.core.layouts.smem import storage_for
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.memo import frozen, memo
from tcgen05_conformance.oracles.mma import NO_ACCUMULATOR
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct
from tcgen05_conformance.oracles.numerics.profiles import for_instruction
from tcgen05_conformance.core.layouts.operands import gather
from tcgen05_conformance.oracles.state import NotModelled, OracleState, UndefinedBehaviour

THREADS = 128  # one warpgroup
# The rules that make an MMA's operands and arithmetic what they are: one broken leaves nothing to
# compute (f16 inputs into an s32 accumulator; a K the input type has no layout for).
DEFINING_RULES = frozenset({"wgmma.types", "wgmma.shape", "mma-sp.types", "mma-sp.shape"})
HOPPER_TARGET = "sm_90a"  # has both families, so the rules above are checked


def instruction_issue(op: WgmmaMma | MmaSp, profile: str) -> UndefinedBehaviour | NotModelled | None:
    """Why the oracle gives no inner products for any data set of `op` under `profile`: a
    combination of types or shape the ISA does not define, or a form not modelled yet (None when
    it gives them; a campaign that draws data sets on the GPU asks once per instruction)."""
    broken = _defining_rule_broken(op)
    if broken:
        return UndefinedBehaviour(f"{op.OP} has no defined behaviour: {broken}")
    if isinstance(op, WgmmaMma):
        return NotModelled("sparse wgmma with A in registers is not modelled yet") if op.sparse and op.a_in_registers else None
    if op.kind or op.block_scale or isa.mma_sp_family(op.atype) == "i4":
        return NotModelled(f"mma.sp with {op.kind or op.atype} inputs is not modelled yet")
    return None


def _require_modelled(op: WgmmaMma | MmaSp, profile: str) -> None:
    issue = instruction_issue(op, profile)
    if issue is not None:
        raise issue


# The legality check is the same for every data set of an instruction (a campaign chunk holds
# 200 / data sets instructions).
@memo(maxsize=256)
def _defining_rule_broken(op: WgmmaMma | MmaSp) -> str:
    """The first rule of DEFINING_RULES `op` breaks, as text ("" when none)."""
    return next((str(v) for v in check(op, HOPPER_TARGET) if v.rule in DEFINING_RULES), "")


def _matrix(state: OracleState, name: str, shape: tuple[int, int]) -> np.ndarray | None:
    """The program's register operand `name`, refused when it is not `shape`."""
    m = state.matrices.get(name)
    if m is not None and m.shape != shape:
        raise UndefinedBehaviour(f"the program's {name} is {m.shape[0]} x {m.shape[1]}; the instruction reads {shape[0]} x {shape[1]}")
    return m


def sparse_positions(e_words: np.ndarray, bits: int, k_logical: int, selector: int,
                     fragment: Fragment | None = None) -> np.ndarray:
    """The logical K column of every stored (compressed) A element of a sparse MMA, int64
    [rows, k_logical / 2], from each thread's metadata word and the sparsity selector; the
    metadata register layout is `fragment` (default: sparse wgmma's, 128 threads, 64 rows).

    The metadata of row r, group j is a nibble of two 2-bit indices (the low pair for the first
    stored element): positions in a group of four elements for 16- and 8-bit types (2:4), in a pair
    of tf32 elements counted in 16-bit halves (1:2: 0b0100 = the first, 0b1110 = the second),
    PTX ISA 9.7.15.5.1 (sparse wgmma); which thread holds which bits is `WGMMA_METADATA`."""
    fragment = fragment or WGMMA_METADATA[bits]
    chosen, rows, cols, shifts = _metadata_reads(fragment, selector)
    fields = (e_words[chosen].astype(np.int64)[:, None] >> shifts) & ((1 << (32 // fragment.value_count)) - 1)
    meta = np.zeros((fragment.rows, k_logical), np.int64)
    meta[rows, cols] = fields
    if bits == 32:
        first = meta[:, 0::2] & 3  # index of the first half of the stored element
        return 2 * np.arange(k_logical // 2) + (first >> 1)
    nibble = meta[:, 0::4] | meta[:, 1::4] << 1 | meta[:, 2::4] << 2 | meta[:, 3::4] << 3
    index = np.stack([nibble & 3, nibble >> 2], axis=-1)
    return (4 * np.arange(k_logical // 4)[:, None] + index).reshape(fragment.rows, k_logical // 2)


# A few fragments and two selectors: the same for every sparse program of a form.
@memo(maxsize=64)
def _metadata_reads(fragment: Fragment, selector: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What `sparse_positions` reads of the metadata registers laid out as `fragment`: the threads
    the selector picks (bool [threads]), the (row, column) of each of their values (each
    [picked threads, values]) and each value's shift in its word ([values]); read-only."""
    rows, cols = fragment.elements()
    chosen = selected_threads(fragment, selector)
    shifts = 32 // fragment.value_count * np.arange(fragment.value_count)
    return chosen, frozen(rows[chosen]), frozen(cols[chosen]), frozen(shifts)


def mma_sp(state: OracleState, op: MmaSp, profile: str) -> MatrixProduct:
    """The inner products of D [16, 8] (uint32 codes; 16-bit D in the low half) of one warp-level
    mma.sp{::ordered_metadata} (PTX ISA 9.7.14.6.3): the compressed A (16 x K/2), B (8 x K), C
    (16 x 8) and each lane's metadata word (32 x 1) from the program's matrices; the numerics of
    warp-level MMA (`for_instruction(profile, "mma_sync")`)."""
    _require_modelled(op, profile)
    shapes = {"a": (isa.MMA_SP_M, op.k // 2), "b": (isa.MMA_SP_N, op.k), "c": (isa.MMA_SP_M, isa.MMA_SP_N), "e": (32, 1)}
    operands = {name: _matrix(state, name, shape) for name, shape in shapes.items()}
    missing = [name for name, m in operands.items() if m is None]
    if missing:
        raise UndefinedBehaviour(f"mma.sp reads registers the program does not carry: matrices {', '.join(missing)}")
    bits = tcgen05_isa.TYPE_BITS[op.atype]
    columns = sparse_positions(operands["e"][:, 0], bits, op.k, op.sparse_selector, mma_sp_fragments(bits, op.k).metadata)
    return MatrixProduct(operands["a"], operands["b"], operands["c"], op.atype, op.btype, op.dtype,
                         for_instruction(profile, "mma_sync"), columns=columns,
                         saturate=op.satfinite if op.dtype == "s32" else None)


def wgmma(state: OracleState, op: WgmmaMma, profile: str) -> MatrixProduct:
    """The inner products of D [64, N] (uint32 codes; 16-bit D in the low half) of one
    wgmma.mma_async{.sp}."""
    _require_modelled(op, profile)
    k = isa.WGMMA_TYPES[isa.wgmma_type_family(op.atype)].k_dense  # stored A columns (K / 2 when sparse)

    def from_smem(desc: int, type_name: str, rows: int, transposed: int | None, columns: int) -> np.ndarray:
        storage = storage_for(tcgen05_isa.TYPE_BITS[type_name], False)
        return gather(state, 0, sdesc_codec.decode(desc, "sm90"), not transposed, rows, columns, storage, "wgmma")

    def scaled(codes: np.ndarray, type_name: str, scale: int) -> np.ndarray:
        # imm-scale-a / imm-scale-b = -1 negates the operand (9.7.15.5.2): flip each sign bit.
        return codes ^ np.uint32(1 << (tcgen05_isa.TYPE_BITS[type_name] - 1)) if scale == -1 else codes

    if op.a_in_registers:
        a = _matrix(state, "a", (isa.WGMMA_M, k))
        if a is None:
            raise UndefinedBehaviour('wgmma reads A from registers, and the program carries no matrix "a"')
    else:
        a = from_smem(op.a_desc, op.atype, isa.WGMMA_M, op.imm_trans_a, k)
    a = scaled(a, op.atype, op.imm_scale_a)
    b = scaled(from_smem(op.b_desc, op.btype, op.n, op.imm_trans_b, op.k), op.btype, op.imm_scale_b)
    c = _matrix(state, "c", (isa.WGMMA_M, op.n))
    if not op.scale_d:  # D = A x B (9.7.15.5.2): adding -0, IEEE addition's identity, as tcgen05 (A-NO-ACCUMULATOR)
        c = np.full((isa.WGMMA_M, op.n), NO_ACCUMULATOR[op.dtype], dtype=np.uint32)
    elif c is None:
        c = np.zeros((isa.WGMMA_M, op.n), dtype=np.uint32)
    saturate = op.satfinite if op.dtype == "s32" else None
    if not op.sparse:
        return MatrixProduct(a, b, c, op.atype, op.btype, op.dtype, profile, saturate=saturate)
    e = _matrix(state, "e", (THREADS, 1))
    if e is None:
        raise UndefinedBehaviour('sparse wgmma reads its metadata register, and the program carries no matrix "e"')
    columns = sparse_positions(e[:, 0], tcgen05_isa.TYPE_BITS[op.atype], op.k, op.sparse_selector)
    # each row multiplies its stored A elements by the B rows its metadata selects
    return MatrixProduct(a, b, c, op.atype, op.btype, op.dtype, profile, columns=columns, saturate=saturate)
