"""Random raw encodings of a format, for tests and benchmarks.

``spread=None`` draws uniformly over all codes (so NaN, Inf, zeros and subnormals appear
at their natural rates); an integer ``spread`` draws exponent fields within ``bias +/-
spread`` (finite values of moderate range, like the recorded vectors), with a fraction
``zeros`` of exact zeros.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, IntFormat, code_bits, get_format, storage_dtype


def random_bits(
    fmt: str, shape, rng: np.random.Generator, spread: int | None = None, zeros: float = 0.05
) -> np.ndarray:
    """Raw encodings of ``fmt`` with the given shape (see module docstring)."""
    f = get_format(fmt)
    if isinstance(f, IntFormat):
        return rng.integers(f.lo, f.hi + 1, shape).astype(storage_dtype(f))
    assert isinstance(f, FloatFormat)
    if spread is None:
        x = rng.integers(0, 1 << code_bits(f), shape, dtype=np.int64)
    else:
        top = (1 << f.exp_bits) - 1 - (1 if f.specials in ("ieee", "e8m0") else 0)
        e = np.clip(f.bias + rng.integers(-spread, spread + 1, shape), 0, top)
        x = (e << f.frac_bits) | rng.integers(0, 1 << f.frac_bits, shape)
        if f.signed:
            x |= rng.integers(0, 2, shape) << (f.exp_bits + f.frac_bits)
        if f.specials == "fn":  # avoid the NaN code S.1111.111
            nan = (1 << (f.exp_bits + f.frac_bits)) - 1
            x = np.where((x & nan) == nan, x - 1, x)
        if zeros:
            x = np.where(rng.random(shape) < zeros, x & (1 << (f.exp_bits + f.frac_bits)), x)
    return (x << f.field_shift).astype(storage_dtype(f))
