"""Counter-based operand codes, the numpy twin of `numeric_stream.h`: every code is a pure
function of (seed, combination, operand, tile, row, column), so the GPU checker's kernels draw
their tiles on the device and the host redraws any tile exactly (tests/numerics/test_gpu_checker.py
proves the two agree). The value families follow `tcgen05_conformance.generators.numeric_vectors` (uniform bit
patterns, cancelling clusters, subnormals, near-overflow, NaN/Inf, c zero/tiny/dominant/special)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, get_format

#: The C source of the generator (included by the checker's CUDA and host programs).
C_SOURCE = Path(__file__).with_name("numeric_stream.h")

OP_A, OP_B, OP_C = 0, 1, 2
UNIFORM, FINITE, CLUSTER, CANCEL, SUBNORMAL, HUGE, SPARSE, SPECIAL, LOW = range(9)
# Family of each of the 16 slots a row key's top nibble picks (the C header's NS_* tables).
FLOAT_ROWS = 0x8876543332222210
FLOAT_C = 0x5444332222211000
INT_C = 0x4443332221111100
INT_ROWS = 0x2222111100000000
PARAMETER_COUNT = 14

_U = np.uint64


def _format_fields(name: str) -> list[int]:
    """(is_float, exp_bits, frac_bits, bias, field_shift, fn) of a format, as the header reads them."""
    fmt = get_format(name)
    if isinstance(fmt, FloatFormat):
        if fmt.specials not in ("ieee", "fn"):
            raise ValueError(f"the operand stream draws IEEE-like and fn formats, not {name}")
        return [1, fmt.exp_bits, fmt.frac_bits, fmt.bias, fmt.field_shift, int(fmt.specials == "fn")]
    if fmt.bits != 8 and name != "s32":
        raise ValueError(f"the operand stream draws 8-bit integer operands, not {name}")
    return [0, 0, 0, 0, 0, 0]


def parameters(seed: int, combination: int, in_fmt: str, acc_fmt: str) -> np.ndarray:
    """The flat uint64 parameter array the C side reads with `ns_from_array`."""
    return np.array([seed, combination, *_format_fields(in_fmt), *_format_fields(acc_fmt)], dtype=np.uint64)


def mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic, as in C)."""
    z = z + _U(0x9E3779B97F4A7C15)
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


