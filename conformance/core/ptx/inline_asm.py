"""The PTX inside a CUDA C++ source: every `asm(...)` / `asm volatile(...)` / `__asm__(...)`
statement's template (its adjacent string literals, unescaped, and string macros the file
`#define`s) with each `%N` / `%[name]` operand replaced by a placeholder the parser knows: a
register of the constraint's type ("h" .u16, "r" .u32, "f" .f32, "l" .u64, "d" .f64), or for "n" an
immediate, written as the literal when the C++ expression is an integer literal and as an
immediate of unknown value otherwise. Each character of the template keeps its source line,
so instructions are reported where they are written.

The source is read by one linear pass of a C++ lexer (`cxx_tokens`): comments, string and
character literals (with their u8 / u / U / L prefixes), raw strings `R"d(...)d"`, numbers with
digit separators (`1'024`), preprocessor lines (continued with a backslash) and `#if 0` blocks
are each one token or skipped, so an apostrophe or a parenthesis inside any of them cannot
hide the statements after it. A statement that cannot be read (unbalanced, or a template
built from something other than literals and string macros) is returned with its `problem`
and costs only itself. Each statement also carries the preprocessor conditions it stands
under (`guards`), from which `lint` takes its target.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from tcgen05_conformance.core.ptx.parse import Parsed, Registers, integer, read_ptx

# The PTX register type nvcc binds an operand of each constraint to (CUDA "Inline PTX Assembly",
# section 1.1.1: "h" .u16, "r" .u32, "l" .u64, "f" .f32, "d" .f64; "c" is 8 bits in a 16-bit register)
CONSTRAINT_TYPES = {"h": "u16", "r": "u32", "l": "u64", "f": "f32", "d": "f64", "c": "u16"}
# C++ [lex.ccon] simple escapes; \0... octal and \x hexadecimal are decoded apart.
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "?": "?", "r": "", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}
_ASM_KEYWORDS = frozenset({"asm", "__asm__", "__asm"})
_ASM_QUALIFIERS = frozenset({"volatile", "__volatile__", "goto", "inline"})
MAX_RAW_DELIMITER = 16  # [lex.string]: a raw string's d-char-sequence has at most 16 characters
_PREFIX = r"(?:u8|u|U|L)?"
# One token of C++ (after the raw strings, which the lexer finds by hand): the alternatives are
# tried in order, and each consumes at least one character, so the scan is linear.
_TOKEN = re.compile(
    r"(?P<space>(?:[ \t\r\f\v]|\\\n)+)"  # a backslash-newline splices two lines (C++ [lex.phases] 2)
    r"|(?P<newline>\n)"
    r"|(?P<comment>//(?:[^\n\\]|\\.)*|/\*(?:[^*]|\*(?!/))*(?:\*/)?)"
    rf"|(?P<string>{_PREFIX}\"(?:[^\"\\\n]|\\.)*\"?)"
    rf"|(?P<char>{_PREFIX}'(?:[^'\\\n]|\\.)*'?)"
    r"|(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)"
    r"|(?P<identifier>[A-Za-z_$][\w$]*)"
    r"|(?P<scope>::)"
    r"|(?P<punct>[\s\S])",
    re.S,
)
_RAW = re.compile(rf"{_PREFIX}R\"([^()\\\s\"]{{0,{MAX_RAW_DELIMITER}}})\(")
_DIRECTIVE = re.compile(r"#[ \t]*(\w*)[ \t]*((?:[^\n\\/]|\\[\s\S]|/\*(?:[^*]|\*(?!/))*(?:\*/)?|/(?!\*))*)")


@dataclass(frozen=True)
class Token:
    kind: str  # "string", "char", "number", "identifier", "scope", "punct"
    text: str
    offset: int


@dataclass(frozen=True)
class AsmOperand:
    name: str | None  # [name], or None
    constraint: str  # without its "=" / "+" modifier
    expression: str


@dataclass(frozen=True)
class AsmStatement:
    """One asm statement: its template as PTX (placeholders substituted), the source line of
    each template character, its operands in %N order (outputs, then inputs), the
    preprocessor conditions it stands under, and `problem` when it could not be read."""

    line: int
    ptx: str
    lines: tuple[int, ...]
    operands: tuple[AsmOperand, ...]
    guards: tuple[str, ...] = ()
    problem: str | None = None

    def source_line(self, offset: int) -> int:
        return self.lines[min(offset, len(self.lines) - 1)] if self.lines else self.line


@dataclass
class _Lexed:
    """A source as tokens (comments, whitespace and preprocessor lines dropped), the string
    macros it defines, and for each token the chain of preprocessor conditions it stands under."""

    tokens: list[Token]
    guards: list[tuple]
    macros: dict[str, list[Token]]


# An open #if: its condition's text, whether its block is skipped (it or a block around it is
# #if 0), and the chain of the conditions it stands under, innermost first (a linked list, so
# that each directive costs the same however deep the nesting).
_Condition = tuple[str, bool, tuple]
MAX_GUARDS = 64  # conditions a statement keeps, innermost first


def _conditions_after(directive: str, argument: str, stack: list[_Condition]) -> None:
    """Track `#if` / `#ifdef` / `#elif` / `#else` / `#endif` on `stack`."""
    argument = " ".join(argument.replace("\\\n", " ").split())
    argument = re.sub(r"/\*.*?\*/|//.*", "", argument).strip()
    outer_skipped, outer = (stack[-2][1], stack[-2][2]) if len(stack) > 1 else (False, ())
    if directive in ("if", "ifdef", "ifndef"):
        outer_skipped, outer = (stack[-1][1], stack[-1][2]) if stack else (False, ())
        text = {"ifdef": f"defined({argument})", "ifndef": f"!defined({argument})"}.get(directive, argument)
        skip = directive == "if" and argument in ("0", "false")
        stack.append((text, outer_skipped or skip, (text, outer)))
    elif directive in ("elif", "elifdef", "elifndef") and stack:
        skip = stack[-1][2][0] in ("1", "true") or argument in ("0", "false")
        stack[-1] = (argument, outer_skipped or skip, (argument, outer))
    elif directive == "else" and stack:
        text = stack[-1][2][0]
        stack[-1] = (f"!({text})", outer_skipped or text in ("1", "true"), (f"!({text})", outer))
    elif directive == "endif" and stack:
        stack.pop()


def _guard_texts(chain: tuple) -> tuple[str, ...]:
    """The conditions of a chain, outermost first (the innermost MAX_GUARDS)."""
    texts = []
    while chain and len(texts) < MAX_GUARDS:
        texts.append(chain[0])
        chain = chain[1]
    return tuple(reversed(texts))


def cxx_tokens(source: str) -> _Lexed:
    """The tokens of a C++ source in one linear pass; tokens inside skipped `#if 0` blocks
    are dropped, and `#define NAME "literal" ...` bodies are kept as string macros."""
    tokens: list[Token] = []
    guards: list[tuple] = []
    macros: dict[str, list[Token]] = {}
    stack: list[_Condition] = []
    current: tuple = ()
    skipped = False
    line_start = True
    i, n = 0, len(source)
    while i < n:
        if line_start and source[i] == "#":
            m = _DIRECTIVE.match(source, i)
            directive, argument = m.group(1), m.group(2)
            _conditions_after(directive, argument, stack)
            skipped, current = (stack[-1][1], stack[-1][2]) if stack else (False, ())
            if directive == "define" and not skipped:
                _string_macro(argument, m.start(2), macros)
            i = m.end()
            continue
        raw = _RAW.match(source, i) if source[i] in "uULR" else None
        if raw:
            close = source.find(f"){raw.group(1)}\"", raw.end())
            end = n if close < 0 else close + len(raw.group(1)) + 2
            if not skipped:
                tokens.append(Token("string", source[i:end], i))
                guards.append(current)
            line_start = False
            i = end
            continue
        m = _TOKEN.match(source, i)
        kind = m.lastgroup
        if kind == "newline":
            line_start = True
        elif kind not in ("space", "comment"):
            line_start = False
            if not skipped:
                tokens.append(Token(kind, m.group(), i))
                guards.append(current)
        i = m.end()
    return _Lexed(tokens, guards, macros)


def _string_macro(argument: str, offset: int, macros: dict[str, list[Token]]) -> None:
    """Keep `#define NAME body` when the body is string literals and names of string macros."""
    head = re.match(r"([A-Za-z_]\w*)\s+", argument)
    if not head:
        return
    body = cxx_tokens(argument[head.end():].replace("\\\n", " ")).tokens
    if body and all(t.kind == "string" or (t.kind == "identifier" and t.text in macros) for t in body):
        macros[head.group(1)] = [Token(t.kind, t.text, offset + head.end() + t.offset) for t in body]


def _literal(token: Token) -> tuple[str, list[int]]:
    """A string literal's characters (escapes decoded) and the source offset of each."""
    text, base = token.text, token.offset
    quote = text.index('"')
    if text[:quote].endswith("R"):
        delimiter = text[quote + 1:text.index("(", quote)]
        start = text.index("(", quote) + 1
        end = len(text) - len(delimiter) - 2 if text.endswith(f"){delimiter}\"") else len(text)
        return text[start:end], list(range(base + start, base + end))
    chars, offsets = [], []
    j, end = quote + 1, len(text) - 1 if len(text) > quote + 1 and text.endswith('"') else len(text)
    while j < end:
        if text[j] == "\\" and j + 1 < end:
            escape = re.match(r"\\(?:[0-7]{1,3}|x[0-9a-fA-F]+|[\s\S])", text[j:j + 12])
            code = escape.group()[1:]
            if code[0] in "01234567":
                chars.append(chr(int(code, 8)))
            elif code[0] == "x" and len(code) > 1:
                chars.append(chr(int(code[1:9], 16) % 0x110000))
            else:
                chars.append(_ESCAPES.get(code, code))
            offsets.append(base + j)
            j += len(escape.group())
        else:
            chars.append(text[j])
            offsets.append(base + j)
            j += 1
    return "".join(chars), offsets


