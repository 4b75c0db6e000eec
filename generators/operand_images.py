"""The data of a generated tcgen05 program: shared-memory and TMEM images that hold every operand
an MMA reads, with legal sparsity metadata and duplicated scale factors.

Values are *exact inputs* (DESIGN.md principle 3): small multiples of 1/4, so that the data
movement under test, not rounding, decides the result; bytes no operand reads hold random bits.
The placements come from the ISA's layout functions the oracle reads through
(`tcgen05_conformance.core.layouts.smem`, `tcgen05_conformance.core.layouts.tmem`), so a generated program reads
exactly the data written for it.
"""

from __future__ import annotations

import functools

import numpy as np

from tcgen05_conformance.core.formats import values
from tcgen05_conformance.core.isa import mma as isa

SMALL_VALUES = np.arange(-16, 17) / 4  # -4 .. 4 in steps of 1/4
ACC_VALUES = np.arange(-256, 257) / 4
INT_VALUES = {"s8": np.arange(-8, 9), "u8": np.arange(0, 9), "s32": np.arange(-64, 65)}
SCALE_CODES = {"ue8m0": np.arange(124, 131), "ue4m3": np.array([0x30, 0x38, 0x3C, 0x40])}  # 2^-3..2^3; 0.5..2


@functools.cache
def exact_codes(fmt: str, accumulator: bool = False) -> np.ndarray:
    """The codes of a format whose values are small multiples of 1/4 (uint32)."""
    if fmt in INT_VALUES:
        return (INT_VALUES[fmt].astype(np.int64) & (0xFF if fmt != "s32" else 0xFFFFFFFF)).astype(np.uint32)
    wanted = ACC_VALUES if accumulator else SMALL_VALUES
    if fmt in ("f32", "tf32"):
        return np.unique(wanted.astype(np.float32).view(np.uint32))
    bits = isa.TYPE_BITS[fmt]
    codes = np.arange(1 << bits, dtype=np.uint32)
    v = values(codes, fmt)
    return codes[np.isin(v, wanted)]


def write_bits(image: np.ndarray, bit_addresses: np.ndarray, codes: np.ndarray, bits: int) -> None:
    """Write `bits`-wide little-endian fields into a uint8 image at bit addresses (in order; a
    later field wins where two overlap)."""
    addresses, codes = bit_addresses.ravel(), codes.ravel().astype(np.uint64)
    size = bits // 8
    if (bits in (8, 16, 32) and image.ndim == 1 and image.flags.c_contiguous and image.size % size == 0
            and not (addresses % bits).any()):
        # whole words at addresses aligned to their size (every wgmma operand): one store of
        # the image viewed as words does what the byte loop below does, a later field still winning
        image.view(f"<u{size}")[addresses // bits] = codes.astype(f"<u{size}")
        return
    if bits % 8 == 0 and not (addresses & 7).any():
        for i in range(bits // 8):
            image[(addresses >> 3) + i] = ((codes >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
        return
    for address, code in zip(addresses.tolist(), codes.tolist()):
        byte, shift = address >> 3, address & 7
        span = (shift + bits + 7) // 8
        word = int.from_bytes(image[byte:byte + span].tobytes(), "little")
        word = (word & ~(((1 << bits) - 1) << shift)) | (code << shift)
        image[byte:byte + span] = np.frombuffer(word.to_bytes(span, "little"), dtype=np.uint8)


def write_word_fields(tmem: np.ndarray, lanes: np.ndarray, columns: np.ndarray, offsets: np.ndarray,
                      codes: np.ndarray, bits: int) -> None:
    """Write fields into TMEM words (uint32 [128, columns]) at (lane, column, bit offset); fields
    that share a word must not overlap."""
    offsets = np.broadcast_to(offsets, lanes.shape).astype(np.uint32)
    mask = np.uint32((1 << bits) - 1) << offsets
    where = (lanes.ravel(), np.broadcast_to(columns, lanes.shape).ravel())
    np.bitwise_and.at(tmem, where, ~mask.ravel())
    np.bitwise_or.at(tmem, where, ((np.broadcast_to(codes, lanes.shape).astype(np.uint32) << offsets) & mask).ravel())