class _Fmt:
    def __init__(self, fields: np.ndarray):
        self.is_float, self.exp_bits, self.frac_bits, self.bias, self.field_shift, self.fn = (int(x) for x in fields)
        self.top = (1 << self.exp_bits) - 1
        self.max_exp = self.top if self.fn else self.top - 1
        self.full = (1 << self.frac_bits) - 1

    def pack(self, h, e, frac):
        code = ((h & _U(1)) << _U(self.exp_bits + self.frac_bits)) | (e.astype(np.uint64) << _U(self.frac_bits)) | frac
        low = (h >> _U(40)) & _U((1 << self.field_shift) - 1)
        return ((code << _U(self.field_shift)) | low).astype(np.uint32)

    def frac(self, h):
        return (h >> _U(1)) & _U(self.full)

    def finite(self, h, e, frac):
        e = e.astype(np.int64)
        if not self.fn:
            e = np.where(e == self.top, e - 1, e)
        else:
            frac = np.where((e == self.top) & (frac == _U(self.full)), frac - _U(1), frac)
        return self.pack(h, e, frac)

    def cluster(self, key, h, low=False):
        r = key >> _U(8)
        if low:
            centre = min(max(self.bias * 13 // 32, 1), self.max_exp) + ((r >> _U(1)) % _U(self.bias // 16 + 1)).astype(np.int64)
        else:
            near = np.clip(self.bias + ((r >> _U(1)) % _U(9)).astype(np.int64) - 4, 1, self.max_exp)
            spread = 1 + ((r >> _U(1)) % _U(self.max_exp)).astype(np.int64)
            centre = np.where((r & _U(1)) == 1, near, spread)
        e = np.clip(centre + (_select(h) & _U(3)).astype(np.int64) - 1, 1, self.max_exp)
        return self.finite(h, e, self.frac(h))

    def special(self, h):
        if self.fn:
            return self.pack(h, np.full(h.shape, self.top), np.full(h.shape, self.full, np.uint64))
        inf = ((_select(h) >> _U(4)) & _U(1)) == 1
        return self.pack(h, np.full(h.shape, self.top), np.where(inf, _U(0), self.frac(h) | _U(1)))


def _select(h):
    return (h >> _U(32)) & _U(0xFFFFFF)


def _slot(table: int, bits: np.ndarray) -> np.ndarray:
    """The family of each slot index (the top nibble of `bits`)."""
    return ((_U(table) >> (_U(4) * (bits >> _U(60)))) & _U(15)).astype(np.int64)


def _float_elements(f: _Fmt, family, key, h):
    s = _select(h)
    e_any = ((h >> _U(24)) & _U(f.top)).astype(np.int64)
    frac = f.frac(h)
    cluster = f.cluster(key, h)
    choices = {
        UNIFORM: lambda: f.pack(h, e_any, frac),
        FINITE: lambda: f.finite(h, e_any, frac),
        SUBNORMAL: lambda: f.pack(h, np.where((s & _U(3)) != 0, 0, 1), frac),
        HUGE: lambda: f.finite(h, f.max_exp - (s & _U(1)).astype(np.int64), frac),
        SPARSE: lambda: np.where((s & _U(7)) != 0, f.pack(h, np.zeros(h.shape, np.int64), np.zeros(h.shape, np.uint64)), cluster),
        SPECIAL: lambda: np.where((s & _U(63)) != 0, cluster, f.special(h)),
        LOW: lambda: f.cluster(key, h, low=True),
    }
    out = cluster.copy()
    for fam, make in choices.items():
        rows = family == fam
        if rows.any():
            out = np.where(rows, make(), out)
    return out


def _c_elements(f: _Fmt, h):
    s = _select(h)
    if not f.is_float:
        family = _slot(INT_C, h)
        values = [np.zeros(h.shape, np.uint32),
                  ((s & _U(0xFFFF)).astype(np.int64) - 32768).astype(np.uint32),
                  (0x7FFFFFFF - (s & _U(0xFFFFF))).astype(np.uint32),
                  (0x80000000 + (s & _U(0xFFFFF))).astype(np.uint32),
                  (h >> _U(16)).astype(np.uint32)]
        return np.choose(family, values)
    family = _slot(FLOAT_C, h)
    frac = f.frac(h)
    values = [f.pack(h, np.zeros(h.shape, np.int64), np.zeros(h.shape, np.uint64)),
              f.pack(h, (s & _U(1)).astype(np.int64), frac),
              f.pack(h, np.clip(f.bias + (s % _U(41)).astype(np.int64) - 20, 1, f.max_exp), frac),
              f.pack(h, np.clip(f.max_exp - (s % _U(8)).astype(np.int64), 1, f.max_exp), frac),
              f.pack(h, ((h >> _U(24)) & _U(f.top)).astype(np.int64), frac),
              f.special(h)]
    return np.choose(family, values)


def _int_elements(family, h):
    s = _select(h)
    extreme = (_U(0x01FF807F) >> (_U(8) * (s & _U(3)))) & _U(0xFF)
    small = (s % _U(9) + _U(252)) & _U(0xFF)
    return np.choose(family, [h & _U(0xFF), extreme, small]).astype(np.uint32)


def row_keys(params: np.ndarray, op: int, tiles: np.ndarray, rows: int) -> np.ndarray:
    """`ns_row_key` of rows 0 .. rows-1 of the given tiles under stream `op` (uint64 [len(tiles), rows, 1]):
    the key every element hash of a row starts from (ops beyond OP_C name other streams of the same seed)."""
    p = np.asarray(params, dtype=np.uint64)
    seed, combination = p[0], p[1]
    stream = mix(mix(np.array([seed]))[0:1] ^ ((combination << _U(8)) | _U(op)))
    tile = np.asarray(tiles, dtype=np.uint64)[:, None, None]
    row = np.arange(rows, dtype=np.uint64)[None, :, None]
    return mix(stream ^ ((tile << _U(8)) | row))


def element_hashes(keys: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`ns_element_hash` of row keys and columns (uint64, broadcast)."""
    return mix(keys + np.asarray(cols, dtype=np.uint64) + _U(1))


def codes(params: np.ndarray, op: int, tiles: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Raw codes [len(tiles), rows, cols] (uint32) of operand `op` (OP_A: A[m][k], OP_B: B[n][k],
    OP_C: C[m][n]) of the given global tile indices, exactly as `ns_code` draws them."""
    p = np.asarray(params, dtype=np.uint64)
    col = np.arange(cols, dtype=np.uint64)[None, None, :]
    key = row_keys(p, op, tiles, rows)
    h = element_hashes(key, col)
    if op == OP_C:
        return _c_elements(_Fmt(p[8:14]), h)
    f = _Fmt(p[2:8])
    if not f.is_float:
        return _int_elements(_slot(INT_ROWS, key), h)
    family = np.broadcast_to(_slot(FLOAT_ROWS, key), h.shape)
    out = _float_elements(f, family, key, h)
    pair = element_hashes(key, col & ~_U(1))
    cancel = np.broadcast_to(f.cluster(key, pair), h.shape)
    if op == OP_A:
        flip = np.uint32(1 << (f.exp_bits + f.frac_bits + f.field_shift))
        cancel = np.where((col & _U(1)) == 1, cancel ^ flip, cancel)
    return np.where(family == CANCEL, cancel, out).astype(np.uint32)
