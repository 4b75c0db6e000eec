"""Where the operands of one CTA's share of a tcgen05.mma live in Tensor Memory.

The data-path layouts A-G (PTX ISA 9.7.16.10.5) are shown only in Figures 205-218; the facts
here come from CUTLASS `include/cute/atom/mma_traits_sm100_frag.hpp` (`tmem_frg`,
`tmem_frg_ws`, the "4x1", "2x2" and "1x4" atoms, and the 16-lane half-subpartition atom):

* 4x1 (layouts A, D): row r at lane r, column j at column j;
* 4x1 using half the data path (layouts C, F): row r at lane (r % 16) + 32 (r // 16), plus the
  lane alignment 0 or 16;
* 2x2 (layouts B, E): the N columns split in 2; half h at lanes 64 h + r, column j - h N/2;
* 1x4 (layout G): the N columns split in 4; quarter q at lanes 32 q + r, column j - q N/4.

A data-path lane computes the D elements stored in it, and reads its share of the other TMEM
operands (A, sparsity metadata, scale factors) from its own 32-lane subpartition: assumption
A-TMEM-OWN-LANE, which CUTLASS's duplicated allocations (`TmemAllocMode::Duplicated`,
`ScaleFactorDuplicated*`) are consistent with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.isa import mma as isa


@dataclass(frozen=True)
class DataPath:
    """One layout of 9.7.16.10.5 for one CTA: `rows` of D per CTA and the column `splits`."""

    layout: str
    rows: int
    splits: int  # 1 (4x1), 2 (2x2) or 4 (1x4)
    half: bool  # 16 of each 32 lanes used (layouts C, F)


def data_path(m: int, cta_group: int, sparse: bool, ws: bool) -> DataPath:
    """The layout of an MMA (`isa.DATA_PATH_LAYOUTS`) for one CTA, which holds M / cta_group rows of D."""
    layout = isa.data_path_layout(m, cta_group, sparse, ws)
    return DataPath(layout.layout, m // cta_group, layout.splits, layout.half)


def d_positions(dp: DataPath, n: int, lane0: int) -> tuple[np.ndarray, np.ndarray]:
    """(lane, column offset) of every D element (r, j), each an int64 [rows, n] array."""
    r = np.arange(dp.rows, dtype=np.int64)[:, None]
    j = np.arange(n, dtype=np.int64)[None, :]
    width = n // dp.splits
    split = j // width
    if dp.half:
        lane = lane0 + (r % 16) + 32 * (r // 16) + 0 * j
    else:
        lane = lane0 + r + (128 // dp.splits) * split
    lane, column = np.broadcast_arrays(lane, j - split * width)
    return lane.copy(), column.copy()


def split_lanes(dp: DataPath, lane0: int) -> np.ndarray:
    """The lane of each row r in each column split s: int64 [splits, rows]."""
    lane, _ = d_positions(dp, dp.splits, lane0)
    return lane.T.copy()


# --- operand A in TMEM (packing 9.7.16.10.4.3, .5) ------------------------------------------


# 4/6-bit elements in an 8-bit container sit at these bit offsets inside it: the format tcgen05.cp
# decompression writes (fp4 as 00xxxx00, fp6 as 0xxxxxx0: CUTLASS CuTe DSL example
# examples/python/CuTeDSL/experimental/primitives/tcgen05/cp_narrow_a_to_tmem_mma.py, docstring),
# taken as the A-in-TMEM packing of Figures 199-201 (assumption A-F4F6-TMEM-CONTAINER).
CONTAINER_SHIFT = {4: 2, 6: 1}


def a_tmem_container_bits(kind: str, element_bits: int) -> int:
    """Bits each A element occupies in a TMEM word: 4/6-bit .kind::f8f6f4 / mxf8f6f4 elements
    sit in 8-bit containers (9.7.16.10.4.3); mxf4 packs two per byte (9.7.16.10.4.5)."""
    if element_bits in (4, 6) and kind in isa.PADDED_NARROW_KINDS:
        return 8
    return element_bits


def a_element_offsets(k: int, container: int, element_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(column offset, bit offset) of A elements 0..k-1 of a row: containers packed from the low
    bits of each word, the element at its container's shift."""
    kk = np.arange(k, dtype=np.int64)
    shift = CONTAINER_SHIFT.get(element_bits, 0) if container != element_bits else 0
    return (kk * container) // 32, (kk * container) % 32 + shift


def read_fields(words: np.ndarray, bit_offsets: np.ndarray, bits: int) -> np.ndarray:
    """`bits`-wide fields at bit offsets inside uint32 words (fields never straddle words)."""
    return ((words >> bit_offsets.astype(np.uint32)) & np.uint32((1 << bits) - 1)).astype(np.uint32)


def a_from_tmem(tmem: np.ndarray, lanes: np.ndarray, col0: int, k: int, container: int, element_bits: int) -> np.ndarray:
    """Codes of A [.., rows, k] read at the given lanes (any shape [..., rows])."""
    columns, offsets = a_element_offsets(k, container, element_bits)
    words = tmem[lanes[..., None], col0 + columns]
    return read_fields(words, np.broadcast_to(offsets, words.shape), element_bits)


# --- sparsity metadata (9.7.16.10.8) ---------------------------------------------------------

# A-element count covered by one 4-bit metadata chunk, per kind (its sparsity granularity).
META_CHUNK_ELEMENTS = {kind: isa.SPARSITY_CHUNK_ELEMENTS[g] for kind, g in isa.SPARSITY_GRANULARITY.items()}


