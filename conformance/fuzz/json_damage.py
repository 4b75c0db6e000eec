"""Damage done to a JSON file (a profile, a shard's summary.json or results.json, a journal's
lines), drawn by Hypothesis for `fuzz --harness`: a value replaced, deleted or added somewhere in
its tree (numbers out of every range, wrong types, NaN), its bytes cut, spoiled or nested
100,000 deep, or the file made a FIFO, a device, a folder, or taken away."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

Damage = tuple  # (kind, how, seed, value)
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-(10**30), 10**30),
                   st.sampled_from((10**12, 10**6, -1, 0, 2**63, 10**400)),
                   st.floats(), st.text(max_size=12), st.sampled_from(("pass", "fail", "error", "skip", "1/2", "0/0")),
                   st.just([]), st.just({}), st.lists(st.integers(), max_size=3))


def damages() -> st.SearchStrategy[Damage]:
    """One damage: most in the tree, some to the bytes, a few to the kind of file."""
    tree = st.tuples(st.just("tree"), st.sampled_from(("replace", "replace", "delete", "add")), st.integers(0, 2**32), VALUES)
    raw = st.tuples(st.just("raw"), st.sampled_from(("truncate", "bytes", "deep", "empty", "not_utf8")), st.integers(0, 2**32),
                    st.binary(max_size=16))
    special = st.tuples(st.just("special"), st.sampled_from(("fifo", "dev_zero", "dev_null", "folder", "missing")),
                        st.just(0), st.none())
    return st.one_of(tree, tree, tree, raw, special)


def damage_file(path: Path, damage: Damage, lines: bool = False) -> None:
    """Damage the JSON file at `path` (with `lines`, JSON lines: a tree damage hits one line)."""
    kind, how, seed, value = damage
    rng = random.Random(seed)
    if kind == "special":
        _special(path, how)
        return
    data = path.read_bytes()
    if kind == "raw":
        path.write_bytes(_raw(data, how, rng, value))
        return
    if lines:
        rows = data.decode("utf-8").splitlines()
        k = rng.randrange(len(rows))
        rows[k] = json.dumps(_edited(json.loads(rows[k]), how, rng, value), separators=(",", ":"))
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(_edited(json.loads(data), how, rng, value)), encoding="utf-8")


def _special(path: Path, how: str) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how in ("dev_zero", "dev_null"):
        path.symlink_to("/dev/zero" if how == "dev_zero" else "/dev/null")
    elif how == "folder":
        path.mkdir()


def _raw(data: bytes, how: str, rng: random.Random, noise: bytes) -> bytes:
    if how == "truncate":
        return data[:rng.randrange(len(data) + 1)]
    if how == "bytes":
        at = rng.randrange(len(data) + 1)
        return data[:at] + noise + data[at + len(noise):]
    if how == "deep":
        return b"[" * 100_000 + b"]" * 100_000
    if how == "not_utf8":
        return data[:rng.randrange(len(data) + 1)] + b"\xff\xfe" + data
    return b""


def _edited(document: Any, how: str, rng: random.Random, value: Any) -> Any:
    """`document` with one value somewhere in it replaced by `value`, deleted, or `value` added."""
    if not isinstance(document, (dict, list)) or not document:
        return value
    parent, key = document, None
    node: Any = document
    while isinstance(node, (dict, list)) and node and (key is None or rng.random() < 0.7):
        parent = node
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        node = node[key]
    if how == "delete":
        del parent[key]
    elif how == "add":
        if isinstance(parent, dict):
            parent[f"fuzz{rng.randrange(10)}"] = value
        else:
            parent.append(value)
    else:
        parent[key] = value
    return document
