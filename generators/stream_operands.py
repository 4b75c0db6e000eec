"""Stream data sets, the numpy twin of the checker kernels' `stream_*` kernels
(`tcgen05_conformance.device.check_kernels`): a program's operand codes, the bytes no operand reads (filler), its
structured-sparse metadata and the columns that metadata selects are all pure functions of
(seed, tile, row, column), drawn on the GPU from the counter-based operand stream
(`numeric_stream.h`). The host redraws any program with these functions, bit for bit, to replay a
failure or cross-check a sample without copying the data back.

Two kinds of inputs: "discriminating" draws `ns_code`'s value families (combination 0);
"exact" draws every code from a format's table of small multiples of 1/4
(`tcgen05_conformance.generators.operand_images.exact_codes`, combination 1), hashing (tile, row, column) to an index.
A word table says, for each byte of a program's register or shared-memory words, which element's
byte goes there (`entry`), a zero byte (`ZERO`) or a filler byte (`OP_FILLER`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.memo import frozen
from tcgen05_conformance.generators import numeric_stream as ns
from tcgen05_conformance.generators.operand_images import exact_codes

OP_A, OP_B, OP_C, OP_FILLER = 0, 1, 2, 3
OP_METADATA, OP_UNSELECTED = 4, 5  # streams of the metadata nibbles and of unselected threads' words
ZERO = -1  # table entry: a zero byte
#: The legal metadata nibbles by field width: tf32's 1:2 pairs (2-bit fields counting 16-bit
#: halves), and the six (lower, higher) index pairs of 2:4 sparsity (1-bit fields).
NIBBLES = {2: np.array([0b0100, 0b1110], np.uint64),
           1: np.array([0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110], np.uint64)}
INPUTS = {"discriminating": 0, "exact": 1}  # the stream combination of each kind of inputs

_U = np.uint64


def entry(op: int, row: int, col: int, byte: int) -> int:
    """A word table entry: byte `byte` of element (row, col) of operand `op`."""
    return op << 24 | row << 16 | col << 8 | byte


def entries(op: np.ndarray | int, rows: np.ndarray, cols: np.ndarray, bytes: np.ndarray) -> np.ndarray:
    """`entry` on int arrays (broadcast), as int32."""
    return (np.asarray(op, np.int64) << 24 | np.asarray(rows, np.int64) << 16 | np.asarray(cols, np.int64) << 8
            | np.asarray(bytes, np.int64)).astype(np.int32)


@dataclass(frozen=True)
class StreamSpec:
    """What every code depends on besides (tile, row, col)."""

    params_a: np.ndarray  # uint64[14], numeric_stream.parameters(seed, combination, atype, dtype): A's codes and C's
    params_b: np.ndarray  # uint64[14], numeric_stream.parameters(seed, combination, btype, dtype): B's codes
    exact: bool  # True: codes are drawn from tables instead of ns_code's value families
    exact_codes: np.ndarray  # uint32, A's table | B's table | C's table concatenated (empty when not exact)
    exact_lengths: np.ndarray  # uint32[3]


@functools.lru_cache(maxsize=256)
def spec_for(seed: int, atype: str, btype: str, dtype: str, inputs: str) -> StreamSpec:
    """The stream of a program's formats and kind of inputs ("exact" or "discriminating"); one
    object per arguments (a campaign's launch groups share it, and a spool file holds it once).
    Read-only arrays."""
    combination = INPUTS[inputs]
    exact = inputs == "exact"
    tables = [exact_codes(atype), exact_codes(btype), exact_codes(dtype, accumulator=True)] if exact else []
    return StreamSpec(frozen(ns.parameters(seed, combination, atype, dtype)),
                      frozen(ns.parameters(seed, combination, btype, dtype)), exact,
                      frozen(np.concatenate(tables).astype(np.uint32) if exact else np.zeros(0, np.uint32)),
                      frozen(np.array([len(t) for t in tables] if exact else [0, 0, 0], np.uint32)))


def _stream_words(params: np.ndarray, op: int, tiles: np.ndarray, count: int) -> np.ndarray:
    """Words 0 .. count-1 of a per-tile stream: (u32) ns_mix(ns_row_key(params, op, tile, 0) + i), [P, count]."""
    keys = ns.row_keys(params, op, tiles, 1)[:, 0, :]
    return (ns.mix(keys + np.arange(count, dtype=np.uint64)) & _U(0xFFFFFFFF)).astype(np.uint32)


def codes(spec: StreamSpec, op: int, tiles: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Codes [P, rows, cols] (uint32) of operand `op` (A[m][k], B[n][k], C[m][n]) of the given tiles."""
    params = spec.params_b if op == OP_B else spec.params_a
    if not spec.exact:
        return ns.codes(params, op, tiles, rows, cols)
    start = int(spec.exact_lengths[:op].sum())
    table = spec.exact_codes[start:start + int(spec.exact_lengths[op])]
    h = ns.element_hashes(ns.row_keys(params, op, tiles, rows), np.arange(cols, dtype=np.uint64)[None, None, :])
    return table[(h % _U(len(table))).astype(np.int64)]


def words(spec: StreamSpec, tiles: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The words [P, W] (uint32) a word table [W, 4] (int32 entries) makes of each tile's operands."""
    tiles = np.asarray(tiles, np.uint64)
    table = np.asarray(table, np.int64)
    op, row, col, byte = (table >> 24) & 3, (table >> 16) & 0xFF, (table >> 8) & 0xFF, table & 3
    used = table >= 0
    out = np.zeros((len(tiles), *table.shape), np.uint32)
    for o in (OP_A, OP_B, OP_C):
        at = used & (op == o)
        if at.any():
            drawn = codes(spec, o, tiles, int(row[at].max()) + 1, int(col[at].max()) + 1)
            out[:, at] = (drawn[:, row[at], col[at]] >> (8 * byte[at]).astype(np.uint32)) & 0xFF
    w, b = np.nonzero(used & (op == OP_FILLER))
    filler = _stream_words(spec.params_a, OP_FILLER, tiles, table.shape[0])
    out[:, w, b] = (filler[:, w] >> (8 * b).astype(np.uint32)) & 0xFF
    return np.bitwise_or.reduce(out << (8 * np.arange(4, dtype=np.uint32)), axis=2)


def nibbles(spec: StreamSpec, tiles: np.ndarray, rows: int, groups: int, field_bits: int) -> np.ndarray:
    """Metadata nibbles [P, rows, groups] (uint64), each one of NIBBLES[field_bits]. Nibble g of row m
    holds four 1-bit metadata fields (field_bits 1: the 2:4 group of A's logical columns 4g .. 4g+3,
    stored elements 2g, 2g+1) or two 2-bit fields (field_bits 2: tf32's pair of logical columns 2g,
    2g+1, stored element g)."""
    legal = NIBBLES[field_bits]
    h = ns.element_hashes(ns.row_keys(spec.params_a, OP_METADATA, tiles, rows), np.arange(groups, dtype=np.uint64)[None, None, :])
    return legal[(h % _U(len(legal))).astype(np.int64)]


def metadata(spec: StreamSpec, tiles: np.ndarray, cells: np.ndarray, selected: np.ndarray, field_bits: int,
             k_logical: int) -> np.ndarray:
    """Each thread's metadata word [P, T] (uint32). `cells` [T, V]: the logical metadata element
    row * k_logical + col value v of thread t holds, at bit v * (32 // V); a thread not `selected`
    holds a word of its own stream (the instruction ignores it; its bits must not matter)."""
    cells = np.asarray(cells, np.int64)
    per_nibble = 4 // field_bits
    row, col = cells // k_logical, cells % k_logical
    group, shift = col // per_nibble, (field_bits * (col % per_nibble)).astype(np.uint64)
    drawn = nibbles(spec, tiles, int(row.max()) + 1, int(group.max()) + 1, field_bits)
    fields = (drawn[:, row, group] >> shift) & _U((1 << field_bits) - 1)
    place = (np.arange(cells.shape[1], dtype=np.uint64) * _U(32 // cells.shape[1]))
    words_ = np.bitwise_or.reduce(fields << place, axis=2).astype(np.uint32)
    other = _stream_words(spec.params_a, OP_UNSELECTED, np.asarray(tiles, np.uint64), cells.shape[0])
    return np.where(np.asarray(selected, bool), words_, other)


def columns(spec: StreamSpec, tiles: np.ndarray, rows: int, k_stored: int, field_bits: int) -> np.ndarray:
    """The logical column [P, rows, k_stored] (uint8) of stored A element j of row m, as the metadata
    nibbles select it: 2j + (which of its pair) for tf32, 4 (j // 2) + (index j % 2 of its nibble) for 2:4."""
    j = np.arange(k_stored)
    if field_bits == 2:
        picked = (nibbles(spec, tiles, rows, k_stored, 2) & _U(3)) >> _U(1)
        return (2 * j + picked).astype(np.uint8)
    drawn = nibbles(spec, tiles, rows, (k_stored + 1) // 2, 1)[:, :, j // 2]
    return (4 * (j // 2) + ((drawn >> (2 * (j % 2)).astype(np.uint64)) & _U(3))).astype(np.uint8)


def gather(images: np.ndarray, addresses: np.ndarray, element_bytes: int, rows: int, cols: int) -> np.ndarray:
    """Elements [P, rows, cols] (uint32) read little-endian, `element_bytes` wide, from byte images
    [P, bytes] at byte addresses [rows * cols]."""
    at = np.asarray(addresses, np.int64)[None, :] + np.arange(element_bytes)[:, None]
    read = np.asarray(images, np.uint8)[:, at].astype(np.uint32)  # [P, element_bytes, rows * cols]
    value = np.bitwise_or.reduce(read << (8 * np.arange(element_bytes, dtype=np.uint32))[None, :, None], axis=1)
    return value.reshape(len(images), rows, cols)
