"""Matrix products through the numeric profiles: D[i, j] = sum_k A[i, k] B[j, k] + C[i, j].

This is the arithmetic interface the oracle calls. Every profile goes through the inner-product
model (`inner_product`); the `exact` profile has a fast path for finite floating-point inputs: a
float64 matrix product is exact whenever every term is a multiple of 2^L and the sum of the
magnitudes stays below 2^(L + 52), since then every partial sum is representable in any order
(L is bounded below by the lowest bit of the row of A plus that of the column of B);
one cast to the accumulator format is then the single round-to-nearest-even the profile
prescribes. Elements that miss the condition, or have a non-finite input or a zero sum (whose
sign needs IEEE's rules), take the model's path.

`evaluate` takes many products at once (the MMAs of many programs): their inner products that
share formats, K and profile go through the model in one vectorised call, which costs far less
than one call per program (the model's fixed cost per call is that of a few thousand rows);
`matmul` and `sparse_matmul` are `evaluate` of one product.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tcgen05_conformance.core.formats import VALUE_DTYPES, get_format, storage_dtype, values

from .model import inner_product
from .profiles import Profile, get_profile

FAST_FORMATS = frozenset(VALUE_DTYPES) | {"tf32"}
ACC_DTYPES = {"f32": np.float32, "f16": np.float16}
NEVER = np.int64(1 << 40)  # the lsb exponent of a zero term: larger than any real one


def lsb_exponent(x: np.ndarray) -> np.ndarray:
    """The exponent of the lowest set bit of each finite float64 (NEVER for zeros)."""
    mantissa, exponent = np.frexp(x)
    integer = np.abs(mantissa * 2.0**53).astype(np.int64)
    lowest = integer & -integer
    trailing = np.frexp(lowest.astype(np.float64))[1] - 1
    return np.where(x == 0, NEVER, exponent.astype(np.int64) - 53 + trailing)


def _exact_fast(a, b, c, afmt, bfmt, acc):
    """(result codes, done mask) of the exact profile's float fast path."""
    av, bv, cv = values(a, afmt), values(b, bfmt), values(c, acc)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite inputs leave the fast path below
        total = np.abs(av) @ np.abs(bv).T + np.abs(cv)
        # A lower bound of each product's lowest bit: the row's lowest bit plus the column's.
        la, lb = lsb_exponent(av).min(axis=1, initial=NEVER), lsb_exponent(bv).min(axis=1, initial=NEVER)
        lowest = np.minimum(la[:, None] + lb[None, :], lsb_exponent(cv))
        exact_sum = av @ bv.T + cv
        finite_in = np.isfinite(av).all(axis=1)[:, None] & np.isfinite(bv).all(axis=1)[None, :] & np.isfinite(cv)
        bound = np.ldexp(1.0, np.clip(lowest + 52, -1070, 1023).astype(np.int32))
        done = finite_in & (total < bound) & (exact_sum != 0)
        rounded = exact_sum.astype(ACC_DTYPES[acc])
    width = np.dtype(ACC_DTYPES[acc]).itemsize * 8
    return rounded.view(np.uint32 if width == 32 else np.uint16).astype(np.uint32), done


@dataclass(frozen=True)
class MatrixProduct:
    """The inner products of one MMA, to be evaluated: D[i, j] = sum_k A[i, k] B[j, k] + C[i, j]
    from codes A [M, K], B [N, K], C [M, N] (uint32); with `columns` [M, K] a structured-sparse A
    given by its stored elements, row i multiplying B[j, columns[i, k]]; with `a_scale` [M, F] and
    `b_scale` [N, F], the scale codes of a block-scaled `kind`. `profile` names the numeric model."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    afmt: str
    bfmt: str
    acc: str
    profile: str | Profile
    columns: np.ndarray | None = None
    a_scale: np.ndarray | None = None
    b_scale: np.ndarray | None = None
    scale_fmt: str = "ue8m0"
    saturate: bool | None = None
    kind: str | None = None  # the block-scaled kind (its datapath in the profile); None: from formats and K

    def rows(self, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The A, B and C codes of the inner products at (rows, cols), in the storage dtypes the
        model takes: [R, K], [R, K], [R]."""
        a, b = _typed(self.a, self.afmt), _typed(self.b, self.bfmt)  # narrowed before the rows repeat them
        # np.take along an axis, not fancy indexing: several times faster for a few bytes per row
        if self.columns is None:
            b = np.take(b, cols, axis=0)
        else:  # B's rows at each A row's columns, [N, M, K'], then the pairs asked for
            m = self.columns.shape[0]
            b = np.take(np.take(b, self.columns, axis=1).reshape(b.shape[0] * m, -1), cols * m + rows, axis=0)
        return np.take(a, rows, axis=0), b, _typed(self.c[rows, cols], self.acc)

    def key(self) -> tuple:
        """What inner products must share to be evaluated in one call of the model."""
        return (id(get_profile(self.profile)), self.afmt, self.bfmt, self.acc, self.a.shape[1], self.saturate,
                None if self.a_scale is None else (self.scale_fmt, self.a_scale.shape[1], self.kind))


