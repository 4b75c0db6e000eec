"""Exact conversions between binary32 words and raw encodings of the other formats.

The recorded vector files write every input as the bit pattern of a binary32 that holds the
exact low-precision value; these helpers turn such words into raw encodings of the input
format (raising if a value is not exactly representable) and back.  Rounding conversions
(``f32_to_f16_rne``) exist only where the recordings used them: the harness rounded c to
binary16 with ``__float2half`` (round to nearest even) for fp16-output runs.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.formats import INF, NAN, FloatFormat, decode, encode_finite, get_format, storage_dtype

from .fixedpoint import round_scaled

_F32 = get_format("f32")


class NotRepresentable(ValueError):
    """A value cannot be converted exactly; ``index`` is the flat position of the first one."""

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.index = index


def _convert(bits: np.ndarray, src: FloatFormat, dst: FloatFormat, mode: str | None) -> np.ndarray:
    """Convert raw ``src`` encodings to ``dst`` (exactly when ``mode`` is None)."""
    bits = np.asarray(bits)
    d = decode(bits, src)
    flat_cls = d.cls.ravel()
    S = np.where(d.sign == 1, -d.mant, d.mant).ravel().astype(np.int64)
    t = (d.aexp - src.frac_bits).ravel()
    r = round_scaled(S, t, dst.precision, dst.emin, dst.emax, dst.max_mant, mode or "rne")
    sign = d.sign.ravel().astype(np.int64)
    out = encode_finite(sign, r.q, r.aexp, dst)
    finite = flat_cls <= 1
    if mode is None:
        bad = finite & r.inexact
        if dst.specials != "ieee":
            bad |= flat_cls == INF
        if dst.specials == "none":
            bad |= flat_cls == NAN
        if bad.any():
            i = int(np.argmax(bad))
            raise NotRepresentable(
                f"value {_describe(bits.ravel()[i], src)} is not exactly representable "
                f"in {dst.name}",
                i,
            )
    out = _specials(out, flat_cls, sign, r, dst, mode)
    return out.reshape(bits.shape)


def _specials(out, cls, sign, r, dst: FloatFormat, mode) -> np.ndarray:
    dt = storage_dtype(dst)
    if dst.specials == "ieee":
        inf = (
            (((1 << dst.exp_bits) - 1) << dst.frac_bits) | (sign << (dst.exp_bits + dst.frac_bits))
        ) << dst.field_shift
        out = np.where(
            (cls == INF) | (r.overflow & (cls <= 1) & (mode == "rne")), inf.astype(dt), out
        )
        nan = (((1 << (dst.exp_bits + 1)) - 1) << (dst.frac_bits - 1)) << dst.field_shift
        out = np.where(cls == NAN, dt.type(nan), out)
    elif dst.specials == "fn":
        nan = (1 << (dst.exp_bits + dst.frac_bits)) - 1
        out = np.where(cls == NAN, dt.type(nan), out)
    return out


def _describe(word, fmt: FloatFormat) -> str:
    return f"0x{int(word):0{fmt.container_bits // 4}x} ({fmt.name})"


def from_binary32(words: np.ndarray, fmt: str | FloatFormat) -> np.ndarray:
    """Raw ``fmt`` encodings of the values held exactly by binary32 ``words`` (uint32).

    Raises :class:`NotRepresentable` if a value is not exactly representable (NaN maps to a
    NaN of ``fmt`` where it has one).
    """
    dst = get_format(fmt)
    if not isinstance(dst, FloatFormat):
        raise ValueError("from_binary32 converts to floating-point formats only")
    return _convert(np.asarray(words, dtype=np.uint32), _F32, dst, None)


def to_binary32(bits: np.ndarray, fmt: str | FloatFormat) -> np.ndarray:
    """binary32 words (uint32) holding exactly the values of raw ``fmt`` encodings."""
    src = get_format(fmt)
    if not isinstance(src, FloatFormat):
        raise ValueError("to_binary32 converts from floating-point formats only")
    return _convert(np.asarray(bits), src, _F32, None)


def f32_to_f16_rne(words: np.ndarray) -> np.ndarray:
    """binary32 words rounded to binary16 encodings, round to nearest even (like __float2half)."""
    return _convert(np.asarray(words, dtype=np.uint32), _F32, get_format("f16"), "rne")


def binary32_to_float(words: np.ndarray) -> np.ndarray:
    """View binary32 words as numpy float32 values (for display)."""
    return np.asarray(words, dtype=np.uint32).view(np.float32)
