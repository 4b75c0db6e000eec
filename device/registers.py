"""Register images for the device kernels: a batch of matrices packed into the per-thread
register words a fragment (`tcgen05_conformance.core.isa.fragments`) prescribes, and back."""

from __future__ import annotations

import numpy as np


def _codes_u32(x: np.ndarray) -> np.ndarray:
    """The raw codes of `x` as uint32 (`x` itself when it is uint32 already)."""
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint32, copy=False)


def pack_registers(matrix: np.ndarray, rows: np.ndarray, cols: np.ndarray, bits: int) -> np.ndarray:
    """Fragment words [tiles, registers, threads] of `matrix` [tiles, R, C] (raw codes), element
    j of a register at bit j * bits.

    The elements are taken by their flat index in one `np.take` per tile row, and each register's
    few elements or-ed in one by one: a fifth of the time of indexing with (rows, cols) and
    reducing over the elements."""
    codes = _codes_u32(matrix)
    elements = np.take(codes.reshape(codes.shape[0], -1), rows * codes.shape[2] + cols, axis=1)  # [tiles, registers, threads, per]
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    words = elements[..., 0] & mask
    for j in range(1, rows.shape[-1]):
        words |= (elements[..., j] & mask) << np.uint32(j * bits)
    return words


def unpack_registers(words: np.ndarray, rows: np.ndarray, cols: np.ndarray, bits: int, shape: tuple[int, int],
                     dtype) -> np.ndarray:
    """The inverse of `pack_registers`: a matrix [tiles, *shape] of raw codes of `dtype`."""
    per = rows.shape[-1]
    shifts = np.arange(per, dtype=np.uint32) * bits
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    codes = (words[..., None] >> shifts) & mask
    out = np.zeros((words.shape[0], *shape), np.uint32)
    out[:, rows, cols] = codes
    return out.astype(np.dtype(f"u{np.dtype(dtype).itemsize}")).view(dtype)
