"""Strategies for malformed input, to fuzz the readers: program files mutated from well-formed
programs, and damage done to a recorded-vector folder.

A malformed program is a well-formed one (from a corpus) with one to three edits to its JSON
(a value replaced by another of any type, often one at the edge of what a field takes; a field
removed or added; a list emptied or grown), sometimes inside the case.json envelope of `export`,
and sometimes one edit to its text (cut short, bytes
inserted, wrapped in deep nesting). Damage to a vector folder is a list of edits to its files
and its GPU folder's recording.json (removed, replaced by a broken link, a directory or a FIFO,
emptied, cut short, bytes changed, lines dropped, repeated or swapped, a word changed, wrapped in
deep nesting, renamed), applied by `damage_folder`.
"""

from __future__ import annotations

import copy
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hypothesis import strategies as st

from tcgen05_conformance.core.instructions import INSTRUCTION_TYPES
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.operands import DOMAINS
from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES
from tcgen05_conformance.core.program import ProgramError, from_json

CASE_SCHEMA = "tcgen05-conformance/vectors/1"  # the case.json files of `export` (tcgen05_conformance.harness.export)

# Integers on and beyond the edges of the fields' ranges (widths of 16, 32, 64 bits; TMEM 128 x 512).
EDGE_INTEGERS = (0, 1, -1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 64, 96, 127, 128, 129, 255, 256, 257, 511, 512,
                 513, 1 << 15, (1 << 16) - 1, 1 << 16, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 40,
                 (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64, -(1 << 63), 10**30, 10**400)
# Every word the ISA tables hold, and near misses.
ISA_WORDS = tuple(sorted({str(v) for d in DOMAINS.values() if isinstance(d.values, tuple) for v in d.values}
                         | set(INSTRUCTION_TYPES) | set(TARGETS)
                         | {"f128", "a::bogus", "u8x", "kind::f16", ".f16", "F16", "32x32", "b4::fill", "sm_100",
                            "tcgen05.mma.ws", "exact", "sm_90a", "", " ", "tcgen05-conformance/program/1"}))
_AWKWARD_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """JSON values of every type, biased to edge integers and ISA words."""
    scalars = st.one_of(
        st.sampled_from(EDGE_INTEGERS), st.integers(), st.sampled_from(ISA_WORDS), _AWKWARD_TEXT, st.booleans(),
        st.none(), st.floats(allow_nan=False, allow_infinity=False), st.just(""),
    )
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_AWKWARD_TEXT, inner, max_size=3),
                        max_leaves=max_leaves)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) to a value inside `node`, `node` itself included."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _at(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


@st.composite
def _edited(draw, obj: Any) -> Any:
    path = draw(st.sampled_from(_paths(obj)))
    kind = draw(st.sampled_from(("replace", "replace", "replace", "remove", "add", "empty", "grow")))
    if not path or kind == "replace":
        value = draw(json_values())
        if not path:
            return value
        _at(obj, path[:-1])[path[-1]] = value
        return obj
    parent, key = _at(obj, path[:-1]), path[-1]
    target = parent[key]
    if kind == "remove":
        del parent[key]
    elif kind == "add" and isinstance(target, dict):
        target[draw(st.sampled_from(("idesc", "kind", "extra", "cta", "op")) | _AWKWARD_TEXT)] = draw(json_values())
    elif kind == "empty" and isinstance(target, (dict, list)):
        target.clear()
    elif kind == "grow" and isinstance(target, list):
        target.extend([copy.deepcopy(target[0]) if target else draw(json_values())] * draw(st.integers(1, 3)))
    else:
        parent[key] = draw(json_values())
    return obj


def _in_domain(domain) -> st.SearchStrategy[Any]:
    """Values a field accepts, the ends of its range among them."""
    v = domain.values
    if isinstance(v, range):
        return st.sampled_from((v[0], v[-1])) | st.integers(v[0], v[-1])
    return st.sampled_from(v)