def meta_positions(dp: DataPath, kind: str, k: int, lane0: int, col0: int, selector: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lane, column, bit) of the 4-bit metadata chunk q of row r in column split s, each
    int64 [splits, rows, chunks].

    * 4x1 data path, 16/32-bit kinds (f16, tf32): CUTLASS `tmem_e_frg` / `tmem_e_frg_ws` 128x32
      and 128x16 atoms: rows r and r+8 share lane (r % 8) + 16 (r // 16) + 8 (q // 4); bits
      16 ((r // 8) % 2) + 4 (q % 4). 2x2 / 1x4 data paths: the same within each split's lanes.
    * 8-bit and 4-bit kinds: CUTLASS 128x64 / 128x128 atoms: row r at its lane, chunk q at bit 4q
      of the row's 64 bits (two columns).
    * Half data path (layouts C, F): not in CUTLASS; row r at its D lane, chunk q at bit 4q
      (assumption A-SPMETA-HALF).
    * The sparsity selector adds whole columns (assumption A-SPSEL-COLUMNS)."""
    chunks = k // META_CHUNK_ELEMENTS[kind]
    r = np.arange(dp.rows, dtype=np.int64)[None, :, None]
    q = np.arange(chunks, dtype=np.int64)[None, None, :]
    s = np.arange(dp.splits, dtype=np.int64)[:, None, None]
    base = lane0 + (128 // dp.splits) * s
    if dp.half:
        lane = lane0 + (r % 16) + 32 * (r // 16) + 0 * q
        bit = 4 * q + 0 * r
    elif kind in ("f16", "tf32"):
        lane = base + (r % 8) + 16 * (r // 16) + 8 * (q // 4)
        bit = 16 * ((r // 8) % 2) + 4 * (q % 4)
    else:
        lane = base + r + 0 * q
        bit = 4 * q + 0 * r
    lane, bit = np.broadcast_arrays(lane, bit)
    return lane, col0 + selector + bit // 32, bit % 32


# --- scale factors (9.7.16.10.7) -------------------------------------------------------------

SCALE_FACTORS_PER_COLUMN = 4  # four 8-bit factors per 32-bit TMEM word (SF_ID is the byte offset)
SCALE_A_ROWS_K96 = 128  # K = 96: scale_A is laid out for 128 rows whatever the rows per CTA


def scale_factor_groups(operand: str, count: int, splits: int, k96: bool) -> int:
    """Columns between one group of four factors of an index and the next: how many 32-index
    column groups the operand's scale factors span in one data-path split.

    Only K = 96 (3 or 6 factors from SF_ID) reaches a second group. CUTLASS's sm_103 block-scaled
    collective (cutlass/gemm/collective/sm103_blockscaled_mma_warpspecialized.hpp, `tmem_sf_frg`
    tiled along K) keeps factor s of index i at column groups * (s / 4) + i / 32, byte s % 4, and
    hands MMA j the address of factor 3j (6j for block16), so the data path reads factor f at group
    (SF_ID + f) / 4. The groups span 128 rows for A, round_up(N, 128) columns for B (the ISA's
    figure titles split the B layout at N <= 128 / N > 128), per column half in the 2x2 data path
    (`ScaleFactorDuplicated2by2`). The earlier reading (two columns per 32 indices) stays in the
    ledger as A-SF-K96-LAYOUT."""
    if not k96:
        return -(-count // 32)
    if operand == "A":
        return SCALE_A_ROWS_K96 // 32
    return -(-count // 128) * 128 // (32 * splits)


def scale_factor_positions(subpartition: np.ndarray, index: np.ndarray, col0: int, factors: int, sf_id: int,
                           groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lane, column, bit offset), each [..., factors], of the scale factors of row/column `index`
    (local to its data-path split) as read by lanes of the given 32-lane `subpartition` (arrays of
    one shape).

    CUTLASS `tmem_sf_frg`: the factors of index i sit at lane i % 32 of every subpartition
    (duplicated, as 9.7.16.10.7 requires), column col0 + i // 32, byte SF_ID + f (9.7.16.10.7.2-3:
    SF_ID is the byte offset); for B in the 2x2 data path each column half counts its columns from
    0 (`ScaleFactorDuplicated2by2`). A factor past byte 3 (K = 96 only) continues in the next
    group of `groups` columns (`scale_factor_groups`)."""
    byte = sf_id + np.arange(factors, dtype=np.int64)
    column = col0 + index[..., None] // 32 + groups * (byte // SCALE_FACTORS_PER_COLUMN)
    lane = 32 * subpartition[..., None] + index[..., None] % 32
    lane, column, offset = np.broadcast_arrays(lane, column, 8 * (byte % SCALE_FACTORS_PER_COLUMN))
    return lane, column, offset


def scale_factor_columns(count: int, factors: int, sf_id: int, groups: int) -> int:
    """Columns from the scale-factor address to the last one `count` indices use."""
    return (count - 1) // 32 + groups * ((sf_id + factors - 1) // SCALE_FACTORS_PER_COLUMN) + 1


def scale_factors(tmem: np.ndarray, subpartition: np.ndarray, index: np.ndarray, col0: int, factors: int,
                  sf_id: int, groups: int) -> np.ndarray:
    """Scale-factor codes [..., factors] at `scale_factor_positions`."""
    lane, column, offset = scale_factor_positions(subpartition, index, col0, factors, sf_id, groups)
    return read_fields(tmem[lane, column], offset, 8)
