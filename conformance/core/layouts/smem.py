"""Where each element of a matrix operand lies in shared memory, given its matrix descriptor.

The canonical layouts are PTX ISA 9.7.16.3.3 (the same for wgmma: 9.7.15.5.1.2), restated in
units of 16-byte chunks as in CUTLASS `include/cute/arch/mma_sm100_desc.hpp` (`make_umma_desc`
comment block). For an element at (row, k), where row runs along M or N:

* K-major: the chunk is (row % 8, row // 8, k // T) and the element is k % T within it; a row
  wider than its swizzle atom continues in the next atom, LBO bytes on (measured on the H100,
  assumption A-WGMMA-SP-KMAJOR-ATOM: the ISA's "LBO not used" covers rows that fit the atom);
* MN-major: the chunk is (row // T, k) and the element is row % T within it;

with T elements per chunk. The chunk's byte address is then swizzled on address bits: bits [7, 7+B)
XORed into bits [M, M+B) (Swizzle<B,M,3>/<2,5,2>, the table's last column), taking the row phase
relative to the descriptor's matrix base offset (Table 41; assumption A-SDESC-BASE-OFFSET).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.encoding.sdesc import SmemDescriptor
from tcgen05_conformance.core.isa.swizzle import SWIZZLE_MODES
from tcgen05_conformance.core.memo import frozen, memo


@dataclass(frozen=True)
class ChunkStrides:
    """Byte strides of one canonical layout: `k_major`; for K-major (row%8, row//8, k-chunk % atom,
    k-chunk // atom), for MN-major (mn-chunk % atom, mn-chunk // atom, k % k_atom, k // k_atom)."""

    k_major: bool
    strides: tuple[int, ...]
    atom: int = 1  # chunks inside one swizzle row: along MN (MN-major) or K (K-major)
    k_atom: int = 8  # K rows inside one swizzle atom (MN-major)


# Swizzle<B, M, S> per mode: (B, M) = (log2(swizzle width / atomicity), log2(atomicity)); the
# source bits always start at bit 7 (M + S = 7). PTX ISA 9.7.16.3.3 (last column) and, for 128B
# with 32B atomicity, CUTLASS include/cute/atom/mma_traits_sm100.hpp `Layout_MN_SW128_32B_Atom_Bits`
# (Swizzle<2,5,2>).
SWIZZLE_BITS = {
    name: ((mode.span_bytes // mode.atom_bytes).bit_length() - 1 if mode.span_bytes else 0, mode.atom_bytes.bit_length() - 1)
    for name, mode in SWIZZLE_MODES.items()
}
# Bytes of one row of the swizzle pattern (the "W" of the canonical layouts): one 16-byte atom unswizzled.
SWIZZLE_ROW_BYTES = {name: mode.span_bytes or mode.atom_bytes for name, mode in SWIZZLE_MODES.items()}


def canonical_strides(d: SmemDescriptor, k_major: bool) -> ChunkStrides:
    """The canonical layout a descriptor selects (PTX ISA 9.7.16.3.3; LBO/SBO meaning 9.7.16.3.1-2)."""
    lbo, sbo, mode = d.leading_byte_offset, d.stride_byte_offset, d.swizzle
    row = SWIZZLE_ROW_BYTES[mode]
    if k_major:
        # ((8,m),(T,2k)): no swizzle ((1T,SBO),(1,LBO)); swizzled ((W T,SBO),(1,T)), and a row wider
        # than the atom W continues LBO bytes on (A-WGMMA-SP-KMAJOR-ATOM, measured on the H100).
        return ChunkStrides(True, (16, sbo, 0, lbo)) if mode == "none" else ChunkStrides(True, (row, sbo, 16, lbo), atom=row // 16)
    if mode == "none":
        # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)): chunks along MN at SBO, K rows at 16 B, K octets at LBO.
        return ChunkStrides(False, (0, sbo, 16, lbo), atom=1)
    # ((T,W/16,m),(8,k)):((1,T,LBO),(W/16 T,SBO)); 32B atomicity: 4 K rows per atom (CUTLASS).
    k_atom = 4 if mode == "128B_base32B" else 8
    return ChunkStrides(False, (16, lbo, row, sbo), atom=row // 16, k_atom=k_atom)


def swizzle(addresses: np.ndarray, mode: str, base_offset: int) -> np.ndarray:
    """Apply a swizzle mode to byte addresses: the pattern row is (address bits 7..) minus the
    matrix base offset (Table 41; assumption A-SDESC-BASE-OFFSET)."""
    b, m = SWIZZLE_BITS[mode]
    if b == 0:
        return addresses
    phase = ((addresses >> 7) - base_offset) & ((1 << b) - 1)
    return addresses ^ (phase << m)


@dataclass(frozen=True)
class ElementStorage:
    """How elements sit in shared memory: `per_chunk` elements in each 16-byte chunk, `bits` each,
    element i of a chunk at bit i * bits (packed from the chunk's first byte)."""

    per_chunk: int
    bits: int


def storage_for(element_bits: int, padded: bool) -> ElementStorage:
    """Plain packing (128 / bits per chunk), or the padded 4/6-bit format of .kind::f8f6f4 and
    .kind::mxf8f6f4: 16 elements packed at the start of each 16-byte chunk (9.7.16.10.4.4, the
    same `.b4x16_p64` / `.b6x16_p32` formats tcgen05.cp decompresses, 9.7.16.9.1)."""
    if padded and element_bits in (4, 6):
        return ElementStorage(16, element_bits)
    return ElementStorage(128 // element_bits, element_bits)


def element_bit_addresses(d: SmemDescriptor, k_major: bool, rows: int, k: int, storage: ElementStorage) -> np.ndarray:
    """Bit address (byte address * 8 + bit) of each element (row, k), as int64 [rows, k], read-only:
    computed once for every data set of an instruction (`_element_bit_addresses`)."""
    return _element_bit_addresses(d, k_major, rows, k, storage)


# A campaign chunk's instructions (200 / data sets of them) read two operands each, first in the
# generator and then in the oracle: 512 covers a chunk of one data set per instruction.
@memo(maxsize=512)
def _element_bit_addresses(d: SmemDescriptor, k_major: bool, rows: int, k: int, storage: ElementStorage) -> np.ndarray:
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    layout = canonical_strides(d, k_major)
    t = storage.per_chunk
    if k_major:
        s_row8, s_oct, s_chunk, s_atom = layout.strides
        chunk = kk // t
        element = kk % t
        offset = (r % 8) * s_row8 + (r // 8) * s_oct
        if d.lbo_absolute:
            # 9.7.16.3.1.2: the chunks past the first 32 bytes come from the absolute address in
            # the LBO field (assumption A-LBO-ABSOLUTE-SPLIT).
            first = chunk < 2
            base = np.where(first, d.start_address + chunk * 16, d.leading_byte_offset + (chunk - 2) * 16)
        else:
            base = d.start_address + (chunk % layout.atom) * s_chunk + (chunk // layout.atom) * s_atom
        address = base + offset
    else:
        s_mn, s_mn_atom, s_k, s_k_atom = layout.strides
        chunk = r // t
        element = r % t
        mn = (chunk % layout.atom) * s_mn + (chunk // layout.atom) * s_mn_atom
        address = d.start_address + mn + (kk % layout.k_atom) * s_k + (kk // layout.k_atom) * s_k_atom
    address = swizzle(np.broadcast_to(address, (rows, k)), d.swizzle, d.base_offset)
    return frozen(address * 8 + element * storage.bits)
