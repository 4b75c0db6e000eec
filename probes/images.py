"""The data of a probe: shared-memory and TMEM images holding chosen values where the ISA's
layout functions (`tcgen05_conformance.core.layouts.smem`, `tcgen05_conformance.core.layouts.tmem`) place them,
the ones the oracle reads through, written with the program generator's writers
(`tcgen05_conformance.generators.operand_images`). Unlike generated programs, probes pick their values (ones,
distinct rows, one-hot columns ...) so that the interpretations give different results, and
bytes no operand reads hold a chosen fill, not random bits.
"""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.formats import VALUE_DTYPES, values
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.smem import SWIZZLE_ROW_BYTES, element_bit_addresses, storage_for
from tcgen05_conformance.core.layouts.tmem import scale_factor_positions
from tcgen05_conformance.core.program import Program, SmemSegment, TmemRegion
from tcgen05_conformance.generators.operand_images import write_bits, write_word_fields

CORE_ROWS = 8  # rows of a core matrix (9.7.16.3.3)
CHUNK = 16  # bytes of a core-matrix row
K96_SCALE_BYTES = 8  # K = 96: two groups of four factors per row (column): up to SF_ID 2 + 6 factors
SUBPARTITIONS = dm.TMEM_LANES // dm.LANES_PER_WARP_QUARTER


def codes(fmt: str, x) -> np.ndarray:
    """The codes (uint32) of values `x` in an element format; every value must be exact in it."""
    x = np.asarray(x, dtype=np.float64)
    if fmt in ("f32", "tf32"):
        c = x.astype(np.float32).view(np.uint32)
    else:
        dtype = VALUE_DTYPES[fmt]
        c = x.astype(dtype).view(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint8)
    c = c.astype(np.uint32)
    if not np.array_equal(values(c, fmt), x) or not np.array_equal(np.signbit(values(c, fmt)), np.signbit(x)):
        raise ValueError(f"values not exact in {fmt}")
    return c


def kmajor(start: int, rows: int, swizzle: str = "none", base_offset: int = 0) -> sdesc_codec.SmemDescriptor:
    """A K-major canonical layout (9.7.16.3.3) at `start`: without swizzle, core matrices of 8 rows
    x 16 bytes, row groups at SBO = 128 and K chunks at LBO = 128 x row groups; swizzled, the
    swizzle rows of one 8-row group in turn and the groups at SBO = 8 rows (LBO unused, 16)."""
    if swizzle == "none":
        return sdesc_codec.SmemDescriptor(start, CORE_ROWS * CHUNK * -(-rows // CORE_ROWS), CORE_ROWS * CHUNK)
    return sdesc_codec.SmemDescriptor(start, CHUNK, CORE_ROWS * SWIZZLE_ROW_BYTES[swizzle], swizzle, base_offset)


class Images:
    """Per CTA, a shared-memory image from byte 0 (grown as operands are written, new bytes
    `smem_fill`) and the TMEM image of the allocation (every word `tmem_fill` to start with)."""

    def __init__(self, ctas: int = 1, columns: int = 32, tmem_fill: int = 0, smem_fill: int = 0):
        self.smem = [np.zeros(0, np.uint8) for _ in range(ctas)]
        self.tmem = np.full((ctas, dm.TMEM_LANES, columns), tmem_fill, np.uint32)
        self.smem_fill = smem_fill

    def end(self, align: int = 1024) -> int:
        """The first `align`-aligned byte past every CTA's image: where the next operand goes."""
        return -(-max(image.size for image in self.smem) // align) * align

    def _grow(self, cta: int, end: int) -> np.ndarray:
        end = -(-end // CHUNK) * CHUNK
        if end > self.smem[cta].size:
            grown = np.full(end, self.smem_fill, np.uint8)
            grown[:self.smem[cta].size] = self.smem[cta]
            self.smem[cta] = grown
        return self.smem[cta]

    def smem_bytes(self, cta: int, offset: int, data: np.ndarray) -> None:
        self._grow(cta, offset + data.size)[offset:offset + data.size] = data

    def smem_operand(self, cta: int, desc: sdesc_codec.SmemDescriptor, k_major: bool, element_codes: np.ndarray,
                     type_name: str, padded: bool = False) -> None:
        """Element codes [rows, K] of a matrix operand where the oracle gathers them from (padded:
        the 4/6-bit format of .kind::f8f6f4, 16 elements at the start of each 16-byte chunk)."""
        storage = storage_for(isa.TYPE_BITS[type_name], padded)
        addresses = element_bit_addresses(desc, k_major, *element_codes.shape, storage)
        image = self._grow(cta, int(addresses.max()) // 8 + 1)
        write_bits(image, addresses, element_codes, storage.bits)

    def tmem_fields(self, cta: int, lanes: np.ndarray, columns: np.ndarray, offsets: np.ndarray,
                    field_codes: np.ndarray, bits: int) -> None:
        write_word_fields(self.tmem[cta], lanes, columns, offsets, field_codes, bits)

    def k96_scale_bytes(self, cta: int, column: int, byte_codes: np.ndarray, groups: int) -> None:
        """The 8 scale-factor bytes [count, 8] of each row (of A) or column (of B) of a K = 96
        MMA in the 4x1 data path, where the oracle reads factor b (`groups` columns per four
        factors), duplicated into the four 32-lane subpartitions (9.7.16.10.7)."""
        index = np.arange(byte_codes.shape[0])
        for p in range(SUBPARTITIONS):
            lanes, columns, offsets = scale_factor_positions(np.full(index.shape, p), index, column, K96_SCALE_BYTES, 0, groups)
            self.tmem_fields(cta, lanes, columns, offsets, byte_codes, 8)

    def program(self, target: str, ops: tuple, tmem: bool = True) -> Program:
        """The program: each CTA's shared memory from byte 0, and its whole TMEM allocation unless
        all zero (the state TMEM starts in)."""
        ctas, _, columns = self.tmem.shape
        regions = tuple(TmemRegion(0, 0, dm.TMEM_LANES, columns, self.tmem[c].astype("<u4").tobytes(), c)
                        for c in range(ctas) if self.tmem[c].any()) if tmem else ()
        return Program(target=target, ops=ops, ctas=ctas, tmem_columns=columns if tmem else 512,
                       smem=tuple(SmemSegment(0, image.tobytes(), c) for c, image in enumerate(self.smem) if image.size),
                       tmem=regions)
