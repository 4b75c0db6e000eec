"""Which spellings ptxas accepts for the tensor-core instructions, as data, and a seeded choice
among them. The one place that knows the spellings: the renderer (`tcgen05_conformance.core.ptx.render`)
writes by these tables and the parser (`tcgen05_conformance.core.ptx.parse`) reads by them.

How the facts were found: by asking the assembler (nvJitLink 13.5, in-process) about every
order of the qualifiers of a representative form of each instruction (all orders up to seven
qualifiers, 3,000 sampled beyond) and about alternatives for each operand, for sm_100a, sm_103a
and sm_90a: `tcgen05-conformance spellings --out reports/ptx-spellings/spellings.json`
(the findings, with the rejected and crashing spellings); `tests/test_ptx_spelling.py` asks
ptxas again about a sample. The PTX ISA syntax blocks (9.7.16.7-12, 9.7.15.5, 9.7.14.6.3) list
one order; ptxas accepts any order of the qualifiers except the constraints below.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

TYPE = r"(?:bf16|tf32|e\dm\d|ue\dm\d|[bfsu]\d+)"


@dataclass(frozen=True)
class QualifierSyntax:
    """The qualifiers of one opcode. `slots`: (slot, pattern of its tokens) in the ISA syntax
    order; a slot named in `positional` is a class whose tokens are named by their position
    (the types of wgmma: D, then A, then B). `leading`: slots ptxas accepts only right after
    the opcode. `residual`: the slot a token no pattern matches fills (so an out-of-grammar
    value still reads into the model and the legality rules can name it). `required`: slots
    ptxas requires (".sync modifier required", "Unexpected instruction types" without .b32),
    each with the one token it takes where the model holds no value for it (None: any)."""

    opcode: str
    slots: tuple[tuple[str, str], ...]
    leading: tuple[str, ...] = ()
    positional: dict[str, tuple[str, ...]] = field(default_factory=dict)
    residual: str | None = None
    required: dict[str, str | None] = field(default_factory=dict)

    def slot_of(self, token: str) -> str | None:
        for slot, pattern in self.slots:
            if re.fullmatch(pattern, token):
                return slot
        return self.residual


_SYNC = (("sync", "sync"), ("aligned", "aligned"))
_CTA_GROUP = ("cta_group", r"cta_group::\d+")
# ptxas: ".sync modifier required", ".aligned modifier required" (the ISA syntax blocks write both)
_SYNC_REQUIRED: dict[str, str | None] = {"sync": None, "aligned": None}

QUALIFIERS: dict[str, QualifierSyntax] = {q.opcode: q for q in (
    # 9.7.16.10.9.1-4. ptxas: .ws only right after the opcode (".sp.ws": "Unknown modifier '.ws'").
    QualifierSyntax("tcgen05.mma", (
        ("ws", "ws"), ("sp", "sp"), _CTA_GROUP, ("kind", r"kind::\w+"), ("block_scale", "block_scale"),
        ("scale_vec", r"scale_vec::\w+|block\d+"), ("ashift", "ashift"), ("collector", r"collector::\w+::\w+"),
    ), leading=("ws",)),
    # 9.7.16.7.1
    QualifierSyntax("tcgen05.alloc", (_CTA_GROUP, *_SYNC, ("state_space", r"shared(?:::\w+)?"), ("type", TYPE)),
                    required=_SYNC_REQUIRED | {"type": "b32"}),
    QualifierSyntax("tcgen05.dealloc", (_CTA_GROUP, *_SYNC, ("type", TYPE)), required=_SYNC_REQUIRED | {"type": "b32"}),
    QualifierSyntax("tcgen05.relinquish_alloc_permit", (_CTA_GROUP, *_SYNC), required=_SYNC_REQUIRED),
    # 9.7.16.8.3. ptxas: .red only right after the opcode ("Unknown modifier '.red'" elsewhere).
    QualifierSyntax("tcgen05.ld", (
        ("red", "red"), *_SYNC, ("shape", r"\d+x\d+b(?:x2)?"), ("num", r"x\d+"), ("pack", r"pack::16b"),
        ("abs", "abs"), ("nan", "NaN"), ("type", TYPE),
    ), leading=("red",), residual="red_op", required=_SYNC_REQUIRED),
    # 9.7.16.8.4
    QualifierSyntax("tcgen05.st", (*_SYNC, ("shape", r"\d+x\d+b(?:x2)?"), ("num", r"x\d+"), ("unpack", r"unpack::16b"),
                                   ("type", TYPE)), required=_SYNC_REQUIRED),
    # 9.7.16.8.5 and 9.7.16.11.1: the operation is part of the opcode (tcgen05.wait::ld)
    QualifierSyntax("tcgen05.wait", _SYNC, required=_SYNC_REQUIRED),
    QualifierSyntax("tcgen05.fence", ()),
    # 9.7.16.9.2. ptxas: .dst_fmt before .src_fmt (".b6x16_p32.b8x16": "Illegal modifier").
    QualifierSyntax("tcgen05.cp", (
        _CTA_GROUP, ("shape", r"\d+x\d+b"), ("multicast", r"warpx\d(?:::\w+)?"), ("fmt", r"b\d+x\d+(?:_p\d+)?"),
    ), positional={"fmt": ("dst_fmt", "src_fmt")}),
    # 9.7.16.9.3 (its own example writes .down.cta_group::1)
    QualifierSyntax("tcgen05.shift", (_CTA_GROUP, ("down", "down"))),
    # 9.7.16.12.1
    QualifierSyntax("tcgen05.commit", (
        _CTA_GROUP, ("completion", r"mbarrier::\w+::\w+"), ("state_space", r"shared(?:::\w+)?"),
        ("multicast", r"multicast::\w+"), ("type", TYPE),
    )),
    # 9.7.15.5: the types are read by position (".f16.f32.f16": "Unexpected instruction types").
    QualifierSyntax("wgmma.mma_async", (
        ("sp", "sp"), *_SYNC, ("shape", r"m\d+n\d+k\d+"), ("satfinite", "satfinite"), ("type", TYPE),
    ), positional={"type": ("dtype", "atype", "btype")}, required=_SYNC_REQUIRED),
    # 9.7.14.6.3: layouts and types by position (".col.row": "Illegal alayout '.col'"). The
    # .kind / .block_scale forms need sm_120a, which ptxas was not asked about: their scale
    # type (.stype) is read as the fifth type, the position the ISA syntax gives it.
    QualifierSyntax("mma", (
        ("sp", r"sp(?:::ordered_metadata)?"), *_SYNC, ("shape", r"m\d+n\d+k\d+"), ("layout", "row|col"),
        ("kind", r"kind::\w+"), ("block_scale", "block_scale"), ("scale_vec", r"scale_vec::\w+"),
        ("satfinite", "satfinite"), ("type", TYPE),
    ), positional={"layout": ("alayout", "blayout"), "type": ("dtype", "atype", "btype", "ctype", "stype")},
        required=_SYNC_REQUIRED),
)}


# --- operand forms ------------------------------------------------------------------------
# Which written forms ptxas accepts for each operand (reports/ptx-spellings/spellings.json, "operands").
# TMEM addresses: [reg] or [reg+imm] (the immediate may be negative, written [reg+-imm]);
# "[reg-imm]" is a syntax error, a 64-bit register is refused and "[imm]" is refused by
# tcgen05.mma / ld / st, while tcgen05.cp and tcgen05.shift crash the assembler (SIGSEGV).
TMEM_ADDRESS_FORMS = ("[reg]", "[reg+imm]")
# Operands written as a register or an immediate (the model field each one sets).
IMMEDIATE_OR_REGISTER: dict[str, tuple[str, ...]] = {
    "tcgen05.mma": ("idesc", "a_desc", "b_desc", "zero_column_mask"),
    "tcgen05.dealloc": ("taddr",),
    "tcgen05.cp": ("s_desc",),
    "tcgen05.commit": ("cta_mask",),
    "wgmma.mma_async": ("a_desc", "b_desc"),
}
# Predicate operands: a predicate register, a negated one (!p) or an immediate.
PREDICATE_OPERANDS: dict[str, str] = {"tcgen05.mma": "enable_input_d", "wgmma.mma_async": "scale_d"}
# Vectors whose elements may be immediates as long as one is a register ("{0, 0, 0, 0}" is refused).
VECTORS_WITH_IMMEDIATES = ("disable_output_lane",)
# The sparsity metadata of wgmma.sp and mma.sp: a register, or a vector of one register ({%r}).
# wgmma.sp takes {%r} in every type family; for mma.sp ptxas takes it or fails in its own
# lowering ("<builtin> ... Parsing error", "Argument vector size mismatch for instruction 'mov'")
# depending on the target, the types and .sp vs .sp::ordered_metadata (the "mma.sp metadata,
# TYPES" rows of the findings), so the parser reads it and the renderer writes it for wgmma only.
METADATA_BRACES_DRAWN = ("wgmma.mma_async",)
# Operands that are immediates only: scale-input-d, immHalfSplitoff, wgmma's imm-scale / imm-trans
# and the sparsity selectors of wgmma and mma.sp; registers only: ld.red's redval, the
# sparsity metadata of wgmma and mma.sp, ld destinations.
INTEGER_NOTATIONS = ("hex", "decimal", "octal", "binary")  # all accepted for immediates, with an optional U


@dataclass(frozen=True)
class Spelling:
    """How one instruction is written. The default is canonical: qualifiers in the ISA syntax
    order, runtime values in registers loaded by `mov`, hexadecimal immediates.

    `order`: the qualifier tokens as written (a permutation of the syntax order's);
    `immediates`: operands (model field names of IMMEDIATE_OR_REGISTER) written as immediates;
    `offsets`: TMEM address operands written [reg+imm], with imm (the register holds the rest);
    `negated`: a predicate operand written !p (p holding the negation); `lanes_immediate`:
    disable-output-lane words written as immediates; `address_symbol`: a shared-memory address
    written as its symbol rather than a register; `metadata_braces`: the sparsity metadata of
    wgmma.sp / mma.sp written as a vector of one register; `guard`: an always-true guard predicate
    ("@%p_true" or "@!%p_false"); `notation`, `unsigned_suffix`: how immediates and `mov`
    values are written."""

    order: tuple[str, ...] | None = None
    immediates: frozenset[str] = frozenset()
    offsets: tuple[tuple[str, int], ...] = ()
    negated: frozenset[str] = frozenset()
    lanes_immediate: frozenset[int] = frozenset()
    address_symbol: bool = False
    metadata_braces: bool = False
    guard: str | None = None
    notation: str = "hex"
    unsigned_suffix: bool = False

    def number(self, value: int) -> str:
        """An integer literal in this spelling's notation (negative values in decimal)."""
        if value < 0:
            return str(value)
        text = {"hex": f"{value:#x}", "decimal": str(value), "octal": f"0{value:o}" if value else "0",
                "binary": f"{value:#b}"}[self.notation]
        return text + ("U" if self.unsigned_suffix else "")


CANONICAL = Spelling()
GUARDS = ("@%p_true", "@!%p_false")  # the renderer's setup makes %p_true true and %p_false false


def draw_order(syntax: QualifierSyntax, qualifiers: list[tuple[str, str]], rng: random.Random) -> tuple[str, ...]:
    """A uniformly drawn order ptxas accepts: leading slots first, then the rest shuffled with
    each positional class's tokens kept in their syntax order."""
    lead = [q for q in qualifiers if q[0] in syntax.leading]
    rest = [q for q in qualifiers if q[0] not in syntax.leading]
    rng.shuffle(rest)
    for cls in syntax.positional:
        in_syntax_order = iter([q for q in qualifiers if q[0] == cls])
        rest = [next(in_syntax_order) if q[0] == cls else q for q in rest]
    return tuple(token for _, token in lead + rest)


def draw_spelling(opcode: str, qualifiers: list[tuple[str, str]], present: dict[str, object], rng: random.Random,
                  keep_registers: frozenset[str] = frozenset()) -> Spelling:
    """One accepted spelling of an instruction, drawn from `rng`: `qualifiers` its (slot, token)
    list in syntax order, `present` its operands that exist (model field -> value), and
    `keep_registers` the operands the caller needs in registers (a kernel relocates them)."""
    syntax = QUALIFIERS[opcode]
    order = draw_order(syntax, qualifiers, rng) if rng.random() < 0.75 else None
    free = [f for f in IMMEDIATE_OR_REGISTER.get(opcode, ()) if f in present and f not in keep_registers]
    immediates = frozenset(f for f in free if rng.random() < 0.5)
    offsets = tuple((f, rng.choice((-32, -16, -4, 4, 8, 16, 32, 64)))
                    for f in ("d_tmem", "a_tmem", "sp_meta_tmem", "scale_a_tmem", "scale_b_tmem", "taddr")
                    if f in present and f not in keep_registers and opcode != "tcgen05.dealloc" and rng.random() < 0.3)
    predicate = PREDICATE_OPERANDS.get(opcode)
    negated = frozenset({predicate}) if predicate in present and predicate not in keep_registers and rng.random() < 0.3 else frozenset()
    if predicate in present and predicate not in keep_registers and not negated and rng.random() < 0.3:
        immediates |= {predicate}
    lanes = present.get("disable_output_lane") or ()
    lanes_immediate = frozenset(k for k in range(len(lanes)) if rng.random() < 0.3)
    if lanes and len(lanes_immediate) == len(lanes):
        lanes_immediate -= {rng.randrange(len(lanes))}
    return Spelling(
        order=order, immediates=immediates, offsets=offsets, negated=negated, lanes_immediate=lanes_immediate,
        address_symbol="address_symbol" in present and "address" not in keep_registers and rng.random() < 0.5,
        metadata_braces="metadata" in present and opcode in METADATA_BRACES_DRAWN and rng.random() < 0.3,
        guard=rng.choice(GUARDS) if rng.random() < 0.25 else None,
        notation=rng.choice(INTEGER_NOTATIONS) if rng.random() < 0.5 else "hex",
        unsigned_suffix=rng.random() < 0.15,
    )
