"""Which operand values each legality rule reads, by instruction type (model field names).

A rule is decided for an instruction read from text only where every operand it reads is a
constant there (an immediate, or a register a `mov` of one filled); otherwise `lint` reports it
as undecided rather than guessing. Rules absent from an instruction type's table read only its
qualifiers and the target.
"""

from __future__ import annotations

from tcgen05_conformance.core.instructions import (
    Instruction,
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Dealloc,
    Tcgen05Mma,
    Tcgen05Shift,
    WgmmaMma,
)

_IDESC = frozenset({"idesc"})
_DESCRIPTORS = frozenset({"a_desc", "b_desc"})
_TMEM = frozenset({"idesc", "d_tmem", "a_tmem", "sp_meta_tmem"})
_COLUMNS = {"alloc.columns": frozenset({"columns"}), "alloc.columns-register": frozenset({"columns"})}
_SELECTOR = frozenset({"sparse_selector"})

OPERANDS_READ: dict[type, dict[str, frozenset[str]]] = {
    Tcgen05Mma: {
        # the instruction descriptor's fields (9.7.16.4.2, Tables 42-44) and what they select
        **{rule: _IDESC for rule in (
            "idesc.reserved", "idesc.sparse-flag", "idesc.shape-m", "idesc.shape-n", "idesc.shape-k96", "idesc.dtype",
            "idesc.abtype", "idesc.abtype-mixed", "idesc.saturate", "idesc.negate", "idesc.transpose-kind",
            "idesc.transpose-size", "idesc.transpose-b-8bit-n", "idesc.sparse-selector", "idesc.max-shift",
            "idesc.scale-type", "idesc.sf-id", "target.k96", "mma.scale-vec.k96", "mma.ashift.m",
        )},
        "idesc.transpose-swizzle": _IDESC | _DESCRIPTORS,
        "tmem.lane-alignment": _TMEM, "tmem.same-alignment": _TMEM,
        "tmem.columns": frozenset({"idesc", "d_tmem"}),
        "sdesc.fixed": _DESCRIPTORS, "sdesc.swizzle": _DESCRIPTORS, "target.lbo-absolute": _DESCRIPTORS,
        "sdesc.lbo-absolute": _IDESC | _DESCRIPTORS,
        "zcmask.reserved": frozenset({"zero_column_mask"}),
        "zcmask.shift": frozenset({"zero_column_mask", "idesc"}),
        "mma.scale-input-d.range": frozenset({"scale_input_d"}),
    },
    Tcgen05Alloc: _COLUMNS,
    Tcgen05Dealloc: _COLUMNS,
    Tcgen05Shift: {"shift.lane-alignment": frozenset({"taddr"})},
    WgmmaMma: {
        "sdesc.sm90-reserved": _DESCRIPTORS,
        "wgmma.negate": frozenset({"imm_scale_a", "imm_scale_b"}),
        "wgmma.transpose": frozenset({"imm_trans_a", "imm_trans_b"}),
        "wgmma.sparse-selector": _SELECTOR,
    },
    MmaSp: {"mma-sp.selector": _SELECTOR, "mma-sp.selector-silicon": _SELECTOR},
}


def undecided_rules(instr: Instruction, unknown: frozenset[str]) -> dict[str, frozenset[str]]:
    """The rules `instr` cannot be judged by while the operands `unknown` are not constants:
    rule id -> the unknown operands it reads."""
    table = OPERANDS_READ.get(type(instr), {})
    return {rule: fields & unknown for rule, fields in table.items() if fields & unknown}
