"""The PTX inside a CUDA C++ source: every `asm(...)` / `asm volatile(...)` / `__asm__(...)`
statement's template (its adjacent string literals, unescaped) with each `%N` / `%[name]`
operand replaced by a placeholder the parser knows: a register of the constraint's width
("h" 16, "r" / "f" 32, "l" / "d" 64 bits), or for "n" an immediate, written as the literal
when the C++ expression is an integer literal and as an immediate of unknown value otherwise.
Each character of the template keeps its source line, so instructions are reported where
they are written.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from tcgen05_conformance.core.ptx.parse import Parsed, Registers, integer, read_ptx

CONSTRAINT_BITS = {"h": 16, "r": 32, "f": 32, "l": 64, "d": 64, "c": 16}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "", "0": "\0"}
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*((?:(?:volatile|__volatile__|goto|inline)\s*)*)\(")


@dataclass(frozen=True)
class AsmOperand:
    name: str | None  # [name], or None
    constraint: str  # without its "=" / "+" modifier
    expression: str


@dataclass(frozen=True)
class AsmStatement:
    """One asm statement: its template as PTX (placeholders substituted), the source line of
    each template character, and its operands in %N order (outputs, then inputs)."""

    line: int
    ptx: str
    lines: tuple[int, ...]
    operands: tuple[AsmOperand, ...]

    def source_line(self, offset: int) -> int:
        return self.lines[min(offset, len(self.lines) - 1)] if self.lines else self.line


def _skip_literal(text: str, i: int) -> int:
    """The index after the string or character literal starting at i."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def code_positions(text: str):
    """Indices of the source outside comments and literals where `asm` statements may start."""
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif text[i] in "\"'":
            i = _skip_literal(text, i)
        else:
            m = _ASM.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                yield i, m.end()
                i = m.end()
            else:
                i += 1


def _parenthesised(text: str, start: int) -> int:
    """The index of the ")" closing the "(" before `start`, skipping literals and comments."""
    depth, i = 1, start
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = _skip_literal(text, i)
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced parentheses in an asm statement")


def _split_colons(body: str) -> list[str]:
    """The template and the output / input / clobber lists, split at top-level colons (`::` is
    an empty list: C++ scope operators stand inside the operands' parentheses)."""
    parts, depth, current, i = [], 0, [], 0
    while i < len(body):
        ch = body[i]
        if ch in "\"'":
            end = _skip_literal(body, i)
            current.append(body[i:end])
            i = end
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == ":" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    return parts + ["".join(current)]


def _template(body: str, base: int, line_starts: list[int]) -> tuple[str, list[int]]:
    """The concatenated, unescaped string literals of the template part, with the source line
    of each character."""
    chars, lines = [], []
    i = 0
    while i < len(body):
        if body[i] == '"':
            end = _skip_literal(body, i)
            j = i + 1
            while j < end - 1:
                line = bisect.bisect_right(line_starts, base + j)
                if body[j] == "\\" and j + 1 < end - 1:
                    chars.append(_ESCAPES.get(body[j + 1], body[j + 1]))
                    j += 2
                else:
                    chars.append(body[j])
                    j += 1
                lines.append(line)
            i = end
        else:
            i += 1
    return "".join(chars), lines


def _operands(section: str) -> list[AsmOperand]:
    out = []
    for item in _split_items(section):
        m = re.fullmatch(r'\s*(?:\[\s*(\w+)\s*\])?\s*"([^"]*)"\s*\((.*)\)\s*', item, re.S)
        if m:
            out.append(AsmOperand(m.group(1), m.group(2).lstrip("=+&"), " ".join(m.group(3).split())))
    return out


def _split_items(section: str) -> list[str]:
    items, depth, current, i = [], 0, [], 0
    while i < len(section):
        ch = section[i]
        if ch in "\"'":
            end = _skip_literal(section, i)
            current.append(section[i:end])
            i = end
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    tail = "".join(current)
    return items + ([tail] if tail.strip() else [])


def placeholder(k: int) -> str:
    return f"%__asm{k}"


def asm_statements(source: str) -> list[AsmStatement]:
    """Every asm statement of a C++ source, in order."""
    line_starts = [0] + [m.end() for m in re.finditer("\n", source)]
    found = []
    for start, open_end in code_positions(source):
        close = _parenthesised(source, open_end)
        parts = _split_colons(source[open_end:close])
        ptx, lines = _template(parts[0], open_end, line_starts)
        operands = tuple(op for section in parts[1:3] for op in _operands(section))
        substituted, mapped = _substitute(ptx, lines, operands)
        found.append(AsmStatement(bisect.bisect_right(line_starts, start), substituted, tuple(mapped), operands))
    return found


def _substitute(ptx: str, lines: list[int], operands: tuple[AsmOperand, ...]) -> tuple[str, list[int]]:
    """`%N`, `%[name]`, `%%` and `%=` replaced (the line map kept in step)."""
    names = {op.name: k for k, op in enumerate(operands) if op.name}
    out, out_lines, i = [], [], 0
    while i < len(ptx):
        m = re.match(r"%(%|=|\d+|\[(\w+)\])", ptx[i:])
        if not m:
            out.append(ptx[i])
            out_lines.append(lines[i])
            i += 1
            continue
        token = m.group(1)
        if token == "%":
            text = "%"
        elif token == "=":
            text = "0"
        else:
            k = names.get(m.group(2), -1) if m.group(2) else int(token)
            text = _operand_text(k, operands)
        out.append(text)
        out_lines.extend([lines[i]] * len(text))
        i += m.end()
    return "".join(out), out_lines


def _operand_text(k: int, operands: tuple[AsmOperand, ...]) -> str:
    if not 0 <= k < len(operands):
        return placeholder(k)
    op = operands[k]
    if op.constraint == "n" and integer(op.expression) is not None:
        return op.expression
    return placeholder(k)


def read_asm(statement: AsmStatement) -> list[Parsed]:
    """The tensor-core instructions of one asm statement, with its operands as placeholders."""
    regs = Registers()
    unknown_immediates = set()
    for k, op in enumerate(statement.operands):
        if op.constraint == "n":
            unknown_immediates.add(placeholder(k))
        else:
            regs.scopes[0][placeholder(k)] = CONSTRAINT_BITS.get(op.constraint[:1], 0)
    regs.unknown_immediates = frozenset(unknown_immediates)
    return read_ptx(statement.ptx, regs)