@st.composite
def _op_edit(draw, obj: Any) -> Any:
    """An operation's field set to a value it accepts alone (or toggled, or None), so that the
    program loads and its combination of values goes on to the legality check and the oracle."""
    ops = obj.get("ops") if isinstance(obj, dict) else None
    if not isinstance(ops, list) or not ops or not isinstance(ops[0], dict):
        return draw(_edited(obj))
    op = draw(st.sampled_from([o for o in ops if isinstance(o, dict)] or [ops[0]]))
    fields = [k for k in op if k != "op"]
    if not fields:
        return obj
    name = draw(st.sampled_from(fields))
    domain = DOMAINS.get((op["op"], name)) if isinstance(op.get("op"), str) else None
    if domain is None or isinstance(op[name], bool):
        op[name] = not op[name] if isinstance(op[name], bool) else op[name]
    else:
        op[name] = draw(_in_domain(domain) | st.none() | st.just([draw(_in_domain(domain))] * draw(st.sampled_from((4, 8)))))
    return obj


@st.composite
def _text_edit(draw, text: str) -> bytes:
    data = text.encode()
    kind = draw(st.sampled_from(("cut", "insert", "nest", "nest-value")))
    at = draw(st.integers(0, len(data)))
    if kind == "cut":
        return data[:at]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    depth = draw(st.sampled_from((65, 100, 1000, 100_000)))
    if kind == "nest":
        return b"[" * depth + data + b"]" * depth
    return data.replace(b'"ops": [', b'"ops": [' + b"[" * depth, 1).replace(b"]", b"]" * (depth + 1), 1)


def _case_file(program: Any, profile: Any) -> dict:
    """A program inside the case.json envelope `export` writes, with the case id it has if it loads."""
    try:
        case_id = from_json(program).case_id
    except ProgramError:
        case_id = "0" * 16
    return {"schema": CASE_SCHEMA, "case_id": case_id, "label": "", "profile": profile, "program": program,
            "state": {}, "expected": "expected", "expected_digest": ""}


@st.composite
def malformed_programs(draw, corpus: Sequence[dict]) -> bytes:
    """The bytes of a program file: a program of `corpus` (JSON objects) with one to three edits
    to its JSON (two in three to an operation's field, with a value that field accepts alone),
    one time in five inside a case.json envelope, and one time in four an edit to its text."""
    obj = copy.deepcopy(corpus[draw(st.integers(0, len(corpus) - 1))])
    for _ in range(draw(st.integers(1, 3))):
        obj = draw(draw(st.sampled_from((_edited, _op_edit, _op_edit)))(obj))
    if draw(st.integers(0, 4)) == 0:
        obj = _case_file(obj, draw(st.sampled_from(PROFILE_NAMES) | json_values()))
    text = json.dumps(obj, indent=draw(st.sampled_from((None, 1))))
    if draw(st.integers(0, 3)) == 0:
        return draw(_text_edit(text))
    return text.encode()


# --- recorded-vector folders ----------------------------------------------------------------

VECTOR_FILES = ("a", "b", "c", "d_fp32", "d_fp16", "manifest")  # the manifest: the GPU folder's recording.json
MANIFEST_FILE = "recording.json"  # tcgen05_conformance.oracles.numerics.vectors.MANIFEST (a floor above this one)
_FILE_DAMAGE = ("remove", "broken-link", "directory", "fifo", "device-link", "empty", "cut", "insert", "replace-byte",
                "drop-line", "repeat-line", "swap-lines", "change-word", "crlf", "blank-line", "rename", "nest")


@dataclass(frozen=True)
class FileDamage:
    """One edit to one file of a vector folder; `seed` places it (which byte, line or word)."""

    file: str  # one of VECTOR_FILES
    kind: str  # one of _FILE_DAMAGE
    seed: int
    data: bytes = b""  # bytes inserted, the word written, or the new name's part


