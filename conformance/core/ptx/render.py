"""One instruction value as PTX text in a chosen spelling (`tcgen05_conformance.core.ptx.spelling`): the
instruction line over the fixed register names that `REGISTER_DECLARATIONS` declares, and the
`mov` / `setp` lines that load its runtime operand values into those registers, so the assembler
sees exactly what a kernel would issue and the parser can read every value back."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import singledispatch

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
)
from tcgen05_conformance.core.isa.data_movement import CP_DST_FMT, LDST_SHAPES, MAX_REGISTERS_PER_LDST
from tcgen05_conformance.core.isa.hopper import MMA_SP_SHAPES, mma_sp_family
from tcgen05_conformance.core.isa.mma import DISABLE_OUTPUT_LANE_WORDS
from tcgen05_conformance.core.ptx import spelling as spellings
from tcgen05_conformance.core.ptx.spelling import CANONICAL, Spelling

# wgmma D registers declared: N/2 for N up to 512, the largest N a one-rule-broken wgmma.shape
# writes (an undeclared register would make lint say `unparsed`, as ptxas rejects it)
WGMMA_D_MAX = 256
REGISTER_DECLARATIONS = f"""\
  .reg .pred %p_en, %p_true, %p_false;
  .reg .b16 %h_mask;
  .reg .b32 %r_idesc, %r_d, %r_a, %r_meta, %r_sfa, %r_sfb, %r_t, %r_red, %r_e, %r_sfadata, %r_sfbdata;
  .reg .b32 %r_dol<{max(DISABLE_OUTPUT_LANE_WORDS.values())}>, %r_ncols, %r_slot, %r_mbar;
  .reg .b32 %v<{MAX_REGISTERS_PER_LDST}>;
  .reg .b32 %ra<4>, %rb<4>, %rh<{WGMMA_D_MAX // 2}>;
  .reg .f32 %fc<{WGMMA_D_MAX}>;
  .reg .s32 %sc<{WGMMA_D_MAX}>;
  .reg .b64 %rd_adesc, %rd_bdesc, %rd_zc, %rd_sdesc, %rd_mbar, %rd_slot;"""
SHARED_SYMBOLS = {"tcgen05.alloc": "taddr_slot", "tcgen05.commit": "mbar"}  # declared by the module around
REGISTER_BITS = {"b16": 16, "b32": 32, "b64": 64}
WORD_MASK = {16: 0xFFFF, 32: 0xFFFF_FFFF, 64: 0xFFFF_FFFF_FFFF_FFFF}


@dataclass(frozen=True)
class Rendered:
    """The lines loading the operand values (`moves`), the line setting the guard predicate
    (`setup`, when the spelling has a guard) and the instruction line."""

    moves: tuple[str, ...]
    setup: tuple[str, ...]
    line: str

    @property
    def lines(self) -> tuple[str, ...]:
        return self.moves + self.setup + (self.line,)


@dataclass
class _Writer:
    """Writes operands in a spelling, collecting the moves they need."""

    spelling: Spelling
    moves: list[str] = field(default_factory=list)

    def number(self, value: int) -> str:
        return self.spelling.number(value)

    def mov(self, kind: str, register: str, value: int) -> None:
        self.moves.append(f"mov.{kind} {register}, {self.number(value & WORD_MASK[REGISTER_BITS[kind]])};")

    def value(self, name: str, register: str, kind: str, value: int) -> str:
        """A register or immediate operand (model field `name`)."""
        if name in self.spelling.immediates:
            return self.number(value & WORD_MASK[REGISTER_BITS[kind]])
        self.mov(kind, register, value)
        return register

    def tmem(self, name: str, register: str, address: int) -> str:
        """A Tensor Memory address, [reg] or [reg+imm]."""
        offset = dict(self.spelling.offsets).get(name, 0)
        self.mov("b32", register, address - offset)
        if not offset:
            return f"[{register}]"
        return f"[{register}+{self.number(offset) if offset > 0 else '-' + self.number(-offset)}]"

    def metadata(self, register: str) -> str:
        return f"{{{register}}}" if self.spelling.metadata_braces else register

    def predicate(self, name: str, register: str, value: bool) -> str:
        if name in self.spelling.immediates:
            return self.number(int(value))
        negated = name in self.spelling.negated
        self.moves.append(f"setp.ne.b32 {register}, {self.number(int(value != negated))}, 0;")
        return f"!{register}" if negated else register

    def shared_address(self, opcode: str, state_space: str | None, bits: int) -> str:
        """The shared-memory address of alloc's dst / commit's mbarrier: the symbol, or a
        register holding its shared (state space given) or generic (none) address."""
        symbol = SHARED_SYMBOLS[opcode]
        if self.spelling.address_symbol and state_space is not None and bits == 64:
            return f"[{symbol}]"
        wide, narrow = {"tcgen05.alloc": ("%rd_slot", "%r_slot"), "tcgen05.commit": ("%rd_mbar", "%r_mbar")}[opcode]
        if state_space is None:
            self.moves.append(f"cvta.shared.u64 {wide}, {symbol};")
            if bits == 32:
                self.moves.append(f"cvt.u32.u64 {narrow}, {wide};")
        else:
            self.moves.append(f"mov.u{bits} {wide if bits == 64 else narrow}, {symbol};")
        return f"[{wide if bits == 64 else narrow}]"


def _vector(prefix: str, count: int) -> str:
    return "{" + ", ".join(f"{prefix}{i}" for i in range(count)) + "}"


@singledispatch
def written_form(instr: Instruction, w: _Writer) -> tuple[str, list[tuple[str, str]], list[str]]:
    """How an instruction type is written: (opcode, qualifiers as (slot, token) in the ISA syntax
    order, operands written by `w`). One registration per instruction type."""
    raise TypeError(f"no PTX rendering for {type(instr).__name__}")


@written_form.register
def _(i: Tcgen05Mma, w: _Writer):
    if i.ws and i.scale_input_d is not None:
        raise ValueError("a .ws tcgen05.mma with scale-input-d has no PTX text: on .ws the immediate after "
                         "enable-input-d is the zero-column mask (PTX ISA 9.7.16.10.9.3) [mma.scale-input-d.ws]")
    q = [("ws", "ws")] if i.ws else []
    q += [("sp", "sp")] if i.sparse else []
    q += [("cta_group", f"cta_group::{i.cta_group}"), ("kind", f"kind::{i.kind}")]
    q += [("block_scale", "block_scale")] if i.block_scale else []
    q += [("scale_vec", i.scale_vec)] if i.scale_vec else []
    q += [("ashift", "ashift")] if i.ashift else []
    q += [("collector", f"collector::{i.collector}")] if i.collector else []
    ops = [w.tmem("d_tmem", "%r_d", i.d_tmem),
           w.tmem("a_tmem", "%r_a", i.a_tmem) if i.a_tmem is not None else w.value("a_desc", "%rd_adesc", "b64", i.a_desc),
           w.value("b_desc", "%rd_bdesc", "b64", i.b_desc)]
    ops += [w.tmem("sp_meta_tmem", "%r_meta", i.sp_meta_tmem)] if i.sparse else []
    ops += [w.value("idesc", "%r_idesc", "b32", i.idesc)]
    if i.block_scale:
        ops += [w.tmem("scale_a_tmem", "%r_sfa", i.scale_a_tmem), w.tmem("scale_b_tmem", "%r_sfb", i.scale_b_tmem)]
    if i.disable_output_lane is not None:
        words = [w.number(word) if k in w.spelling.lanes_immediate else w.value("", f"%r_dol{k}", "b32", word)
                 for k, word in enumerate(i.disable_output_lane)]
        ops += ["{" + ", ".join(words) + "}"]
    ops += [w.predicate("enable_input_d", "%p_en", i.enable_input_d)]
    ops += [w.number(i.scale_input_d)] if i.scale_input_d is not None else []
    if i.zero_column_mask is not None:
        ops += [w.value("zero_column_mask", "%rd_zc", "b64", i.zero_column_mask)]
    return "tcgen05.mma", q, ops


@written_form.register
def _(i: Tcgen05Alloc, w: _Writer):
    q = [("cta_group", f"cta_group::{i.cta_group}"), ("sync", "sync"), ("aligned", "aligned")]
    q += [("state_space", i.state_space)] if i.state_space else []
    columns = w.value("", "%r_ncols", "b32", i.columns) if i.columns_register else w.number(i.columns)
    return "tcgen05.alloc", q + [("type", "b32")], [w.shared_address("tcgen05.alloc", i.state_space, i.address_bits), columns]


@written_form.register
def _(i: Tcgen05Dealloc, w: _Writer):
    q = [("cta_group", f"cta_group::{i.cta_group}"), ("sync", "sync"), ("aligned", "aligned"), ("type", "b32")]
    columns = w.value("", "%r_ncols", "b32", i.columns) if i.columns_register else w.number(i.columns)
    return "tcgen05.dealloc", q, [w.value("taddr", "%r_t", "b32", i.taddr), columns]


@written_form.register
def _(i: Tcgen05RelinquishAllocPermit, w: _Writer):
    return "tcgen05.relinquish_alloc_permit", [("cta_group", f"cta_group::{i.cta_group}"), ("sync", "sync"), ("aligned", "aligned")], []


def _ldst_registers(shape: str, num: int) -> int:
    s = LDST_SHAPES.get(shape)
    return max(1, min(MAX_REGISTERS_PER_LDST, (s.regs_per_num if s else 1) * num))


@written_form.register
def _(i: Tcgen05Ld, w: _Writer):
    q = [("red", "red")] if i.red_op is not None else []
    q += [("sync", "sync"), ("aligned", "aligned"), ("shape", i.shape), ("num", f"x{i.num}")]
    q += [("pack", "pack::16b")] if i.pack else []
    if i.red_op is not None:
        q += [("red_op", i.red_op)] + ([("abs", "abs")] if i.red_abs else []) + ([("nan", "NaN")] if i.red_nan else [])
    q += [("type", i.red_type if i.red_op is not None else "b32")]
    ops = [_vector("%v", _ldst_registers(i.shape, i.num))] + (["%r_red"] if i.red_op is not None else [])
    ops += [w.tmem("taddr", "%r_t", i.taddr)] + ([w.number(i.split_offset)] if i.split_offset is not None else [])
    return "tcgen05.ld", q, ops


@written_form.register
def _(i: Tcgen05St, w: _Writer):
    q = [("sync", "sync"), ("aligned", "aligned"), ("shape", i.shape), ("num", f"x{i.num}")]
    q += [("unpack", "unpack::16b")] if i.unpack else []
    ops = [w.tmem("taddr", "%r_t", i.taddr)] + ([w.number(i.split_offset)] if i.split_offset is not None else [])
    return "tcgen05.st", q + [("type", "b32")], ops + [_vector("%v", _ldst_registers(i.shape, i.num))]


@written_form.register
def _(i: Tcgen05Wait, w: _Writer):
    return f"tcgen05.wait::{i.what}", [("sync", "sync"), ("aligned", "aligned")], []


@written_form.register
def _(i: Tcgen05Fence, w: _Writer):
    return f"tcgen05.fence::{i.what}", [], []


@written_form.register
def _(i: Tcgen05Cp, w: _Writer):
    q = [("cta_group", f"cta_group::{i.cta_group}"), ("shape", i.shape)]
    q += [("multicast", i.multicast)] if i.multicast else []
    q += [("fmt", CP_DST_FMT), ("fmt", i.src_fmt)] if i.src_fmt else []
    return "tcgen05.cp", q, [w.tmem("taddr", "%r_t", i.taddr), w.value("s_desc", "%rd_sdesc", "b64", i.s_desc)]


@written_form.register
def _(i: Tcgen05Shift, w: _Writer):
    return "tcgen05.shift", [("cta_group", f"cta_group::{i.cta_group}"), ("down", "down")], [w.tmem("taddr", "%r_t", i.taddr)]


@written_form.register
def _(i: Tcgen05Commit, w: _Writer):
    q = [("cta_group", f"cta_group::{i.cta_group}"), ("completion", "mbarrier::arrive::one")]
    q += [("state_space", i.state_space)] if i.state_space else []
    q += [("multicast", "multicast::cluster")] if i.multicast else []
    ops = [w.shared_address("tcgen05.commit", i.state_space, i.address_bits)]
    ops += [w.value("cta_mask", "%h_mask", "b16", i.cta_mask)] if i.multicast else []
    return "tcgen05.commit", q + [("type", "b64")], ops


def wgmma_d_count(i: WgmmaMma) -> int:
    """D fragment (PTX ISA 9.7.15.5.1): N/2 f32 or s32 registers, or N/4 b32 registers of packed f16 pairs."""
    return max(1, i.n // 4) if i.dtype == "f16" else max(1, i.n // 2)


WGMMA_A_REGISTERS = 4  # A in registers (9.7.15.5.1): a 64 x K fragment is four 32-bit registers a thread


def wgmma_d_registers(i: WgmmaMma) -> str:
    if i.dtype == "f16":
        return _vector("%rh", wgmma_d_count(i))
    return _vector("%sc" if i.dtype == "s32" else "%fc", wgmma_d_count(i))


@written_form.register
def _(i: WgmmaMma, w: _Writer):
    q = [("sp", "sp")] if i.sparse else []
    q += [("sync", "sync"), ("aligned", "aligned"), ("shape", f"m64n{i.n}k{i.k}")]
    q += [("satfinite", "satfinite")] if i.satfinite else []
    q += [("type", i.dtype), ("type", i.atype), ("type", i.btype)]
    a = _vector("%ra", WGMMA_A_REGISTERS) if i.a_in_registers else w.value("a_desc", "%rd_adesc", "b64", i.a_desc)
    ops = [wgmma_d_registers(i), a, w.value("b_desc", "%rd_bdesc", "b64", i.b_desc)]
    ops += [w.metadata("%r_e"), w.number(i.sparse_selector)] if i.sparse else []
    ops += [w.predicate("scale_d", "%p_en", i.scale_d)]
    if i.atype not in ("s8", "u8"):
        ops += [w.number(i.imm_scale_a), w.number(i.imm_scale_b)]
    if i.imm_trans_a is not None and not i.a_in_registers:
        ops += [w.number(i.imm_trans_a)]
    if i.imm_trans_b is not None:
        ops += [w.number(i.imm_trans_b)]
    return "wgmma.mma_async", q, ops


def mma_sp_fragment_registers(i: MmaSp) -> tuple[int, int, int]:
    """(A, B, C/D) registers per thread: A and B take 2 at the family's smaller K and 4 at the
    larger; C/D take 2 b32 for f16 (packed pairs), else 4."""
    fam = MMA_SP_SHAPES.get(mma_sp_family(i.atype) or "")
    ab = 2 if fam and i.k == min(fam.ks) and len(fam.ks) > 1 else 4
    return ab, ab, 2 if i.ctype == "f16" else 4


@written_form.register
def _(i: MmaSp, w: _Writer):
    q = [("sp", "sp::ordered_metadata" if i.ordered_metadata else "sp"), ("sync", "sync"), ("aligned", "aligned"),
         ("shape", f"m16n8k{i.k}"), ("layout", "row"), ("layout", "col")]
    q += [("kind", f"kind::{i.kind}")] if i.kind else []
    q += [("block_scale", "block_scale")] if i.block_scale else []
    q += [("scale_vec", i.scale_vec)] if i.scale_vec else []
    q += [("satfinite", "satfinite")] if i.satfinite else []
    q += [("type", t) for t in (i.dtype, i.atype, i.btype, i.ctype)]
    q += [("type", i.stype)] if i.stype else []
    a, b, cd = mma_sp_fragment_registers(i)
    acc = {"f16": "%rh", "s32": "%sc"}.get(i.ctype, "%fc")
    ops = [_vector({"f16": "%rh", "s32": "%sc"}.get(i.dtype, "%fc"), cd), _vector("%ra", a)]
    w.value("", "%r_e", "b32", i.metadata)
    ops += [_vector("%rb", b), _vector(acc, cd), w.metadata("%r_e"), w.number(i.sparse_selector)]
    if i.block_scale:
        ops += ["%r_sfadata", "{0, 0}", "%r_sfbdata", "{0, 0}"]
    return "mma", q, ops


def syntax_key(opcode: str) -> str:
    """The QUALIFIERS entry of an opcode as written (tcgen05.wait::ld -> tcgen05.wait)."""
    return opcode.split("::")[0]


def _head(opcode: str, qualifiers: list[tuple[str, str]], spelling: Spelling) -> str:
    tokens = [token for _, token in qualifiers]
    order = list(spelling.order) if spelling.order is not None else tokens
    if sorted(order) != sorted(tokens):
        raise ValueError(f"spelling order {order} is not an order of {tokens}")
    return ".".join([opcode, *order])


def head(instr: Instruction, spelling: Spelling = CANONICAL) -> str:
    """The opcode and qualifiers of `instr` in the spelling's order (for a caller that writes
    the operands itself)."""
    opcode, qualifiers = qualifier_tokens(instr)
    return _head(opcode, qualifiers, spelling)


def spell(instr: Instruction, spelling: Spelling = CANONICAL) -> Rendered:
    """The instruction in `spelling`: the moves of its operand values, its guard's setup, its line."""
    w = _Writer(spelling)
    opcode, qualifiers, operands = written_form(instr, w)
    text = _head(opcode, qualifiers, spelling) + (f" {', '.join(operands)};" if operands else ";")
    if not spelling.guard:
        return Rendered(tuple(w.moves), (), text)
    setup = "setp.eq.u32 %p_true, 0, 0;" if spelling.guard == "@%p_true" else "setp.ne.u32 %p_false, 0, 0;"
    return Rendered(tuple(w.moves), (setup,), f"{spelling.guard} {text}")