class _Unreadable(ValueError):
    """An asm statement this reader cannot read: the message says why."""


def _template(tokens: list[Token], macros: dict[str, list[Token]]) -> tuple[str, list[int]]:
    """The concatenated template and the source offset of each character (a macro's characters
    are placed where the macro is named)."""
    chars: list[str] = []
    offsets: list[int] = []
    for t in tokens:
        if t.kind == "string":
            text, at = _literal(t)
            chars.append(text)
            offsets += at
        elif t.kind == "identifier" and t.text in macros:
            for e in _expand(t.text, macros):
                text = _literal(e)[0]
                chars.append(text)
                offsets += [t.offset] * len(text)
        else:
            raise _Unreadable(f"the template is built from {t.text[:40]!r}, which is not a string literal "
                              "or a string macro this file defines")
    return "".join(chars), offsets


def _expand(name: str, macros: dict[str, list[Token]], depth: int = 0) -> list[Token]:
    """A string macro's literals, the macros it names expanded (at most 16 levels)."""
    if depth > 16:
        raise _Unreadable(f"string macro {name} nests more than 16 levels")
    out = []
    for t in macros[name]:
        out += [t] if t.kind == "string" else _expand(t.text, macros, depth + 1)
    return out


def _split(tokens: list[Token], separator: str) -> list[list[Token]]:
    """`tokens` split at `separator` outside brackets (a `::` at the top counts as two `:`)."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.text in "([{" and t.kind == "punct":
            depth += 1
        elif t.text in ")]}" and t.kind == "punct":
            depth -= 1
        if depth == 0 and (t.text == separator or (separator == ":" and t.kind == "scope")):
            parts += [[], []] if t.kind == "scope" else [[]]
        else:
            parts[-1].append(t)
    return parts


def _closing(tokens: list[Token], k: int) -> int:
    """The index of the bracket closing the one at k."""
    depth = 0
    for j in range(k, len(tokens)):
        if tokens[j].kind == "punct" and tokens[j].text in "([{":
            depth += 1
        elif tokens[j].kind == "punct" and tokens[j].text in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


def _operands(tokens: list[Token]) -> list[AsmOperand]:
    out = []
    for item in _split(tokens, ","):
        name = None
        if len(item) >= 3 and item[0].text == "[" and item[2].text == "]":
            name, item = item[1].text, item[3:]
        k = 0
        constraint = ""
        while k < len(item) and item[k].kind == "string":
            constraint += _literal(item[k])[0]
            k += 1
        if k < len(item) and item[k].text == "(" and item[-1].text == ")":
            if _closing(item, k) != len(item) - 1:
                raise _Unreadable(f"operand {' '.join(t.text for t in item)[:60]!r}: two operands without a ',' "
                                  "between them")
            expression = " ".join(t.text for t in item[k + 1:-1])
            out.append(AsmOperand(name, constraint.lstrip("=+&"), expression))
        elif item:
            raise _Unreadable(f"operand {' '.join(t.text for t in item)[:40]!r} is not \"constraint\"(expression)")
    return out


def _statement_tokens(tokens: list[Token], k: int) -> tuple[list[Token], int, bool]:
    """The tokens between the "(" at `k` and its ")", the index after the statement, and whether
    it is balanced (False when a `;` or the end of the source comes before its ")")."""
    depth, j = 0, k
    while j < len(tokens):
        t = tokens[j]
        if t.kind == "punct":
            if t.text in "([{":
                depth += 1
            elif t.text in ")]}":
                depth -= 1
                if depth == 0:
                    return tokens[k + 1:j], j + 1, True
            elif t.text == ";":
                break
        j += 1
    return tokens[k + 1:j], j, False


_TENSOR_CORE_WORD = re.compile(r"tcgen05|wgmma|\bmma\b|MMA", re.I)
_STATEMENT_SCAN = 4096  # tokens of an unreadable statement searched for a tensor-core word


def _names_tensor_core(tokens: list[Token], k: int) -> bool:
    """Whether an unreadable statement (from token k to its `;`) names a tensor-core opcode or
    macro: only such a statement is reported, since lint judges tensor-core instructions alone."""
    for t in tokens[k:k + _STATEMENT_SCAN]:
        if t.text == ";" and t.kind == "punct":
            return False
        if _TENSOR_CORE_WORD.search(t.text):
            return True
    return False


def asm_statements(source: str) -> list[AsmStatement]:
    """Every asm statement of a C++ source, in order; one that cannot be read has `problem`
    (and is left out when it names no tensor-core opcode or macro)."""
    lexed = cxx_tokens(source)
    tokens = lexed.tokens
    line_starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(line_starts, offset)

    found = []
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.kind != "identifier" or t.text not in _ASM_KEYWORDS:
            k += 1
            continue
        j = k + 1
        while j < len(tokens) and tokens[j].text in _ASM_QUALIFIERS:
            j += 1
        if j >= len(tokens) or tokens[j].text != "(":
            k = j
            continue
        line, guards = line_of(t.offset), _guard_texts(lexed.guards[k])
        body, end, balanced = _statement_tokens(tokens, j)
        try:
            if not balanced:
                raise _Unreadable("unbalanced parentheses: no ')' closes the statement before its ';'")
            parts = _split(body, ":")
            ptx, offsets = _template(parts[0], lexed.macros)
            operands = tuple(op for section in parts[1:3] for op in _operands(section))
        except _Unreadable as e:
            if _names_tensor_core(tokens, j):
                found.append(AsmStatement(line, "", (), (), guards, str(e)))
            k = end  # what the statement spans is not read again (an asm inside it is not another statement)
            continue
        k = end
        substituted, mapped = _substitute(ptx, [line_of(o) for o in offsets], operands)
        found.append(AsmStatement(line, substituted, tuple(mapped), operands, guards))
    return found


_OPERAND_REFERENCE = re.compile(r"%(%|=|\d+|\[(\w+)\])")


def _substitute(ptx: str, lines: list[int], operands: tuple[AsmOperand, ...]) -> tuple[str, list[int]]:
    """`%N`, `%[name]`, `%%` and `%=` replaced (the line map kept in step)."""
    names = {op.name: k for k, op in enumerate(operands) if op.name}
    out, out_lines, i = [], [], 0
    for m in _OPERAND_REFERENCE.finditer(ptx):
        out.append(ptx[i:m.start()])
        out_lines += lines[i:m.start()]
        token = m.group(1)
        if token == "%":
            text = "%"
        elif token == "=":
            text = "0"
        else:
            k = names.get(m.group(2), -1) if m.group(2) else int(token[:6])
            text = _operand_text(k, operands)
        out.append(text)
        out_lines.extend([lines[m.start()]] * len(text))
        i = m.end()
    out.append(ptx[i:])
    out_lines += lines[i:]
    return "".join(out), out_lines


def placeholder(k: int) -> str:
    return f"%__asm{k}"


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
            regs.scopes[0][placeholder(k)] = CONSTRAINT_TYPES.get(op.constraint[:1], "b0")
    regs.unknown_immediates = frozenset(unknown_immediates)
    return read_ptx(statement.ptx, regs)
