"""Reading PTX text into the instruction model.

`read_ptx(text)` splits a module (or an inline-asm template) into statements (comments,
whitespace, blocks, labels and guards handled), follows register declarations and the values
that `mov` (and simple integer arithmetic on constants) put into registers, and reads every
tcgen05, wgmma and mma.sp instruction into a `Parsed`: the instruction value, the model fields
whose value is not a constant in the text (`unknown`), or why the text was not understood.

Accepted spellings are those of `tcgen05_conformance.core.ptx.spelling`: any qualifier order ptxas
accepts, registers or immediates wherever PTX allows either, `[reg+imm]` addresses, guards.
A register's value is known at an instruction when its last write before it, with no label in
between (a label may be reached from elsewhere), is a `mov` of a constant (or arithmetic on
known values): the sound, straight-line part of constant propagation.

Why one module of 900 lines: the statement splitter, the declarations, the constant propagation and
the per-family operand readers are one pass over one statement list, each reader using the
register state the others maintain; the spellings themselves are data in `spelling.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

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
from tcgen05_conformance.core.isa.hopper import WGMMA_TYPES, wgmma_type_family
from tcgen05_conformance.core.ptx.render import WGMMA_A_REGISTERS, mma_sp_fragment_registers, wgmma_d_count
from tcgen05_conformance.core.ptx.spelling import QUALIFIERS, QualifierSyntax

MAX_LITERAL = 80  # characters of an integer literal: 64 binary digits and a prefix, sign and suffix
ADDRESS_BITS = 64  # `.address_size 64`: a symbol used as an address is 64 bits wide
TYPE_BITS = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
             "f16x2": 32, "bf16x2": 32, "b32": 32, "u32": 32, "s32": 32, "f32": 32,
             "b64": 64, "u64": 64, "s64": 64, "f64": 64}


# --- operands -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reg:
    """A register (or, unknown to the declarations, a symbol) operand; `negated`: written !p."""

    name: str
    negated: bool = False


@dataclass(frozen=True)
class Imm:
    """An immediate; `value` None: an immediate whose value the text does not give (an inline-asm
    operand bound to a C++ constant expression)."""

    value: int | None


@dataclass(frozen=True)
class Addr:
    """[base+offset]: `base` a register or symbol name, None for an immediate address."""

    base: str | None
    offset: int


@dataclass(frozen=True)
class Vec:
    items: tuple[Reg | Imm, ...]


Operand = Reg | Imm | Addr | Vec
_NAME = r"%?[A-Za-z_$][\w$]*"
_INT = re.compile(r"([+-]?)\s*(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)U?")


def integer(text: str) -> int | None:
    """A PTX integer literal (hex, octal, binary or decimal, optional sign and U suffix), or None."""
    m = _INT.fullmatch(text.strip()) if len(text) <= MAX_LITERAL else None
    if not m:
        return None
    digits = m.group(2)
    if digits[:2] in ("0x", "0X"):
        value = int(digits, 16)
    elif digits[:2] in ("0b", "0B"):
        value = int(digits[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits, 8)
    else:
        value = int(digits)
    return -value if m.group(1) == "-" else value


MAX_SHOWN = 60  # characters of a text quoted in a message


def shown(text: str) -> str:
    """`text` as a message quotes it: at most MAX_SHOWN characters."""
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


class NotUnderstood(ValueError):
    """Text this parser cannot read into the model: the message says why, on one line."""


def split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside brackets and braces."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    tail = "".join(current).strip()
    return parts + [tail] if tail or parts else []


def operand(text: str, unknown_immediates: frozenset[str] = frozenset()) -> Operand:
    """One operand as written."""
    t = text.strip()
    if t in unknown_immediates:
        return Imm(None)
    if t.startswith("{") and t.endswith("}"):
        items = [operand(x, unknown_immediates) for x in split_top(t[1:-1])]
        if any(not isinstance(x, (Reg, Imm)) for x in items):
            raise NotUnderstood(f"vector {shown(t)}: its elements are registers or immediates")
        return Vec(tuple(items))
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].replace(" ", "").replace("\t", "")
        m = re.fullmatch(rf"({_NAME})(?:\+(.+))?", inner)
        if m:
            offset = integer(m.group(2)) if m.group(2) else 0
            if offset is None:
                raise NotUnderstood(f"address {shown(t)}: the offset is not an integer")
            return Addr(m.group(1), offset)
        if integer(inner) is not None:
            return Addr(None, integer(inner))
        raise NotUnderstood(f"address {shown(t)}: neither [reg], [reg+imm] nor [imm]")
    value = integer(t)
    if value is not None:
        return Imm(value)
    m = re.fullmatch(rf"(!?)\s*({_NAME})", t)
    if m:
        return Reg(m.group(2), bool(m.group(1)))
    raise NotUnderstood(f"operand {shown(t)!r} is not understood")


# --- statements -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """A statement: its first character's offset and line (1-based) in the text, and its text
    with comments removed and whitespace runs collapsed. `kind`: "instruction", "directive",
    "label", "open" or "close" (a block's braces)."""

    offset: int
    line: int
    text: str
    kind: str


_PIECE = re.compile(r'\s*\.(?:version|target|address_size)\b[^\n;/]*|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?|"(?:[^"\\\n]|\\.)*"?|[;{}:]|[^;{}:/"]+|/')
_LABEL = re.compile(r"[A-Za-z_$][\w$]*")
_LABEL_PIECES = 3  # a label is one name, with at most whitespace and a comment around it


def statements(text: str) -> list[Statement]:
    """The statements of a PTX text, comments removed, in one linear pass over its pieces
    (comments, strings, the separators ; { } : and the runs between them)."""
    out: list[Statement] = []
    pieces: list[str] = []  # the pending statement's pieces, comments as one space
    first = ""  # its first character that is not whitespace
    has_equals = False
    start = line = 1
    start_offset = 0

    def flush(kind: str | None = None) -> None:
        nonlocal pieces, first, has_equals
        body = " ".join("".join(pieces).split())
        if body:
            k = kind or ("directive" if body.startswith(".") else "instruction")
            out.append(Statement(start_offset, start, body, k))
        pieces, first, has_equals = [], "", False

    for m in _PIECE.finditer(text):
        piece, i = m.group(), m.start()
        if piece.startswith("//") or piece.startswith("/*"):
            pieces.append(" ")
            line += piece.count("\n")
            continue
        if not first and re.match(r"\s*\.(?:version|target|address_size)\b", piece):
            # module directives end at their line, without a `;` (PTX ISA 11.1)
            out.append(Statement(i + len(piece) - len(piece.lstrip()), line + piece.count("\n", 0, len(piece) - len(piece.lstrip())),
                                 " ".join(piece.split()), "directive"))
        elif piece == ";":
            if not first:  # an empty statement: ptxas's "syntax error" near ';'
                out.append(Statement(i, line, ";", "instruction"))
            flush()
        elif piece == "{" and (not first or (first == "." and not has_equals)):
            flush()
            out.append(Statement(i, line, "{", "open"))
        elif piece == "}" and not first:
            out.append(Statement(i, line, "}", "close"))
        elif (piece == ":" and first and len(pieces) <= _LABEL_PIECES
              and _LABEL.fullmatch("".join(pieces).strip())
              and not text.startswith("::", i) and (i == 0 or text[i - 1] != ":")):
            out.append(Statement(start_offset, start, "".join(pieces).strip(), "label"))
            pieces, first, has_equals = [], "", False
        else:
            if not first and piece.strip():
                first = piece.strip()[0]
                start = line + piece[:len(piece) - len(piece.lstrip())].count("\n")
                start_offset = i + len(piece) - len(piece.lstrip())
            pieces.append(piece)
            has_equals = has_equals or "=" in piece
        line += piece.count("\n")
    flush()
    return out


# --- registers and their known values ---------------------------------------------------------


@dataclass
class Registers:
    """Declared registers (name -> PTX type) in nested blocks, the symbols the text declares
    (`.shared` ...), and the values known to be in registers. A range `%r<N>` is kept as its
    prefix and N (`ranges`), never expanded: N may be huge."""

    scopes: list[dict[str, str]] = field(default_factory=lambda: [{}])
    values: dict[str, int] = field(default_factory=dict)
    unknown_immediates: frozenset[str] = frozenset()
    ranges: list[dict[str, tuple[int, str]]] = field(default_factory=lambda: [{}])
    symbols: set[str] = field(default_factory=set)

    def type_of(self, name: str) -> str | None:
        """The declared type of a register (b32, pred ...), None if no declaration names it."""
        digits = len(name) - len(name.rstrip("0123456789"))
        # a range %r<N> names %r0 ... %r(N-1): each split of the trailing digits into prefix and index
        splits = [(name[:k], name[k:]) for k in range(len(name) - digits, len(name))
                  if k > 0 and (name[k] != "0" or k == len(name) - 1)]
        for scope, ranges in zip(reversed(self.scopes), reversed(self.ranges)):
            if name in scope:
                return scope[name]
            for prefix, index in splits:
                if prefix in ranges and int(index) < ranges[prefix][0]:
                    return ranges[prefix][1]
        return None

    def width(self, name: str) -> int | None:
        typ = self.type_of(name)
        return None if typ is None else TYPE_BITS.get(typ, 0)

    def declare(self, directive: str) -> None:
        """A `.reg .TYPE a, b<4>;` declaration, or a variable's (`.shared .b64 bar;`)."""
        variable = re.match(r"(?:\.(?:extern|visible|weak)\s+)*\.(?:shared|global|const|local|param)\b[^;=]*?"
                            rf"({_NAME})\s*(?:\[[^\]]*\]\s*)*(?:=|$)", directive)
        if variable:
            self.symbols.add(variable.group(1))
            return
        m = re.fullmatch(r"\.reg\s+(?:\.v\d\s+)?\.(\w+)\s+(.*)", directive)
        if not m:
            return
        typ = m.group(1)
        for item in split_top(m.group(2)):
            ranged = re.fullmatch(rf"({_NAME})\s*<\s*(\d{{1,12}})\s*>", item)
            if ranged:
                prefix = ranged.group(1)
                self.ranges[-1][prefix] = (int(ranged.group(2)), typ)
                for name in [n for n in self.values if n.startswith(prefix)]:
                    self.values.pop(name)
            else:
                self.scopes[-1][item.strip()] = typ
                self.values.pop(item.strip(), None)

    def open(self) -> None:
        self.scopes.append({})
        self.ranges.append({})

    def close(self) -> None:
        if len(self.scopes) > 1:
            for name in self.scopes.pop():
                self.values.pop(name, None)
            for prefix in self.ranges.pop():
                for name in [n for n in self.values if n.startswith(prefix)]:
                    self.values.pop(name)

    def enter_function(self) -> None:
        """A new .entry / .func: the module's declarations stay, the values known are forgotten."""
        self.scopes, self.ranges, self.values = [dict(self.scopes[0])], [dict(self.ranges[0])], {}

    def value(self, op: Operand) -> int | None:
        if isinstance(op, Imm):
            return op.value
        if isinstance(op, Reg) and not op.negated:
            return self.values.get(op.name)
        return None

    def truth(self, op: Operand) -> bool | None:
        """A predicate operand's value: an immediate, or a register (negated or not) of known value."""
        if isinstance(op, Imm):
            return None if op.value is None else op.value != 0
        if isinstance(op, Reg) and op.name in self.values:
            return (self.values[op.name] != 0) != op.negated
        return None


_MASK = {1: 1, 8: 0xFF, 16: 0xFFFF, 32: 0xFFFF_FFFF, 64: 0xFFFF_FFFF_FFFF_FFFF}
_ARITHMETIC = {
    "add": lambda a, b, bits: a + b, "sub": lambda a, b, bits: a - b, "mul": lambda a, b, bits: a * b,
    "and": lambda a, b, bits: a & b, "or": lambda a, b, bits: a | b, "xor": lambda a, b, bits: a ^ b,
    "shl": lambda a, b, bits: a << b if b < bits else 0, "shr": lambda a, b, bits: a >> b if b < bits else 0,
}
_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
            "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
            "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}
# Opcodes that write no register through their first operand: stores, barriers, branches, fences,
# and the tensor-core instructions (tcgen05.ld, wgmma.mma_async and mma.sp write their first
# vector, which `clobber_destination` forgets).
_NO_DESTINATION = re.compile(r"(st|red|bar|barrier|bra|ret|exit|fence|membar|trap|prefetch|cp|tcgen05|wgmma|mbarrier\.init)\b")


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def forget_written(first_operand: str, regs: Registers) -> list[str]:
    """Forget the values of the registers an instruction's first operand names (it writes them)."""
    names = re.findall(_NAME, first_operand.split("[")[0])
    for name in names:
        regs.values.pop(name, None)
    return names


def _track(opcode: str, operand_text: str, regs: Registers, guard_true: bool) -> None:
    """Update the known register values after an instruction other than a tensor-core one:
    its destination's value is forgotten, or known when it moves, compares or combines
    (add, sub, mul, and, or, xor, shl, shr of unsigned or bit types) known values."""
    texts = split_top(operand_text)
    if not texts or _NO_DESTINATION.match(opcode):
        return
    dests = forget_written(texts[0], regs)
    if not guard_true or len(dests) != 1 or len(texts) < 2 or "|" in texts[0]:
        return
    try:
        sources = [regs.value(operand(t, regs.unknown_immediates)) for t in texts[1:]]
    except NotUnderstood:
        return
    parts = opcode.split(".")
    bits = next((TYPE_BITS[p] for p in reversed(parts) if p in TYPE_BITS), 64)
    dest = dests[0]
    if None in sources:
        return
    if parts[0] == "setp" and len(sources) == 2 and len(parts) == 3 and parts[1] in _COMPARE:
        a, b = (v & _MASK[bits] for v in sources)
        if parts[2].startswith("s"):
            a, b = _signed(a, bits), _signed(b, bits)
        regs.values[dest] = int(_COMPARE[parts[1]](a, b))
    elif parts[0] == "mov" and len(sources) == 1:
        regs.values[dest] = sources[0] & _MASK[bits]
    elif (parts[0] in _ARITHMETIC and len(sources) == 2 and parts[-1][0] in "bu"
          and not set(parts[1:-1]) & {"wide", "hi", "sat", "cc"}):
        a, b = (v & _MASK[bits] for v in sources)
        regs.values[dest] = _ARITHMETIC[parts[0]](a, b, bits) & _MASK[bits]


# --- tensor-core instructions ------------------------------------------------------------------


@dataclass(frozen=True)
class Parsed:
    """One tensor-core instruction read from text: the instruction (None when not understood,
    with `problem` saying why), the model fields whose values the text does not give as
    constants (they hold placeholders), and its guard predicate."""

    offset: int
    line: int
    text: str
    instruction: Instruction | None
    unknown: frozenset[str] = frozenset()
    problem: str | None = None
    guard: str | None = None
    guard_value: bool | None = None
    outside_model: bool = False  # a tensor-core instruction the model does not describe (mma.sync, wgmma.fence ...)


# Register types an operand of each kind takes (PTX ISA 5.2.2 / 6.4.1: integer and bit-size types
# of the operand's width; ptxas: "Use a 32-bit integer or bit register only" for addresses).
INTEGER_KINDS = frozenset("bus")


def fits(value: int, bits: int) -> bool:
    """Whether an immediate is within what a `bits`-wide operand holds, signed or unsigned."""
    return -(1 << (bits - 1)) <= value < (1 << bits)


def _as_signed(value: int) -> int:
    """An immediate as ptxas reads it: a 64-bit value, 0xffffffffffffffff being -1 (ptxas: "unexpected
    value '-1'" for imm-trans 0xffffffffffffffff, while it reads 0xffffffff as 4294967295)."""
    return value - (1 << 64) if (1 << 63) <= value < (1 << 64) else value


class _Reader:
    """Reads one instruction's operands against the declarations and the known register values.
    An operand lint cannot vouch for (a name nothing declares, a register of another width or
    type, an immediate out of range) raises NotUnderstood: lint then says `unparsed`, never
    `legal`, where ptxas may reject."""

    def __init__(self, regs: Registers):
        self.regs = regs
        self.unknown: set[str] = set()

    def register(self, reg: Reg, name: str, bits: int, kinds: frozenset[str] = INTEGER_KINDS) -> None:
        """A register operand: declared, of `bits` width and one of the type kinds (b, u, s, f, pred)."""
        typ = self.regs.type_of(reg.name)
        if typ is None:
            what = "a variable, not a register" if reg.name in self.regs.symbols else "declared by no .reg here"
            raise NotUnderstood(f"{name}: {shown(reg.name)} is {what}")
        if typ == "pred":
            if "pred" not in kinds:
                raise NotUnderstood(f"{name}: {reg.name} is a predicate, not a {bits}-bit register")
            return
        if TYPE_BITS.get(typ) != bits or typ[0] not in kinds:
            raise NotUnderstood(f"{name}: {reg.name} is a .{typ} register; lint vouches only for "
                                f"{bits}-bit .{'/.'.join(sorted(k for k in kinds if k != 'pred'))} ones here")

    def value(self, op: Operand, name: str, bits: int) -> int:
        if isinstance(op, (Addr, Vec)):
            raise NotUnderstood(f"{name}: {'an address' if isinstance(op, Addr) else 'a vector'} where a register or immediate belongs")
        if isinstance(op, Reg):
            if op.negated:
                raise NotUnderstood(f"{name}: !{op.name} is a negated predicate")
            self.register(op, name, bits)
        elif op.value is not None and not 0 <= op.value < 1 << bits:
            # ptxas: ctaMask -1 is "out of range, expected to be in range [0..65535]"
            raise NotUnderstood(f"{name}: {op.value:#x} is not a {bits}-bit unsigned value")
        v = self.regs.value(op)
        if v is None:
            self.unknown.add(name)
            return 0
        return v & _MASK[bits]

    def immediate(self, op: Operand, name: str, bits: int = 32) -> int:
        if not isinstance(op, Imm):
            raise NotUnderstood(f"{name} must be an immediate")
        if op.value is None:
            self.unknown.add(name)
            return 0
        value = _as_signed(op.value)
        if not fits(value, bits):
            raise NotUnderstood(f"{name}: {op.value:#x} does not fit {bits} bits")
        return value

    def tmem(self, op: Operand, name: str) -> int:
        if not isinstance(op, Addr):
            raise NotUnderstood(f"{name}: a Tensor Memory address is written [reg] or [reg+imm]")
        if op.base is None:
            raise NotUnderstood(f"{name}: an immediate Tensor Memory address [{op.offset}] (ptxas refuses it, and "
                                "crashes on it in tcgen05.cp / tcgen05.shift)")
        self.register(Reg(op.base), name, 32)
        if not fits(op.offset, 32):
            raise NotUnderstood(f"{name}: the offset {op.offset:#x} does not fit 32 bits")
        v = self.regs.values.get(op.base)
        if v is None:
            self.unknown.add(name)
            return 0
        return (v + op.offset) & _MASK[32]

    def predicate(self, op: Operand, name: str) -> bool:
        if not isinstance(op, (Reg, Imm)):
            raise NotUnderstood(f"{name}: a predicate, !predicate or immediate")
        if isinstance(op, Reg):
            self.register(op, name, 1, frozenset({"pred"}))
            if self.regs.type_of(op.name) != "pred":
                raise NotUnderstood(f"{name}: {op.name} is not a predicate")
        elif op.value is not None and op.value not in (0, 1):
            raise NotUnderstood(f"{name}: the immediate {op.value} (ptxas takes 0 or 1)")
        v = self.regs.truth(op)
        if v is None:
            self.unknown.add(name)
            return True
        return v

    def vector(self, op: Operand, name: str, immediates: bool = False) -> Vec:
        """A vector of declared 32-bit registers (with `immediates`, immediates may stand among them)."""
        if not isinstance(op, Vec):
            raise NotUnderstood(f"{name} is a vector {{...}}")
        for item in op.items:
            if isinstance(item, Reg):
                if item.negated:
                    raise NotUnderstood(f"{name}: !{item.name} in a vector")
                self.register(item, name, 32, INTEGER_KINDS | {"f"})
            elif not immediates:
                raise NotUnderstood(f"{name}: an immediate among its registers")
        return op

    def address_bits(self, op: Operand, name: str) -> int:
        if not isinstance(op, Addr) or op.base is None:
            raise NotUnderstood(f"{name}: a shared-memory address [symbol], [reg] or [reg+imm]")
        if not fits(op.offset, 32):
            raise NotUnderstood(f"{name}: the offset {op.offset:#x} does not fit 32 bits")
        if op.base in self.regs.symbols and self.regs.type_of(op.base) is None:
            return ADDRESS_BITS
        bits = self.regs.width(op.base)
        self.register(Reg(op.base), name, bits if bits in (32, 64) else 32)
        return bits


def _qualifiers(syntax: QualifierSyntax, tokens: list[str]) -> dict[str, str | list[str]]:
    """Each slot's token (a positional class: its tokens, in order) for the written order."""
    slots: dict[str, str | list[str]] = {}
    for k, token in enumerate(tokens):
        slot = syntax.slot_of(token)
        if slot is None:
            raise NotUnderstood(f".{token} is not a qualifier of {syntax.opcode}")
        if slot in syntax.leading and k != syntax.leading.index(slot):
            raise NotUnderstood(f".{token} stands after other qualifiers: ptxas accepts it only right after "
                                f"{syntax.opcode} (reports/ptx-spellings/spellings.json)")
        if slot in syntax.positional:
            slots.setdefault(slot, []).append(token)
        elif slot in slots:
            raise NotUnderstood(f".{slots[slot]} and .{token} are both {slot} qualifiers")
        else:
            slots[slot] = token
    for slot, token in syntax.required.items():
        if slot not in slots:
            raise NotUnderstood(f"{syntax.opcode} without .{token or slot} (ptxas requires it)")
        if token is not None and slots[slot] != token:
            raise NotUnderstood(f".{slots[slot]}: {syntax.opcode} takes .{token}")
    for cls, names in syntax.positional.items():
        if len(slots.get(cls, ())) > len(names):
            raise NotUnderstood(f"{len(slots[cls])} {cls} qualifiers ({' '.join(slots[cls])}), at most {len(names)}")
        for name, token in zip(names, slots.pop(cls, [])):
            slots[name] = token
    return slots


def _after(token: str | None, prefix: str) -> str | None:
    return None if token is None else token.split("::", 1)[1] if prefix and token.startswith(prefix) else token


def _cta_group(q: dict) -> int:
    token = q.get("cta_group")
    if token is None:
        raise NotUnderstood("no .cta_group qualifier")
    return int(token.split("::")[1])


def _count(ops: list[Operand], lo: int, hi: int, what: str) -> None:
    if not lo <= len(ops) <= hi:
        raise NotUnderstood(f"{what} takes {lo if lo == hi else f'{lo} to {hi}'} operands, not {len(ops)}")


def _mma(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Mma:
    _count(ops, 5, 16, "tcgen05.mma")
    if "kind" not in q:
        raise NotUnderstood("no .kind qualifier")
    ws, sparse = "ws" in q, "sp" in q
    fields: dict = dict(kind=_after(q["kind"], "kind::"), cta_group=_cta_group(q), ws=ws, sparse=sparse,
                        block_scale="block_scale" in q, scale_vec=q.get("scale_vec"), ashift="ashift" in q,
                        collector=_after(q.get("collector"), "collector::"))
    fields["d_tmem"] = r.tmem(ops[0], "d_tmem")
    if isinstance(ops[1], Addr):
        fields["a_tmem"] = r.tmem(ops[1], "a_tmem")
    else:
        fields["a_desc"] = r.value(ops[1], "a_desc", 64)
    fields["b_desc"] = r.value(ops[2], "b_desc", 64)
    k = 3
    if sparse:
        fields["sp_meta_tmem"] = r.tmem(ops[3], "sp_meta_tmem")
        k = 4
    fields["idesc"] = r.value(ops[k], "idesc", 32)
    rest = ops[k + 1:]
    if rest and isinstance(rest[0], Addr):
        if len(rest) < 2 or not isinstance(rest[1], Addr):
            raise NotUnderstood("the scale factors of .block_scale are two addresses [scale-A-tmem], [scale-B-tmem]")
        fields["scale_a_tmem"], fields["scale_b_tmem"] = r.tmem(rest[0], "scale_a_tmem"), r.tmem(rest[1], "scale_b_tmem")
        rest = rest[2:]
    if rest and isinstance(rest[0], Vec):
        if not any(isinstance(x, Reg) for x in rest[0].items):
            raise NotUnderstood("disable-output-lane holds no register (ptxas refuses a vector of immediates)")
        fields["disable_output_lane"] = tuple(r.value(x, "disable_output_lane", 32) for x in rest[0].items)
        rest = rest[1:]
    if not rest:
        raise NotUnderstood("no enable-input-d operand")
    fields["enable_input_d"] = r.predicate(rest[0], "enable_input_d")
    trailing = rest[1:]
    if len(trailing) > 2:
        raise NotUnderstood(f"{len(trailing)} operands after enable-input-d (at most scale-input-d and a zero-column mask)")
    if len(trailing) == 2:
        fields["scale_input_d"] = r.immediate(trailing[0], "scale_input_d")
        fields["zero_column_mask"] = r.value(trailing[1], "zero_column_mask", 64)
    elif trailing:
        # 9.7.16.10.9.3: on .ws the operand after enable-input-d is zero-column-mask-desc (ptxas
        # accepts a 64-bit immediate there); elsewhere an immediate is scale-input-d.
        if isinstance(trailing[0], Imm) and not ws:
            fields["scale_input_d"] = r.immediate(trailing[0], "scale_input_d")
        else:
            fields["zero_column_mask"] = r.value(trailing[0], "zero_column_mask", 64)
    return Tcgen05Mma(**fields)


def _columns(op: Operand, r: _Reader) -> tuple[int, bool]:
    if isinstance(op, Reg):
        return r.value(op, "columns", 32), True
    return r.immediate(op, "columns"), False


def _alloc(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Alloc:
    _count(ops, 2, 2, "tcgen05.alloc")
    columns, in_register = _columns(ops[1], r)
    return Tcgen05Alloc(cta_group=_cta_group(q), columns=columns, state_space=q.get("state_space"),
                        address_bits=r.address_bits(ops[0], "dst"), columns_register=in_register)


def _dealloc(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Dealloc:
    _count(ops, 2, 2, "tcgen05.dealloc")
    columns, in_register = _columns(ops[1], r)
    return Tcgen05Dealloc(cta_group=_cta_group(q), columns=columns, taddr=r.value(ops[0], "taddr", 32),
                          columns_register=in_register)


def _relinquish(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05RelinquishAllocPermit:
    _count(ops, 0, 0, "tcgen05.relinquish_alloc_permit")
    return Tcgen05RelinquishAllocPermit(cta_group=_cta_group(q))


def _shape_num(q: dict) -> tuple[str, int]:
    if "shape" not in q or "num" not in q:
        raise NotUnderstood("a shape (.32x32b ...) and a .num (.x1 ...) qualifier are required")
    return q["shape"], int(q["num"][1:])


def _registers(vec: Vec, shape: str, num: int, what: str) -> None:
    """The vector holds the registers Table 47 / 48 give the shape and .num (a .num needing more
    than a vector can hold breaks ldst.num, which the legality rules report)."""
    s = LDST_SHAPES.get(shape)
    needed = s.regs_per_num * num if s else 0
    if s is not None and needed <= MAX_REGISTERS_PER_LDST and len(vec.items) != needed:
        raise NotUnderstood(f"{what} has {len(vec.items)} registers, .{shape}.x{num} needs {needed}")


def _ld(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Ld:
    shape, num = _shape_num(q)
    red = "red" in q
    _count(ops, 2 + red, 3 + red, "tcgen05.ld.red" if red else "tcgen05.ld")
    destination = r.vector(ops[0], "the destination")
    _registers(destination, shape, num, "the destination")
    if len({x.name for x in destination.items}) != len(destination.items):
        raise NotUnderstood("the destination names a register twice (ptxas fails on it: 'intrinsic PREAD offset mismatch')")
    if red:
        if not isinstance(ops[1], Reg):
            raise NotUnderstood("redval is a register")
        r.register(ops[1], "redval", 32, INTEGER_KINDS | {"f"})
        if ops[1].name in {x.name for x in destination.items}:
            raise NotUnderstood("redval is also a destination register (ptxas fails on it: 'intrinsic PREAD offset mismatch')")
    taddr = r.tmem(ops[1 + red], "taddr")
    split = r.immediate(ops[2 + red], "immHalfSplitoff") if len(ops) == 3 + red else None
    typ = q.get("type")
    if not red:
        if typ != "b32":
            raise NotUnderstood(f"tcgen05.ld takes .b32, not .{typ}")
        if "red_op" in q:
            raise NotUnderstood(f".{q['red_op']} is not a qualifier of tcgen05.ld (only of tcgen05.ld.red)")
        return Tcgen05Ld(shape, num, pack="pack" in q, taddr=taddr, split_offset=split)
    if "red_op" not in q or typ is None:
        raise NotUnderstood("tcgen05.ld.red needs a .redOp and a type qualifier")
    return Tcgen05Ld(shape, num, pack="pack" in q, red_op=q["red_op"], red_type=typ, red_abs="abs" in q,
                     red_nan="nan" in q, taddr=taddr, split_offset=split)


def _st(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05St:
    shape, num = _shape_num(q)
    _count(ops, 2, 3, "tcgen05.st")
    if q.get("type") != "b32":
        raise NotUnderstood(f"tcgen05.st takes .b32, not .{q.get('type')}")
    _registers(r.vector(ops[-1], "the source"), shape, num, "the source")
    split = r.immediate(ops[1], "immHalfSplitoff") if len(ops) == 3 else None
    return Tcgen05St(shape, num, unpack="unpack" in q, taddr=r.tmem(ops[0], "taddr"), split_offset=split)


def _cp(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Cp:
    _count(ops, 2, 2, "tcgen05.cp")
    if ("dst_fmt" in q) != ("src_fmt" in q) or q.get("dst_fmt", CP_DST_FMT) != CP_DST_FMT:
        raise NotUnderstood(f"decompression is written .{CP_DST_FMT}.src_fmt (9.7.16.9.2)")
    if "shape" not in q:
        raise NotUnderstood("no shape qualifier")
    return Tcgen05Cp(q["shape"], cta_group=_cta_group(q), multicast=q.get("multicast"), src_fmt=q.get("src_fmt"),
                     taddr=r.tmem(ops[0], "taddr"), s_desc=r.value(ops[1], "s_desc", 64))


def _shift(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Shift:
    _count(ops, 1, 1, "tcgen05.shift")
    if "down" not in q:
        raise NotUnderstood("tcgen05.shift needs .down")
    return Tcgen05Shift(cta_group=_cta_group(q), taddr=r.tmem(ops[0], "taddr"))


def _commit(q: dict, ops: list[Operand], r: _Reader) -> Tcgen05Commit:
    multicast = "multicast" in q
    _count(ops, 1 + multicast, 1 + multicast, "tcgen05.commit" + (".multicast::cluster" if multicast else ""))
    if q.get("completion") != "mbarrier::arrive::one" or q.get("type") != "b64":
        raise NotUnderstood("tcgen05.commit is written .mbarrier::arrive::one ... .b64 (9.7.16.12.1)")
    if multicast and q["multicast"] != "multicast::cluster":
        raise NotUnderstood(f".{q['multicast']}: the multicast qualifier is .multicast::cluster")
    return Tcgen05Commit(cta_group=_cta_group(q), multicast=multicast,
                         cta_mask=r.value(ops[1], "cta_mask", 16) if multicast else 1,
                         state_space=q.get("state_space"), address_bits=r.address_bits(ops[0], "mbar"))


def _mnk(q: dict, m: int) -> tuple[int, int]:
    shape = q.get("shape") or ""
    found = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    if not found or int(found.group(1)) != m:
        raise NotUnderstood(f"shape .{shape or '?'}: the M of this instruction is {m}")
    return int(found.group(2)), int(found.group(3))


def _metadata_register(op: Operand, what: str, r: _Reader) -> Reg:
    """The sparsity metadata operand: a 32-bit register, or a vector of one (ptxas accepts {%r} too)."""
    if isinstance(op, Vec) and len(op.items) == 1:
        op = op.items[0]
    if not isinstance(op, Reg) or op.negated:
        raise NotUnderstood(f"the sparsity metadata of {what} is a register")
    r.register(op, "metadata", 32)
    return op


def _wgmma(q: dict, ops: list[Operand], r: _Reader) -> WgmmaMma:
    n, k = _mnk(q, 64)
    if not all(t in q for t in ("dtype", "atype", "btype")):
        raise NotUnderstood("wgmma.mma_async names three types: .dtype.atype.btype")
    sparse = "sp" in q
    _count(ops, 4, 13, "wgmma.mma_async")
    r.vector(ops[0], "D")
    a_regs = isinstance(ops[1], Vec)
    if a_regs:
        r.vector(ops[1], "A")
    head = 3 + 2 * sparse + 1
    if len(ops) < head:
        raise NotUnderstood(f"wgmma.mma_async{'.sp' if sparse else ''} takes at least {head} operands")
    fields: dict = dict(n=n, k=k, dtype=q["dtype"], atype=q["atype"], btype=q["btype"], sparse=sparse,
                        a_in_registers=a_regs, satfinite="satfinite" in q)
    if not a_regs:
        fields["a_desc"] = r.value(ops[1], "a_desc", 64)
    fields["b_desc"] = r.value(ops[2], "b_desc", 64)
    if sparse:
        _metadata_register(ops[3], "wgmma.mma_async.sp", r)
        fields["sparse_selector"] = r.immediate(ops[4], "sparse_selector")
    fields["scale_d"] = r.predicate(ops[head - 1], "scale_d")
    rest = ops[head:]
    if len(rest) in (1, 5) or len(rest) > 5:
        raise NotUnderstood(f"{len(rest)} immediates after scale-d (imm-scale-a and -b, then up to imm-trans-a and -b)")
    # with A in registers (or a malformed A-descriptor form) the one imm-trans is B's
    names = ("imm_scale_a", "imm_scale_b") + {0: (), 1: ("imm_trans_b",), 2: ("imm_trans_a", "imm_trans_b")}[max(0, len(rest) - 2)]
    for name, op in zip(names, rest):
        fields[name] = r.immediate(op, name)
    instr = WgmmaMma(**fields)
    family = WGMMA_TYPES.get(wgmma_type_family(instr.atype) or "")
    if family is not None and family.transpose and (instr.imm_trans_b is None or (not a_regs and instr.imm_trans_a is None)):
        # measured: ptxas answers 'Arguments mismatch' for .f16 / .bf16 without the imm-trans operands
        raise NotUnderstood(f"no imm-trans operands with .{instr.atype} (ptxas requires them)")
    for name, vec, needed in (("D", ops[0], wgmma_d_count(instr)), ("A", ops[1], WGMMA_A_REGISTERS if a_regs else None)):
        if needed is not None and len(vec.items) != needed:
            raise NotUnderstood(f"{name} has {len(vec.items)} registers, m64n{n}k{k}.{instr.dtype} needs {needed} (PTX ISA 9.7.15.5.1)")
        if needed is not None and len({r.regs.type_of(x.name) for x in vec.items}) > 1:
            raise NotUnderstood(f"{name} mixes registers of different types (ptxas refuses it)")
    return instr


def _mma_sp(q: dict, ops: list[Operand], r: _Reader) -> MmaSp:
    _, k = _mnk(q, 16)
    if (q.get("alayout"), q.get("blayout")) != ("row", "col"):
        raise NotUnderstood("mma.sp is written .row.col (ptxas: 'Illegal alayout' otherwise)")
    if not all(t in q for t in ("dtype", "atype", "btype", "ctype")):
        raise NotUnderstood("mma.sp names four types: .dtype.atype.btype.ctype")
    block = "block_scale" in q
    _count(ops, 6 + 4 * block, 6 + 4 * block, "mma.sp")
    for k_op, name in enumerate(("D", "A", "B", "C")):
        r.vector(ops[k_op], name)
    metadata = _metadata_register(ops[4], "mma.sp", r)
    instr = MmaSp(k=k, dtype=q["dtype"], atype=q["atype"], btype=q["btype"], ctype=q["ctype"],
                 ordered_metadata=q["sp"] == "sp::ordered_metadata", kind=_after(q.get("kind"), "kind::"),
                 block_scale=block, scale_vec=q.get("scale_vec"), stype=q.get("stype"), satfinite="satfinite" in q,
                 sparse_selector=r.immediate(ops[5], "sparse_selector"), metadata=r.value(metadata, "metadata", 32))
    for k_op, name in enumerate(("D", "A", "B", "C")):
        if len({r.regs.type_of(x.name) for x in ops[k_op].items}) > 1:
            raise NotUnderstood(f"{name} mixes registers of different types (ptxas refuses it)")
    if not block:
        a, b, cd = mma_sp_fragment_registers(instr)
        for k_op, name, needed in ((0, "D", cd), (1, "A", a), (2, "B", b), (3, "C", cd)):
            if len(ops[k_op].items) != needed:
                raise NotUnderstood(f"{name} has {len(ops[k_op].items)} registers, the fragment of "
                                    f".m16n8k{instr.k}.{instr.atype} needs {needed} (PTX ISA 9.7.14.5)")
    return instr


def _wait(q: dict, ops: list[Operand], r: _Reader, operation: str) -> Tcgen05Wait:
    _count(ops, 0, 0, "tcgen05.wait")
    return Tcgen05Wait(operation)


def _fence(q: dict, ops: list[Operand], r: _Reader, operation: str) -> Tcgen05Fence:
    _count(ops, 0, 0, "tcgen05.fence")
    return Tcgen05Fence(operation)


#: The reader of each instruction type, by the QUALIFIERS entry of its opcode; tcgen05.wait and
#: tcgen05.fence take the operation their opcode names (tcgen05.wait::ld).
READERS: dict[str, tuple[type, Callable]] = {
    "tcgen05.mma": (Tcgen05Mma, _mma), "tcgen05.alloc": (Tcgen05Alloc, _alloc), "tcgen05.dealloc": (Tcgen05Dealloc, _dealloc),
    "tcgen05.relinquish_alloc_permit": (Tcgen05RelinquishAllocPermit, _relinquish), "tcgen05.ld": (Tcgen05Ld, _ld),
    "tcgen05.st": (Tcgen05St, _st), "tcgen05.wait": (Tcgen05Wait, _wait), "tcgen05.fence": (Tcgen05Fence, _fence),
    "tcgen05.cp": (Tcgen05Cp, _cp), "tcgen05.shift": (Tcgen05Shift, _shift), "tcgen05.commit": (Tcgen05Commit, _commit),
    "wgmma.mma_async": (WgmmaMma, _wgmma), "mma": (MmaSp, _mma_sp),
}
READ_TYPES = frozenset(cls for cls, _ in READERS.values())


def tensor_core_opcode(opcode: str) -> str | None:
    """The QUALIFIERS key of a tensor-core opcode as written (tcgen05.*, wgmma.*, mma with .sp),
    "" for a tensor-core instruction outside the model, None for anything else."""
    parts = opcode.split(".")
    if parts[0] == "tcgen05" and len(parts) > 1:
        key = f"tcgen05.{parts[1].split('::')[0]}"
        return key if key in QUALIFIERS else ""
    if parts[0] == "wgmma":
        return "wgmma.mma_async" if parts[1:2] == ["mma_async"] else ""
    if parts[0] == "mma":
        return "mma" if any(p.split("::")[0] == "sp" for p in parts[1:]) else ""
    return None


def read_instruction(opcode: str, operand_text: str, regs: Registers) -> tuple[Instruction, frozenset[str]]:
    """A tensor-core instruction (opcode and operands as written) and its unknown fields;
    NotUnderstood naming what is not understood."""
    key = tensor_core_opcode(opcode)
    if not key:
        raise NotUnderstood(f"{opcode}: not a tcgen05, wgmma.mma_async or mma.sp instruction this model describes")
    parts = opcode.split(".")
    skip = 1 if key == "mma" else 2
    syntax = QUALIFIERS[key]
    q = _qualifiers(syntax, parts[skip:])
    ops = [operand(t, regs.unknown_immediates) for t in split_top(operand_text)]
    r = _Reader(regs)
    _, reader = READERS[key]
    if key in ("tcgen05.wait", "tcgen05.fence"):
        operation = parts[1].partition("::")[2]
        if not operation:
            raise NotUnderstood(f"{key} names its operation: {key}::...")
        return reader(q, ops, r, operation), frozenset()
    return reader(q, ops, r), frozenset(r.unknown)


_INSTRUCTION = re.compile(rf"(?:@(!?)\s*({_NAME})\s+)?([A-Za-z_][\w.:]*)\s*(.*)")


def read_ptx(text: str, regs: Registers | None = None) -> list[Parsed]:
    """Every tensor-core instruction of a PTX text (a module, a function body or an inline-asm
    template), in order; `regs` the registers known beforehand (an asm statement's operands)."""
    regs = regs or Registers()
    found = []
    for s in statements(text):
        if s.kind == "open":
            regs.open()
        elif s.kind == "close":
            regs.close()
        elif s.kind == "label":
            regs.values.clear()
        elif s.kind == "directive":
            if re.match(r"(\.\w+\s+)*\.(entry|func)\b", s.text):
                regs.enter_function()
            regs.declare(s.text)
        else:
            m = _INSTRUCTION.fullmatch(s.text)
            if not m:
                found.append(Parsed(s.offset, s.line, shown(s.text), None, frozenset(),
                                    "not a PTX statement (ptxas: a syntax error)"))
                continue
            negated, guard, opcode, rest = m.groups()
            guard_value = None if guard is None else regs.truth(Reg(guard, bool(negated)))
            if tensor_core_opcode(opcode) is None:
                _track(opcode, rest, regs, guard is None or guard_value is True)
                continue
            guard_text = None if guard is None else f"@{negated}{guard}"
            try:
                if guard is not None and regs.type_of(guard) != "pred":
                    raise NotUnderstood(f"the guard {guard_text}: {shown(guard)} is not a declared predicate")
                instr, unknown = read_instruction(opcode, rest, regs)
                found.append(Parsed(s.offset, s.line, s.text, instr, unknown, None, guard_text, guard_value))
            except NotUnderstood as e:
                found.append(Parsed(s.offset, s.line, s.text, None, frozenset(), str(e), guard_text, guard_value,
                                    tensor_core_opcode(opcode) == ""))
            if opcode.startswith(("tcgen05.ld", "wgmma.mma_async", "mma")):
                forget_written((split_top(rest) or [""])[0], regs)
    return found