ROWS_PER_CALL = 1 << 18  # inner products per call of the model: bounds the operands gathered at once (~64 MiB)


def evaluate(products: Sequence[MatrixProduct]) -> list[np.ndarray]:
    """Codes of each product's D [M, N] (uint32). The inner products of every product sharing
    formats, K and profile go through the model in one vectorised call (the model computes each
    row on its own, so batching changes no result); the `exact` profile's fast path serves each
    dense product first."""
    outs: list[np.ndarray] = []
    pending: dict[tuple, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for i, p in enumerate(products):
        m, n = p.c.shape
        out = np.zeros((m, n), dtype=np.uint32)
        todo = np.ones((m, n), dtype=bool)
        if (p.profile == "exact" and p.columns is None and p.a_scale is None
                and {p.afmt, p.bfmt} <= FAST_FORMATS and p.acc in ACC_DTYPES):
            fast, done = _exact_fast(p.a, p.b, p.c, p.afmt, p.bfmt, p.acc)
            out[done] = fast[done]
            todo = ~done
        outs.append(out)
        if todo.any():
            pending.setdefault(p.key(), []).append((i, *np.nonzero(todo)))
    for parts in pending.values():
        batch: list[tuple[int, np.ndarray, np.ndarray]] = []
        size = 0
        for part in parts:
            if batch and size + part[1].size > ROWS_PER_CALL:
                _evaluate_rows(products, batch, outs)
                batch, size = [], 0
            batch.append(part)
            size += part[1].size
        _evaluate_rows(products, batch, outs)
    return outs


def _evaluate_rows(products: Sequence[MatrixProduct], parts: list[tuple[int, np.ndarray, np.ndarray]],
                   outs: list[np.ndarray]) -> None:
    """One call of the model over the inner products (product index, rows, cols) of `parts`,
    which share a key; the results go into `outs`."""
    first = products[parts[0][0]]
    gathered = [products[i].rows(rows, cols) for i, rows, cols in parts]
    a, b, c = (np.concatenate([g[k] for g in gathered]) for k in range(3))
    scales = {}
    if first.a_scale is not None:
        scales = {"a_scale": np.concatenate([products[i].a_scale[rows] for i, rows, _ in parts]),
                  "b_scale": np.concatenate([products[i].b_scale[cols] for i, _, cols in parts]),
                  "scale_fmt": first.scale_fmt, "kind": first.kind}
    result = inner_product(a, b, c, (first.afmt, first.bfmt), first.acc, first.profile, saturate=first.saturate, **scales)
    words = result.view(result.dtype.str.replace("i", "u")).astype(np.uint32)
    start = 0
    for i, rows, cols in parts:
        outs[i][rows, cols] = words[start:start + rows.size]
        start += rows.size


def matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, afmt: str, bfmt: str, acc: str, profile: str | Profile, *,
           a_scale: np.ndarray | None = None, b_scale: np.ndarray | None = None, scale_fmt: str = "ue8m0",
           saturate: bool | None = None, kind: str | None = None) -> np.ndarray:
    """Codes of D [M, N] (uint32) from codes A [M, K], B [N, K], C [M, N] and, for block-scaled
    kinds, scale codes A [M, F] and B [N, F] (`kind` names the kind): `evaluate` of one product."""
    return evaluate([MatrixProduct(a, b, c, afmt, bfmt, acc, profile, a_scale=a_scale, b_scale=b_scale,
                                   scale_fmt=scale_fmt, saturate=saturate, kind=kind)])[0]


def sparse_matmul(a: np.ndarray, b: np.ndarray, columns: np.ndarray, c: np.ndarray, afmt: str, bfmt: str, acc: str,
                  profile: str | Profile, *, saturate: bool | None = None) -> np.ndarray:
    """Codes of D [M, N] = sum_k A[i, k] B[j, columns[i, k]] + C[i, j]: a structured-sparse A given
    by its stored elements [M, K'] and their logical columns [M, K'] (each row selects its own B
    rows), summed through the profile's model over the stored elements: `evaluate` of one product."""
    return evaluate([MatrixProduct(a, b, c, afmt, bfmt, acc, profile, columns=columns, saturate=saturate)])[0]


def _typed(codes: np.ndarray, fmt: str) -> np.ndarray:
    """uint32 codes in the storage dtype `inner_product` takes for `fmt` (signed for s8/s32)."""
    dtype = storage_dtype(get_format(fmt))
    return codes.astype(dtype.str.replace("i", "u")).view(dtype)