def vector_damage() -> st.SearchStrategy[list[FileDamage]]:
    """One to three edits to the files of a vector folder."""
    one = st.builds(FileDamage, st.sampled_from(VECTOR_FILES), st.sampled_from(_FILE_DAMAGE), st.integers(0, 2**32 - 1),
                    st.binary(min_size=1, max_size=6) | st.sampled_from((b"zz", b"3c00", b"0" * 33, b"1" * 32, b"-1",
                                                                         b"\xff", b"0x3c00", b"\x00")))
    return st.lists(one, min_size=1, max_size=3)


def vector_file(folder: Path, name: str) -> Path | None:
    """The file `name` (one of VECTOR_FILES) of a format folder whose a file names its GPU and
    format, or of its GPU folder (the manifest)."""
    if name == "manifest":
        return folder.parent / MANIFEST_FILE
    a = next(iter(sorted(folder.glob("a_*_*.txt"))), None)
    if a is None:
        return None
    _, gpu, fmt = a.stem.split("_", 2) if a.stem.count("_") == 2 else ("a", "X", "fp16")
    return folder / {"a": f"a_{gpu}_{fmt}.txt", "b": f"b_{gpu}_{fmt}.txt", "c": f"c_{gpu}_fp32.txt",
                     "d_fp32": f"d_{gpu}_fp32.txt", "d_fp16": f"d_{gpu}_fp16.txt"}[name]


def damage_folder(folder: Path, damage: Sequence[FileDamage]) -> None:
    """Apply `damage` to the files of `folder` in order (an edit to a file no longer there does nothing)."""
    for d in damage:
        path = vector_file(folder, d.file)
        if path is None or not (path.is_file() and not path.is_symlink()):
            continue
        rng = random.Random(d.seed)
        data = path.read_bytes()
        lines = data.split(b"\n")
        if d.kind in ("remove", "broken-link", "directory", "fifo", "device-link", "rename"):
            path.unlink()
            if d.kind == "broken-link":
                path.symlink_to(folder / "nowhere")
            elif d.kind == "directory":
                path.mkdir()
            elif d.kind == "fifo":
                os.mkfifo(path)
            elif d.kind == "device-link":
                path.symlink_to("/dev/zero")
            elif d.kind == "rename":
                parts = path.name.split("_")
                parts[rng.randrange(len(parts))] = d.data.hex() or "x"
                (folder / "_".join(parts)).write_bytes(data)
            continue
        if d.kind == "empty":
            data = b""
        elif d.kind == "cut":
            data = data[:rng.randrange(len(data) + 1)]
        elif d.kind == "insert":
            at = rng.randrange(len(data) + 1)
            data = data[:at] + d.data + data[at:]
        elif d.kind == "replace-byte" and data:
            at = rng.randrange(len(data))
            data = data[:at] + d.data[:1] + data[at + 1:]
        elif d.kind == "drop-line" and len(lines) > 1:
            del lines[rng.randrange(len(lines) - 1)]
            data = b"\n".join(lines)
        elif d.kind == "repeat-line" and len(lines) > 1:
            k = rng.randrange(len(lines) - 1)
            lines.insert(k, lines[k])
            data = b"\n".join(lines)
        elif d.kind == "swap-lines" and len(lines) > 2:
            i, j = rng.randrange(len(lines) - 1), rng.randrange(len(lines) - 1)
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif d.kind == "change-word" and lines[0]:
            k = rng.randrange(max(1, len(lines) - 1))
            words = lines[k].split(b" ")
            words[rng.randrange(len(words))] = d.data
            lines[k] = b" ".join(words)
            data = b"\n".join(lines)
        elif d.kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif d.kind == "nest":
            data = b"[" * 100 + data + b"]" * 100
        elif d.kind == "blank-line":
            lines.insert(rng.randrange(len(lines)), b"")
            data = b"\n".join(lines)
        path.write_bytes(data)
