"""The element codes an MMA reads, from a program's memories (`tcgen05_conformance.core.images`): matrix
operands in shared memory through their descriptors (PTX ISA 9.7.16.3.3; 9.7.15.5.1.2 for wgmma),
A in TMEM (9.7.16.10.4.3) and the block-scale factors (9.7.16.10.7). The oracle computes with
these codes; the value coverpoints (`tcgen05_conformance.core.coverpoints`) classify them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding.sdesc import SmemDescriptor
from tcgen05_conformance.core.images import Images
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.mma_shape import MmaShape
from tcgen05_conformance.core.layouts.smem import SWIZZLE_ROW_BYTES, ElementStorage, element_bit_addresses, storage_for
from tcgen05_conformance.core.layouts.tmem import (
    a_from_tmem,
    a_tmem_container_bits,
    scale_factor_columns,
    scale_factor_groups,
    scale_factors,
    split_lanes,
)
from tcgen05_conformance.core.memo import frozen, memo
from tcgen05_conformance.core.program import SMEM_BYTES
from tcgen05_conformance.core.state import UndefinedBehaviour


def read_bits(images: Images, cta: int, bit_addresses: np.ndarray, bits: int, what: str) -> np.ndarray:
    """Little-endian fields of `bits` bits (<= 32) at the given bit addresses, as uint32."""
    byte = bit_addresses >> 3
    shift = (bit_addresses & 7).astype(np.uint64)
    span = (int(shift.max(initial=0)) + bits + 7) // 8
    word = np.zeros(bit_addresses.shape, dtype=np.uint64)
    for i in range(span):
        word |= images.read_smem(cta, byte + i, what).astype(np.uint64) << np.uint64(8 * i)
    return ((word >> shift) & np.uint64((1 << bits) - 1)).astype(np.uint32)


@dataclass(frozen=True)
class _WholeWords:
    """An operand whose elements are whole little-endian 1-, 2- or 4-byte words, each at an
    address aligned to its size: element i is word `index[i]` of the image viewed as `dtype`,
    and every byte read lies in [first, last]."""

    dtype: np.dtype
    index: np.ndarray
    first: int
    last: int


# One entry per operand of an instruction (see `element_bit_addresses`).
@memo(maxsize=512)
def _whole_words(d: SmemDescriptor, k_major: bool, rows: int, k: int, storage: ElementStorage) -> _WholeWords | None:
    """How to read the operand as whole words (`_WholeWords`), or None when its elements are not."""
    if storage.bits not in (8, 16, 32):
        return None
    size = storage.bits // 8
    addresses = element_bit_addresses(d, k_major, rows, k, storage)
    if not addresses.size or (addresses % (8 * size)).any():
        return None
    return _WholeWords(np.dtype(f"<u{size}"), frozen(addresses // (8 * size)), int(addresses.min()) // 8,
                       int(addresses.max()) // 8 + size - 1)


def gather(images: Images, cta: int, d: SmemDescriptor, k_major: bool, rows: int, k: int,
           storage: ElementStorage, what: str) -> np.ndarray:
    """Element codes [rows, k] of an operand in one CTA's shared memory; UndefinedBehaviour when
    the descriptor's swizzle code is one Table 40 leaves invalid.

    Elements that are whole aligned words (every wgmma and most tcgen05 operands) lying in a run of
    bytes the program initialises are read in one step as words of their size, what `read_bits`
    gives them (its refusals need a byte outside that run); the others go through `read_bits`."""
    if d.swizzle not in SWIZZLE_ROW_BYTES:
        raise UndefinedBehaviour(f"{what}: matrix descriptor swizzle code {d.swizzle.lstrip('?')} is invalid "
                                 "(PTX ISA 9.7.16.4.1, Table 40)")
    words = _whole_words(d, k_major, rows, k, storage)
    if (words is not None and 0 <= words.first and words.last < SMEM_BYTES
            and images.smem_defined[cta][words.first:words.last + 1].all()):
        return images.smem[cta].view(words.dtype)[words.index].astype(np.uint32)
    return read_bits(images, cta, element_bit_addresses(d, k_major, rows, k, storage), storage.bits, what)


def checked_tmem(images: Images, cta: int, lanes: np.ndarray, columns: np.ndarray, what: str) -> np.ndarray:
    """One CTA's TMEM image, after refusing coordinates outside the lanes or the allocation."""
    images.check_tmem(lanes, columns, what)
    return images.tmem[cta]