def render(instr: Instruction, spelling: Spelling = CANONICAL) -> str:
    """The instruction line alone (its operands in the registers `operand_moves` loads)."""
    return spell(instr, spelling).line


def operand_moves(instr: Instruction, spelling: Spelling = CANONICAL) -> list[str]:
    """The lines that load the instruction's runtime operand values into its registers, and
    set its guard predicate."""
    rendered = spell(instr, spelling)
    return list(rendered.moves + rendered.setup)


def qualifier_tokens(instr: Instruction) -> tuple[str, list[tuple[str, str]]]:
    """(opcode as written, qualifiers as (slot, token) in the ISA syntax order)."""
    opcode, q, _ = written_form(instr, _Writer(CANONICAL))
    return opcode, q


def _present(instr: Instruction) -> dict[str, object]:
    """The operands of `instr` a spelling can write in more than one way (model field -> value)."""
    if isinstance(instr, Tcgen05Mma):
        out: dict[str, object] = {"idesc": instr.idesc, "b_desc": instr.b_desc, "d_tmem": instr.d_tmem,
                                  "enable_input_d": instr.enable_input_d}
        out.update({"a_desc": instr.a_desc} if instr.a_tmem is None else {"a_tmem": instr.a_tmem})
        out.update({"sp_meta_tmem": instr.sp_meta_tmem} if instr.sparse else {})
        out.update({"scale_a_tmem": 0, "scale_b_tmem": 0} if instr.block_scale else {})
        if instr.zero_column_mask is not None and instr.ws:  # an immediate mask only where it cannot be scale-input-d
            out["zero_column_mask"] = instr.zero_column_mask
        if instr.disable_output_lane is not None:
            out["disable_output_lane"] = instr.disable_output_lane
        return out
    if isinstance(instr, WgmmaMma):
        return {"b_desc": instr.b_desc, "scale_d": instr.scale_d, **({} if instr.a_in_registers else {"a_desc": instr.a_desc}),
                **({"metadata": True} if instr.sparse else {})}
    if isinstance(instr, MmaSp):
        return {"metadata": instr.metadata}
    if isinstance(instr, (Tcgen05Alloc, Tcgen05Commit)):
        out = {"address_symbol": True} if instr.state_space is not None and instr.address_bits == 64 else {}
        return out | ({"cta_mask": instr.cta_mask} if isinstance(instr, Tcgen05Commit) and instr.multicast else {})
    if isinstance(instr, Tcgen05Cp):
        return {"taddr": instr.taddr, "s_desc": instr.s_desc}
    taddr = getattr(instr, "taddr", None)
    return {} if taddr is None else {"taddr": taddr}


def draw_spelling(instr: Instruction, rng: random.Random, keep_registers: frozenset[str] = frozenset()) -> Spelling:
    """A spelling of `instr` ptxas accepts, drawn from `rng` (`keep_registers`: operands the
    caller needs in registers, by model field name, "address" for a shared-memory address)."""
    opcode, q = qualifier_tokens(instr)
    return spellings.draw_spelling(syntax_key(opcode), q, _present(instr), rng, keep_registers)
