"""Programs as values: a versioned, JSON-serialisable test program, its canonical JSON, its
content-hash case id, and strict loading (one-line errors naming the JSON path).

A program is: a target, a numeric profile, the CTAs it runs on (2 for cta_group::2), the TMEM
columns it allocates, the initial shared-memory bytes and TMEM image of each CTA, the register
operands of a Hopper MMA as matrices, and the operations it issues. TMEM addresses in operations
are relative to the allocation's base.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tcgen05_conformance.core.inputs import MAX_QUOTED, InputError, parse_json, printable, quoted, read_text
from tcgen05_conformance.core.instructions import INSTRUCTION_TYPES, Instruction, Tcgen05Mma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.numeric_profiles import DEFAULT_PROFILE, PROFILE_NAMES
from tcgen05_conformance.core.operands import DOMAINS, Domain

SCHEMA = "tcgen05-conformance/program/1"
SMEM_BYTES = 227 * 1024  # the largest dynamic shared memory per block on sm_90 / sm_100
# A program file's size limit: the largest program (two CTAs' whole shared memory and TMEM, four
# 256 x 256 register matrices) is about 2.6 MiB of base64.
MAX_PROGRAM_BYTES = 16 * 1024 * 1024
# The most operations in one program: the generated ones and the probes issue at most 4; the bound
# keeps what the oracle holds (up to 16 KiB of registers per tcgen05.ld) small.
MAX_OPS = 256


class ProgramError(ValueError):
    """A malformed program: the message names the JSON path and what is wrong, on one line."""


@dataclass(frozen=True)
class SmemSegment:
    """Initial shared-memory bytes of one CTA at a byte offset."""

    offset: int
    data: bytes
    cta: int = 0


@dataclass(frozen=True)
class TmemRegion:
    """Initial TMEM words of one CTA: `lanes` x `columns` 32-bit words, lane-major, little-endian."""

    lane: int
    column: int
    lanes: int
    columns: int
    words: bytes
    cta: int = 0


#: Register operands a Hopper program may carry, as matrices (the kernel distributes them over
#: the threads' registers by the ISA's fragment layouts): the accumulator C (M x N), A (M x K,
#: compressed to K/2 when sparse) when read from registers, B (N x K) of mma.sp, and the sparsity
#: metadata register of each thread, E (threads x 1 word: which bits count is the ISA's, not the
#: program's).
MATRIX_NAMES = ("c", "a", "b", "e")


@dataclass(frozen=True)
class MatrixImage:
    """A register operand as a matrix: `rows` x `columns` element codes, each in a little-endian
    32-bit word (16-bit types in the low half), row-major."""

    name: str
    rows: int
    columns: int
    words: bytes


@dataclass(frozen=True)
class Program:
    target: str
    ops: tuple[Instruction, ...]
    profile: str = DEFAULT_PROFILE
    ctas: int = 1
    tmem_columns: int = dm.ALLOC_MAX_COLUMNS
    smem: tuple[SmemSegment, ...] = ()
    tmem: tuple[TmemRegion, ...] = ()
    matrices: tuple[MatrixImage, ...] = ()
    label: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @functools.cached_property
    def case_id(self) -> str:
        """`case_id(self)`, computed once (a hash of the whole program, asked for many times)."""
        return case_id(self)

    def matrix(self, name: str):
        """The register operand `name` as a uint32 array [rows, columns], or None."""
        for m in self.matrices:
            if m.name == name:
                return np.frombuffer(m.words, "<u4").reshape(m.rows, m.columns).astype(np.uint32)
        return None


# --- to JSON ------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def instruction_to_json(instr: Instruction) -> dict:
    out: dict[str, Any] = {"op": instr.OP}
    for f in dataclasses.fields(instr):
        value = getattr(instr, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def to_json(p: Program, blob: Callable[[bytes], str] = _b64) -> dict:
    """The program as a JSON-able dict (the `meta` annotations are not part of the value;
    `matrices` appears only when the program has some, so older programs keep their ids); `blob`
    writes each memory image and matrix (its "base64" field)."""
    out = {
        "schema": SCHEMA,
        "label": p.label,
        "target": p.target,
        "profile": p.profile,
        "ctas": p.ctas,
        "tmem_columns": p.tmem_columns,
        "smem": [{"cta": s.cta, "offset": s.offset, "base64": blob(s.data)} for s in p.smem],
        "tmem": [
            {"cta": r.cta, "lane": r.lane, "column": r.column, "lanes": r.lanes,
             "columns": r.columns, "base64": blob(r.words)}
            for r in p.tmem
        ],
        "ops": [instruction_to_json(i) for i in p.ops],
    }
    if p.matrices:
        out["matrices"] = [{"name": m.name, "rows": m.rows, "columns": m.columns, "base64": blob(m.words)}
                           for m in p.matrices]
    return out


def canonical_json(p: Program) -> str:
    """Sorted keys, no whitespace: equal programs have byte-equal canonical JSON."""
    return json.dumps(to_json(p), sort_keys=True, separators=(",", ":"))


_BLOB_FIELD = '"base64":""'  # an image or matrix field written empty, as `case_id` writes the JSON


def case_id(p: Program) -> str:
    """The first 16 hex digits of the SHA-256 of the canonical JSON, minus the label.

    The JSON is hashed in pieces: written with every "base64" field empty, and each field's
    base64 text hashed where it goes. Base64 holds no character JSON escapes, so these are the
    canonical JSON's bytes, without `json.dumps` scanning the images (most of a program's JSON:
    that scan was most of the time a campaign spent on case ids). The fields come in the order
    sorted keys write them: the matrices, then the shared-memory segments, then the TMEM regions
    ("base64" first in each); no other text can read `"base64":""` (a string's quotes are escaped)."""
    body = to_json(p, blob=lambda data: "")
    body.pop("label")
    pieces = json.dumps(body, sort_keys=True, separators=(",", ":")).split(_BLOB_FIELD)
    blobs = [m.words for m in p.matrices] + [s.data for s in p.smem] + [r.words for r in p.tmem]
    digest = hashlib.sha256(pieces[0].encode())
    for data, piece in zip(blobs, pieces[1:], strict=True):
        digest.update(b'"base64":"')
        digest.update(base64.b64encode(data))
        digest.update(b'"' + piece.encode())
    return digest.hexdigest()[:16]


# --- from JSON (strict) --------------------------------------------------------------------


def _fail(path: str, message: str) -> typing.NoReturn:
    raise ProgramError(f"{path}: {message}")


def _member(path: str, key: str) -> str:
    """The JSON path of `key` in the object at `path`: `$.ops`, or `$["odd key"]` (escaped, one line)."""
    return f"{path}.{key}" if key.isidentifier() and key.isascii() else f"{path}[{json.dumps(key)}]"


def _shown(value: Any) -> str:
    """A value as an error message quotes it: strings as Python writes them, the rest as JSON."""
    return repr(value[:MAX_QUOTED]) + ("..." if len(value) > MAX_QUOTED else "") if isinstance(value, str) else quoted(value)


def _keys(obj: Any, path: str, required: set[str], optional: set[str] = frozenset()) -> dict:
    if not isinstance(obj, dict):
        _fail(path, f"expected an object, got {_json_type(obj)}")
    unknown = sorted(set(obj) - required - set(optional))
    if unknown:
        _fail(_member(path, unknown[0]), f"unknown field (known: {', '.join(sorted(required | set(optional)))})")
    missing = sorted(required - set(obj))
    if missing:
        _fail(_member(path, missing[0]), "missing required field")
    return obj


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _int(value: Any, path: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(path, f"expected an integer, got {_shown(value)}")
    if not lo <= value <= hi:
        _fail(path, f"{_shown(value)} is out of range [{lo}, {hi}]")
    return value


def _str(value: Any, path: str, choices: tuple[str, ...] | None = None) -> str:
    if not isinstance(value, str):
        _fail(path, f"expected a string, got {_shown(value)}")
    if choices is not None and value not in choices:
        _fail(path, f"{_shown(value)} is not one of {', '.join(choices)}")
    return value


def _bytes(value: Any, path: str) -> bytes:
    text = _str(value, path)
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        _fail(path, "not valid base64")


def _typed(value: Any, hint: Any, path: str, domain: Domain | None) -> Any:
    """A JSON value checked against a field's type hint (int, bool, str, None, tuple[int, ...])
    and, for integers and strings, against the field's domain (the elements' for a tuple)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(hint) if o is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        return _typed(value, options[0], path, domain)  # the instruction fields have one other type
    if origin is tuple:
        if not isinstance(value, list):
            _fail(path, f"expected a list, got {_shown(value)}")
        return tuple(_typed(v, typing.get_args(hint)[0], f"{path}[{k}]", domain) for k, v in enumerate(value))
    if hint is bool:
        if not isinstance(value, bool):
            _fail(path, f"expected true or false, got {_shown(value)}")
        return value
    if hint is int and (not isinstance(value, int) or isinstance(value, bool)):
        _fail(path, f"expected an integer, got {_shown(value)}")
    if hint is str and not isinstance(value, str):
        _fail(path, f"expected a string, got {_shown(value)}")
    if hint not in (int, str):
        _fail(path, f"unsupported type {hint}")
    if value not in domain:
        _fail(path, f"{_shown(value)} is not {domain.describe()} ({domain.reference})")
    return value


@functools.lru_cache(maxsize=None)
def _fields_of(cls: type) -> tuple[dict[str, Any], dict[str, Domain | None], frozenset[str]]:
    """A class's field type hints, field domains, and the fields its JSON must give."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    domains = {f.name: DOMAINS.get((cls.OP, f.name)) for f in fields}
    required = frozenset(f.name for f in fields
                         if f.default is dataclasses.MISSING or (domains[f.name] and domains[f.name].required))
    return {f.name: hints[f.name] for f in fields}, domains, required


def instruction_from_json(obj: Any, path: str) -> Instruction:
    """One instruction, each field checked against its type and domain (tcgen05_conformance.core.operands)."""
    if not isinstance(obj, dict) or "op" not in obj:
        _fail(path, "expected an object with an \"op\" field")
    op = _str(obj["op"], f"{path}.op", tuple(INSTRUCTION_TYPES))
    cls = INSTRUCTION_TYPES[op]
    hints, domains, required = _fields_of(cls)
    _keys(obj, path, required | {"op"}, set(hints))
    instr = cls(**{name: _typed(obj[name], hints[name], f"{path}.{name}", domains[name])
                   for name in hints if name in obj})
    if isinstance(instr, Tcgen05Mma) and instr.disable_output_lane is not None:
        words = mma.DISABLE_OUTPUT_LANE_WORDS[instr.cta_group]
        if len(instr.disable_output_lane) != words:
            _fail(f"{path}.disable_output_lane", f"{len(instr.disable_output_lane)} words for .cta_group::"
                  f"{instr.cta_group}, which takes {words} (PTX ISA 9.7.16.10.9.1)")
    return instr


def from_json(obj: Any, root: str = "$") -> Program:
    """A Program from parsed JSON found at `root` of its document; ProgramError naming the path
    of the first problem."""
    top = _keys(obj, root, {"schema", "target", "ops"},
                {"label", "profile", "ctas", "tmem_columns", "smem", "tmem", "matrices"})
    if top["schema"] != SCHEMA:
        _fail(f"{root}.schema", f"{_shown(top['schema'])} is not {SCHEMA!r}")
    ctas = _int(top.get("ctas", 1), f"{root}.ctas", 1, 2)
    smem = []
    for k, s in enumerate(_list(top.get("smem", []), f"{root}.smem")):
        path = f"{root}.smem[{k}]"
        _keys(s, path, {"offset", "base64"}, {"cta"})
        data = _bytes(s["base64"], f"{path}.base64")
        offset = _int(s["offset"], f"{path}.offset", 0, SMEM_BYTES)
        if offset + len(data) > SMEM_BYTES:
            _fail(path, f"{len(data)} bytes at offset {offset} pass the {SMEM_BYTES}-byte shared memory")
        smem.append(SmemSegment(offset, data, _int(s.get("cta", 0), f"{path}.cta", 0, ctas - 1)))
    columns = _int(top.get("tmem_columns", dm.ALLOC_MAX_COLUMNS), f"{root}.tmem_columns", dm.ALLOC_MIN_COLUMNS,
                   dm.ALLOC_MAX_COLUMNS)
    if columns not in dm.ALLOC_COLUMN_COUNTS:
        _fail(f"{root}.tmem_columns",
              f"{columns} is not a power of 2 in [{dm.ALLOC_MIN_COLUMNS}, {dm.ALLOC_MAX_COLUMNS}] (PTX ISA 9.7.16.7.1)")
    tmem = []
    for k, r in enumerate(_list(top.get("tmem", []), f"{root}.tmem")):
        path = f"{root}.tmem[{k}]"
        _keys(r, path, {"lane", "column", "lanes", "columns", "base64"}, {"cta"})
        lane = _int(r["lane"], f"{path}.lane", 0, dm.TMEM_LANES - 1)
        column = _int(r["column"], f"{path}.column", 0, columns - 1)
        lanes = _int(r["lanes"], f"{path}.lanes", 1, dm.TMEM_LANES - lane)
        cols = _int(r["columns"], f"{path}.columns", 1, columns - column)
        words = _bytes(r["base64"], f"{path}.base64")
        if len(words) != 4 * lanes * cols:
            _fail(f"{path}.base64", f"holds {len(words)} bytes, expected 4 x {lanes} x {cols}")
        tmem.append(TmemRegion(lane, column, lanes, cols, words, _int(r.get("cta", 0), f"{path}.cta", 0, ctas - 1)))
    matrices = []
    for k, m in enumerate(_list(top.get("matrices", []), f"{root}.matrices")):
        path = f"{root}.matrices[{k}]"
        _keys(m, path, {"name", "rows", "columns", "base64"})
        name = _str(m["name"], f"{path}.name", MATRIX_NAMES)
        if any(earlier.name == name for earlier in matrices):
            _fail(f"{path}.name", f"matrix {name!r} is given twice")
        rows, cols = _int(m["rows"], f"{path}.rows", 1, 256), _int(m["columns"], f"{path}.columns", 1, 256)
        words = _bytes(m["base64"], f"{path}.base64")
        if len(words) != 4 * rows * cols:
            _fail(f"{path}.base64", f"holds {len(words)} bytes, expected 4 x {rows} x {cols}")
        matrices.append(MatrixImage(name, rows, cols, words))
    listed = _list(top["ops"], f"{root}.ops")
    if not 1 <= len(listed) <= MAX_OPS:
        _fail(f"{root}.ops", f"{len(listed)} operations; a program issues 1 to {MAX_OPS}")
    ops = tuple(instruction_from_json(o, f"{root}.ops[{k}]") for k, o in enumerate(listed))
    label = _str(top.get("label", ""), f"{root}.label")
    if not label.isprintable():
        _fail(f"{root}.label", f"{_shown(label)} holds a character that is not printable")
    return Program(
        target=_str(top["target"], f"{root}.target", tuple(TARGETS)),
        profile=_str(top.get("profile", DEFAULT_PROFILE), f"{root}.profile", PROFILE_NAMES),
        ctas=ctas, tmem_columns=columns, smem=tuple(smem), tmem=tuple(tmem), matrices=tuple(matrices), ops=ops,
        label=label,
    )


def _list(value: Any, path: str) -> list:
    if not isinstance(value, list):
        _fail(path, f"expected a list, got {_json_type(value)}")
    return value


def parse(text: str) -> Any:
    """The JSON value of a program text, depth-limited (tcgen05_conformance.core.inputs); ProgramError."""
    try:
        return parse_json(text)
    except InputError as e:
        raise ProgramError(f"$: {e}") from None


def loads(text: str) -> Program:
    return from_json(parse(text))


def read(path: str) -> Any:
    """The parsed JSON of the file at `path` (a regular file of at most MAX_PROGRAM_BYTES);
    ProgramError naming the file."""
    try:
        text = read_text(path, MAX_PROGRAM_BYTES)
    except InputError as e:
        raise ProgramError(str(e)) from None
    try:
        return parse(text)
    except ProgramError as e:
        raise ProgramError(f"{printable(str(path))}: {e}") from None


def load(path: str) -> Program:
    """The program in the file at `path`; ProgramError naming the file and the JSON path."""
    obj = read(path)
    try:
        return from_json(obj)
    except ProgramError as e:
        raise ProgramError(f"{printable(str(path))}: {e}") from None


def dumps(p: Program) -> str:
    """Human-readable JSON (indented); `canonical_json` is the hashed form."""
    return json.dumps(to_json(p), indent=1, sort_keys=True)