def operand_b(images: Images, op: Tcgen05Mma, s: MmaShape, extra_columns: int) -> np.ndarray:
    """Codes of B as [N + extra, K]: each CTA contributes its N / cta_group columns."""
    desc = sdesc_codec.decode(op.b_desc)
    bits = isa.TYPE_BITS[s.d.btype]
    per_cta = s.d.n // op.cta_group + extra_columns
    storage = storage_for(bits, s.kind in isa.PADDED_NARROW_KINDS)
    parts = [gather(images, cta, desc, not s.d.transpose_b, per_cta, s.k, storage, "B") for cta in range(op.cta_group)]
    return np.concatenate(parts, axis=0)


def operand_a(images: Images, op: Tcgen05Mma, s: MmaShape, cta: int) -> np.ndarray:
    """Codes of this CTA's A as stored (K/2 columns when sparse), [splits, rows, K_stored]."""
    bits = isa.TYPE_BITS[s.d.atype]
    if op.a_tmem is None:
        desc = sdesc_codec.decode(op.a_desc)
        storage = storage_for(bits, s.kind in isa.PADDED_NARROW_KINDS)
        a = gather(images, cta, desc, not s.d.transpose_a, s.dp.rows, s.k_stored, storage, "A")
        return np.broadcast_to(a, (s.dp.splits, *a.shape))
    lane0, col0 = taddr_codec.decode(op.a_tmem)
    lanes = split_lanes(s.dp, lane0)
    if op.ashift:
        # .ashift: "shifts the rows of the A matrix down by one row, except for the last row";
        # row 0 keeps its own row (assumption A-ASHIFT-ROW0).
        lanes = np.concatenate([lanes[:, :1], lanes[:, :-1]], axis=1)
    container = a_tmem_container_bits(s.kind, bits)
    last = col0 + (s.k_stored * container - 1) // 32
    tmem = checked_tmem(images, cta, lanes, np.array([col0, last]), "A in TMEM")
    return a_from_tmem(tmem, lanes, col0, s.k_stored, container, bits)


def block_scales(images: Images, op: Tcgen05Mma, s: MmaShape, cta: int, d_lane: np.ndarray) -> dict:
    """Scale-factor codes as each data-path lane reads them: A [splits, rows, F], B [N, F], and
    their format. 9.7.16.10.7 requires the factors duplicated across lane partitions; copies that
    differ between the lanes that read one factor are undefined behaviour here."""
    d = s.d
    sv = isa.scale_vector(op.kind, op.scale_vec, d.k96)
    if sv is None:
        raise UndefinedBehaviour(f"no Table 54/55 scale vector for {op.kind} {op.scale_vec} K={s.k}")
    width = d.n // s.dp.splits
    rows = np.broadcast_to(np.arange(s.dp.rows)[:, None], d_lane.shape)
    columns = np.broadcast_to(np.arange(d.n)[None, :] % width, d_lane.shape)
    _, a_col = taddr_codec.decode(op.scale_a_tmem)
    _, b_col = taddr_codec.decode(op.scale_b_tmem)
    a_groups = scale_factor_groups("A", s.dp.rows, s.dp.splits, d.k96)
    b_groups = scale_factor_groups("B", d.n, s.dp.splits, d.k96)
    sfa = _scale_codes(images, cta, d_lane // 32, rows, a_col, sv.factors, d.sfa_id, a_groups)  # [rows, n, F]
    sfb = _scale_codes(images, cta, d_lane // 32, columns, b_col, sv.factors, d.sfb_id, b_groups)
    split = np.arange(d.n) // width
    a_per_split = np.stack([sfa[:, split == k][:, 0] for k in range(s.dp.splits)])
    if (sfa != a_per_split[split].transpose(1, 0, 2)).any() or (sfb != sfb[:1]).any():
        raise UndefinedBehaviour("scale factors are not duplicated across the TMEM lane partitions that read them (9.7.16.10.7)")
    return {"a": a_per_split, "b": sfb[0], "fmt": d.scale_type or "ue8m0"}


def _scale_codes(images: Images, cta: int, subpartition: np.ndarray, index: np.ndarray, col0: int,
                 factors: int, sf_id: int, groups: int) -> np.ndarray:
    last = col0 + scale_factor_columns(int(index.max()) + 1, factors, sf_id, groups) - 1
    tmem = checked_tmem(images, cta, np.array([0, 127]), np.array([col0, last]), "scale factors")
    return scale_factors(tmem, subpartition, index, col0, factors, sf_id, groups)
