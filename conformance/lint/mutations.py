"""One-token mutations of real spellings: the hostile corpus lint's verdicts are measured on
against ptxas (issue 30). Each mutant changes one token of one tensor-core instruction line,
written in a spelling ptxas accepts (`tcgen05_conformance.core.ptx.render`), by one of the
token classes below; the entry around it (declarations, the `mov`s loading its operands) is
kept, so a mutant exercises what lint must check against the declarations.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# The token classes of an instruction line, and the alternatives a mutation draws for each.
# Registers of every declared kind (REGISTER_DECLARATIONS of the renderer): predicate, 16-, 32-
# and 64-bit bit types, f32 and s32, plus names that nothing declares and a shared symbol.
OTHER_REGISTERS = ("%p_en", "%p_true", "%h_mask", "%r_d", "%r_t", "%rd_adesc", "%rd_zc", "%fc0", "%sc0", "%v0",
                   "%r_undeclared", "%rd_undeclared", "taddr_slot", "mbar")
IMMEDIATES = ("0", "1", "-1", "2", "3", "15", "16", "17", "31", "0x1ffff", "0xffff", "0x10000", "0xffffffff",
              "0x100000000", "0xffffffffffffffff", "0x10000000000000000", "-2147483649", "4294967296", "1.5",
              "0f3F800000", "0d3FF0000000000000", "08", "0x", "1e3")
UNKNOWN_QUALIFIERS = ("b12", "sync2", "cta_group::3", "cta_group::0", "kind::f32", "x3", "32x32b", "16x256b",
                      "shared::cluster", "shared::global", "b64", "b32", "b16", "u32", "f32", "s32", "e4m3",
                      "m64n8k16", "m64n264k16", "row", "col", "ws", "sp", "red", "pack::16b", "unpack::16b",
                      "warpx2::02_13", "down", "mbarrier::arrive::one", "multicast::cluster", "collector::a::fill",
                      "ashift", "block_scale", "scale_vec::2X", "block32", "satfinite", "aligned", "sync")
PUNCTUATION = (",", "[", "]", "{", "}", "+", "!", "@", ";", ":", "(", ")")
ADDRESSES = ("[%r_t+4]", "[%r_t+-4]", "[%r_t-4]", "[16]", "[%rd_adesc]", "[%h_mask]", "[%p_en]", "[%fc0]",
             "[%r_t+0x100000000]", "[%r_undeclared]", "[taddr_slot]", "[mbar+8]", "%r_t", "{%r_t}")
GUARDS = ("@%r_d ", "@%rd_adesc ", "@%undeclared ", "@!%p_true ", "@%p_false ", "@%h_mask ", "@!%fc0 ", "@taddr_slot ")
CLASSES = ("qualifier", "register", "immediate", "address", "vector", "punctuation", "guard")

_TOKEN = re.compile(r"\[[^\]]*\]|\{[^}]*\}|%?[A-Za-z_$][\w$]*|[+-]?\d[\w.]*|[,;!@+\-(){}\[\]]|\S")


@dataclass(frozen=True)
class Mutant:
    """One mutated instruction line: the class of the token changed, what was done, the line."""

    token_class: str
    change: str
    line: str


def _opcode_split(line: str) -> tuple[str, str, str]:
    """(guard, opcode with its qualifiers, operands) of an instruction line."""
    m = re.match(r"(@!?\S+\s+)?(\S+)\s*(.*)", line.rstrip(";"), re.S)
    return m.group(1) or "", m.group(2), m.group(3)


def _mutate_qualifier(guard: str, opcode: str, rest: str, rng: random.Random) -> tuple[str, str] | None:
    parts = opcode.split(".")
    head = 2 if parts[0] in ("tcgen05", "wgmma") else 1
    if len(parts) <= head:
        return None
    k = rng.randrange(head, len(parts)) if len(parts) > head else head
    how = rng.choice(("delete", "duplicate", "replace", "digit"))
    if how == "delete":
        new = parts[:k] + parts[k + 1:]
    elif how == "duplicate":
        new = parts[:k + 1] + parts[k:]
    elif how == "replace":
        new = parts[:k] + [rng.choice(UNKNOWN_QUALIFIERS)] + parts[k + 1:]
    else:
        digits = re.sub(r"\d+", lambda m: str(int(m.group()) + rng.choice((1, 2, -1, 64))), parts[k], count=1)
        if digits == parts[k]:
            return None
        new = parts[:k] + [digits] + parts[k + 1:]
    return f"{how} .{parts[k]}", f"{guard}{'.'.join(new)} {rest};"


def _replace_operand_token(rest: str, rng: random.Random, pick, alternatives) -> tuple[str, str] | None:
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(rest)]
    candidates = [t for t in tokens if pick(t[2])]
    if not candidates:
        return None
    start, end, text = rng.choice(candidates)
    new = rng.choice([a for a in alternatives(text) if a != text] or [text])
    return f"{text} -> {new}", rest[:start] + new + rest[end:]


def _in_vector(rest: str, rng: random.Random) -> tuple[str, str] | None:
    vectors = [m for m in re.finditer(r"\{([^}]*)\}", rest)]
    if not vectors:
        return None
    m = rng.choice(vectors)
    items = [x.strip() for x in m.group(1).split(",")]
    how = rng.choice(("drop", "duplicate", "immediate", "register"))
    k = rng.randrange(len(items))
    if how == "drop" and len(items) > 1:
        items = items[:k] + items[k + 1:]
    elif how == "duplicate":
        items = items[:k + 1] + items[k:]
    elif how == "immediate":
        items[k] = rng.choice(("0", "1", "0x1ffff"))
    else:
        items[k] = rng.choice(OTHER_REGISTERS)
    return f"{how} item {k} of {{{m.group(1)[:20]}...}}", rest[:m.start()] + "{" + ", ".join(items) + "}" + rest[m.end():]


def _punctuation(guard: str, opcode: str, rest: str, rng: random.Random) -> tuple[str, str]:
    positions = [m.start() for m in re.finditer(r"[,\[\]{}+!]", rest)]
    if positions and rng.random() < 0.6:
        k = rng.choice(positions)
        return f"delete {rest[k]!r}", f"{guard}{opcode} {rest[:k]}{rest[k + 1:]};"
    k = rng.randrange(len(rest) + 1)
    mark = rng.choice(PUNCTUATION)
    return f"insert {mark!r}", f"{guard}{opcode} {rest[:k]}{mark}{rest[k:]};"


def mutate(line: str, token_class: str, rng: random.Random) -> Mutant | None:
    """One mutation of the given class of an instruction line, or None where the line has no
    token of that class."""
    guard, opcode, rest = _opcode_split(line)
    done: tuple[str, str] | None
    if token_class == "qualifier":
        done = _mutate_qualifier(guard, opcode, rest, rng)
    elif token_class == "guard":
        new = rng.choice(GUARDS)
        done = f"guard {guard.strip() or 'none'} -> {new.strip()}", f"{new}{opcode} {rest};"
    elif token_class == "punctuation":
        done = _punctuation(guard, opcode, rest, rng)
    elif token_class == "vector":
        changed = _in_vector(rest, rng)
        done = changed and (changed[0], f"{guard}{opcode} {changed[1]};")
    else:
        pick, alternatives = {
            "register": (lambda t: t.startswith("%") or t in ("taddr_slot", "mbar"), lambda t: OTHER_REGISTERS),
            "immediate": (lambda t: bool(re.fullmatch(r"[+-]?\d[\w.]*", t)), lambda t: IMMEDIATES),
            "address": (lambda t: t.startswith("["), lambda t: ADDRESSES),
        }[token_class]
        changed = _replace_operand_token(rest, rng, pick, alternatives)
        done = changed and (changed[0], f"{guard}{opcode} {changed[1]};")
    if done is None or done[1].strip() == line.strip():
        return None
    return Mutant(token_class, done[0], done[1])
