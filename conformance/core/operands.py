"""What each instruction field may hold: the qualifier sets of the ISA syntax blocks and the widths
and ranges of the operands, one entry per (opcode, field). The program loader refuses any other
value, naming its JSON path; the legality model (tcgen05_conformance.core.legality) then judges the
combinations of values that are each possible.

Booleans (a qualifier present or absent) take their type's two values and have no entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper, mma

_T = "PTX ISA 9.7.16"


@dataclass(frozen=True)
class Domain:
    """The values one field may take (a tuple of choices, or a range of integers) and the ISA
    text they come from; `required`: the JSON must give it although the Python class has a
    default (a default that makes no instruction)."""

    values: tuple | range
    reference: str
    required: bool = False

    def __contains__(self, value: object) -> bool:
        if isinstance(self.values, range):  # True is not 1 here: booleans are not integers
            return isinstance(value, int) and not isinstance(value, bool) and value in self.values
        return value in self.values

    def describe(self) -> str:
        """The values, briefly: "one of a, b", "in [lo, hi]" or "8, 16, ..., 256"."""
        v = self.values
        if isinstance(v, range):
            if v.step == 1:
                return f"in [{v.start}, {v[-1]}]"
            return f"one of {v.start}, {v.start + v.step}, ..., {v[-1]}"
        return "one of " + ", ".join(str(x) for x in v)


def _bits(width: int, reference: str, required: bool = False) -> Domain:
    return Domain(range(0, 1 << width), f"{reference}, {width} bits", required)


def _one_of(values, reference: str) -> Domain:
    return Domain(tuple(values), reference)


def _union(groups) -> tuple:
    return tuple(dict.fromkeys(x for g in groups for x in g))


_CTA_GROUP = _one_of(dm.CTA_GROUPS, f"{_T}: .cta_group = {{.cta_group::1, .cta_group::2}}")
_TADDR = _bits(32, f"{_T}.1.1: Tensor Memory address")
_SDESC = _bits(64, f"{_T}.4.1, Table 40: matrix descriptor")
_LDST_SHAPE = _one_of(dm.LDST_SHAPES, f"{_T}.8.3-4 syntax: .shape")
_LDST_NUM = _one_of(dm.LDST_NUMS, f"{_T}.8.3-4 syntax: .num")
# immHalfSplitoff moves the second .16x32b access along the columns: a column offset, at most the
# 16-bit column field of a TMEM address (9.7.16.1.1).
_SPLIT_OFFSET = Domain(range(0, 1 << 16), f"{_T}.8.3-4: immHalfSplitoff, a column offset (9.7.16.1.1)")
_CP_MULTICASTS = tuple(m for m in _union(s.multicasts for s in dm.CP_SHAPES.values()) if m is not None)
_WGMMA_TYPES = _union(t.types for t in hopper.WGMMA_TYPES.values())
_MMA_SP_TYPES = _union([*(s.types for s in hopper.MMA_SP_SHAPES.values()), hopper.MMA_SP_F8F6F4_TYPES])
_HOPPER_D_TYPES = ("f16", "f32", "s32")
# The register holding alloc's dst or commit's mbar: ptxas takes 32- and 64-bit ones (reports/ptx-spellings/spellings.json).
_ADDRESS_BITS = _one_of(dm.ADDRESS_REGISTER_BITS, f"{_T}.7.1, 9.7.16.12.1: an address register of 32 or 64 bits")
_SP_SELECTOR = Domain(hopper.MMA_SP_SELECTOR_RANGE, "PTX ISA 9.7.14.6.3: sparsity selector 0..3")

DOMAINS: dict[tuple[str, str], Domain] = {
    ("tcgen05.mma", "kind"): _one_of(mma.KINDS, f"{_T}.10.9.1: .kind"),
    ("tcgen05.mma", "cta_group"): _CTA_GROUP,
    ("tcgen05.mma", "scale_vec"): _one_of(mma.SCALE_VEC_QUALIFIERS, f"{_T}.10.9.1: .scale_vectorsize"),
    ("tcgen05.mma", "collector"): _one_of(mma.COLLECTOR_USAGES, f"{_T}.10.9.1-4: .collector_usage"),
    # The descriptor gives M, N and the types: a default of 0 (M = 0, N = 0) is no instruction.
    ("tcgen05.mma", "idesc"): _bits(32, f"{_T}.4.2, Tables 42-44: instruction descriptor", required=True),
    ("tcgen05.mma", "a_desc"): _SDESC,
    ("tcgen05.mma", "b_desc"): _SDESC,
    ("tcgen05.mma", "d_tmem"): _TADDR,
    ("tcgen05.mma", "a_tmem"): _TADDR,
    ("tcgen05.mma", "sp_meta_tmem"): _TADDR,
    ("tcgen05.mma", "scale_a_tmem"): _TADDR,
    ("tcgen05.mma", "scale_b_tmem"): _TADDR,
    ("tcgen05.mma", "disable_output_lane"): _bits(32, f"{_T}.10.9.1: disable-output-lane, a vector of 32-bit masks"),
    ("tcgen05.mma", "scale_input_d"): Domain(mma.SCALE_INPUT_D_RANGE, f"{_T}.10.9.1: scale-input-d is in [0, 15]"),
    ("tcgen05.mma", "zero_column_mask"): _bits(64, f"{_T}.4.3, Table 45: zero-column mask descriptor"),
    ("tcgen05.alloc", "cta_group"): _CTA_GROUP,
    ("tcgen05.alloc", "columns"): _bits(32, f"{_T}.7.1: nCols"),
    ("tcgen05.alloc", "state_space"): _one_of((s for s in dm.ALLOC_STATE_SPACES if s), f"{_T}.7.1: {{.shared::cta}} (absent: generic)"),
    ("tcgen05.alloc", "address_bits"): _ADDRESS_BITS,
    ("tcgen05.dealloc", "cta_group"): _CTA_GROUP,
    ("tcgen05.dealloc", "columns"): _bits(32, f"{_T}.7.1: nCols"),
    ("tcgen05.dealloc", "taddr"): _TADDR,
    ("tcgen05.relinquish_alloc_permit", "cta_group"): _CTA_GROUP,
    ("tcgen05.ld", "shape"): _LDST_SHAPE,
    ("tcgen05.ld", "num"): _LDST_NUM,
    ("tcgen05.ld", "red_op"): _one_of(dm.LD_RED_OPS, f"{_T}.8.3: .redOp"),
    ("tcgen05.ld", "red_type"): _one_of(dm.LD_RED_TYPES, f"{_T}.8.3: .red type"),
    ("tcgen05.ld", "taddr"): _TADDR,
    ("tcgen05.ld", "split_offset"): _SPLIT_OFFSET,
    ("tcgen05.st", "shape"): _LDST_SHAPE,
    ("tcgen05.st", "num"): _LDST_NUM,
    ("tcgen05.st", "taddr"): _TADDR,
    ("tcgen05.st", "split_offset"): _SPLIT_OFFSET,
    # Not an operand: the seed of the stored registers (tcgen05_conformance.oracles.data_movement.st_registers).
    ("tcgen05.st", "values_seed"): Domain(range(0, 1 << 64), "this project: a 64-bit seed of the stored values"),
    ("tcgen05.wait", "what"): _one_of(dm.WAITS, f"{_T}.8.5: .wait_operation"),
    ("tcgen05.fence", "what"): _one_of(dm.FENCES, f"{_T}.11.1: tcgen05.fence variants"),
    ("tcgen05.cp", "shape"): _one_of(dm.CP_SHAPES, f"{_T}.9.2: .shape"),
    ("tcgen05.cp", "cta_group"): _CTA_GROUP,
    ("tcgen05.cp", "multicast"): _one_of(_CP_MULTICASTS, f"{_T}.9.2: .multicast"),
    ("tcgen05.cp", "src_fmt"): _one_of(dm.CP_DECOMPRESS, f"{_T}.9.2: .src_fmt"),
    ("tcgen05.cp", "taddr"): _TADDR,
    ("tcgen05.cp", "s_desc"): _SDESC,
    ("tcgen05.shift", "cta_group"): _CTA_GROUP,
    ("tcgen05.shift", "taddr"): _TADDR,
    ("tcgen05.commit", "cta_group"): _CTA_GROUP,
    ("tcgen05.commit", "cta_mask"): _bits(16, f"{_T}.12.1: ctaMask"),
    ("tcgen05.commit", "state_space"): _one_of((s for s in dm.COMMIT_STATE_SPACES if s),
                                               f"{_T}.12.1: {{.shared::cluster}} (absent: generic)"),
    ("tcgen05.commit", "address_bits"): _ADDRESS_BITS,
    ("wgmma.mma_async", "n"): Domain(range(8, 257, 8), "PTX ISA 9.7.15.5.2: .shape m64nNk*, N a multiple of 8 up to 256"),
    ("wgmma.mma_async", "k"): _one_of(sorted(_union((t.k_dense, 2 * t.k_dense) for t in hopper.WGMMA_TYPES.values())),
                                      "PTX ISA 9.7.15.5.2: K of each type, doubled by .sp"),
    ("wgmma.mma_async", "dtype"): _one_of(_HOPPER_D_TYPES, "PTX ISA 9.7.15.5.2: .dtype"),
    ("wgmma.mma_async", "atype"): _one_of(_WGMMA_TYPES, "PTX ISA 9.7.15.5.2: .atype"),
    ("wgmma.mma_async", "btype"): _one_of(_WGMMA_TYPES, "PTX ISA 9.7.15.5.2: .btype"),
    ("wgmma.mma_async", "imm_scale_a"): _one_of((1, -1), "PTX ISA 9.7.15.5.2: imm-scale-a is 1 or -1"),
    ("wgmma.mma_async", "imm_scale_b"): _one_of((1, -1), "PTX ISA 9.7.15.5.2: imm-scale-b is 1 or -1"),
    ("wgmma.mma_async", "imm_trans_a"): _one_of((0, 1), "PTX ISA 9.7.15.5.2: imm-trans-a is 0 or 1"),
    ("wgmma.mma_async", "imm_trans_b"): _one_of((0, 1), "PTX ISA 9.7.15.5.2: imm-trans-b is 0 or 1"),
    # The sparsity selector of wgmma.sp picks thread groups as mma.sp's does: at most 2 bits.
    ("wgmma.mma_async", "sparse_selector"): _SP_SELECTOR,
    ("wgmma.mma_async", "a_desc"): _bits(64, "PTX ISA 9.7.15.5.1: matrix descriptor"),
    ("wgmma.mma_async", "b_desc"): _bits(64, "PTX ISA 9.7.15.5.1: matrix descriptor"),
    ("mma.sp", "k"): _one_of(sorted(_union(s.ks for s in hopper.MMA_SP_SHAPES.values())), "PTX ISA 9.7.14.6.3: .shape m16n8k*"),
    ("mma.sp", "dtype"): _one_of(_HOPPER_D_TYPES, "PTX ISA 9.7.14.6.3: .dtype"),
    ("mma.sp", "ctype"): _one_of(_HOPPER_D_TYPES, "PTX ISA 9.7.14.6.3: .ctype"),
    ("mma.sp", "atype"): _one_of(_MMA_SP_TYPES, "PTX ISA 9.7.14.6.3: .atype"),
    ("mma.sp", "btype"): _one_of(_MMA_SP_TYPES, "PTX ISA 9.7.14.6.3: .btype"),
    ("mma.sp", "kind"): _one_of(hopper.MMA_SP_SM120_KINDS, "PTX ISA 9.7.14.6.3: .kind"),
    ("mma.sp", "scale_vec"): _one_of(hopper.MMA_SP_SCALE_VEC_SIZES, "PTX ISA 9.7.14.6.3: .scale_vec_size"),
    ("mma.sp", "stype"): _one_of(hopper.MMA_SP_SCALE_TYPES, "PTX ISA 9.7.14.6.3: .stype"),
    ("mma.sp", "sparse_selector"): _SP_SELECTOR,
    ("mma.sp", "metadata"): _bits(32, "PTX ISA 9.7.14.6.3: the metadata operand e, a 32-bit register"),
}
