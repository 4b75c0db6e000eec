"""Where the registers of a warp's tcgen05.ld / tcgen05.st sit in TMEM (PTX ISA 9.7.16.2.3.1,
9.7.16.8.2): the thread/lane maps of each shape, .num repetitions, .pack::16b / .unpack::16b and the
.16x32bx2 half split. The oracle moves data with them; the value coverpoints read the cells a
tcgen05.ld.red reduces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.isa import data_movement as dm

WARP_THREADS = 32
_T = np.arange(WARP_THREADS)

# --- tcgen05.ld / tcgen05.st register maps (9.7.16.2.3.1, 9.7.16.8.2) -----------------------


@dataclass(frozen=True, eq=False)
class Fragment:
    """Where thread t's registers of one .x1 repetition sit, relative to taddr: lane
    `thread_lane[t]` + the register's lane offset, column `thread_column[t]` + its column offset
    (one (lane, column) offset per register, in register order); repetition k of .num adds
    k * `repeat_columns` columns. Columns count 32-bit registers: under .pack::16b / .unpack::16b
    each is two TMEM columns."""

    thread_lane: np.ndarray
    thread_column: np.ndarray
    registers: tuple[tuple[int, int], ...]
    repeat_columns: int


# Figures 183-187, read from CUTLASS include/cute/atom/copy_traits_sm100.hpp: the DstLayout of
# Copy_Traits<SM100_TMEM_LOAD_<dp>dp<bits>b<N>x> maps (thread, register bit) onto the ValID bit
# order "lane * (bits per lane) + bit along the lane", bits along the lane filling columns.
FRAGMENTS: dict[str, Fragment] = {
    # SM100_TMEM_LOAD_32dp32bNx: DstLayout (32,32N):(32N,1): thread t owns lane t, register r is column r.
    "32x32b": Fragment(_T, 0 * _T, ((0, 0),), 1),
    # SM100_TMEM_LOAD_16dp64bNx: threads (2,2,8):(8 lanes, 1 column, 1 lane); registers (32,N):(1, 2 columns).
    "16x64b": Fragment(_T // 4 + 8 * (_T % 2), (_T // 2) % 2, ((0, 0),), 2),
    # SM100_TMEM_LOAD_16dp128bNx: threads (4,8):(1 column, 1 lane); registers (32,2,N):(1, 8 lanes, 4 columns).
    "16x128b": Fragment(_T // 4, _T % 4, ((0, 0), (8, 0)), 4),
    # SM100_TMEM_LOAD_16dp256bNx: threads (4,8):(2 columns, 1 lane); registers (64,2,N):(1, 8 lanes, 8 columns).
    "16x256b": Fragment(_T // 4, 2 * (_T % 4), ((0, 0), (0, 1), (8, 0), (8, 1)), 8),
    # SM100_TMEM_LOAD_16dp32bNx (tcgen05.ld .16x32bx2, immHalfSplitoff = N): threads (16,2):(1 lane, second
    # half); threads 16-31 read the second access, at taddr + immHalfSplitoff (added in `fragment_cells`).
    "16x32bx2": Fragment(_T % 16, 0 * _T, ((0, 0),), 1),
}
# .pack::16b: register bits 0-15 come from bits 0-15 of the even column, bits 16-31 from bits 0-15
# of the odd one (Figure 193; CUTLASS Copy_Traits<SM100_TMEM_LOAD_*_16b>::ValID (16,2):(1,32)).
PACK_HALVES = 2
HALF_MASK = 0xFFFF
SPLIT_HALF_THREADS = 16  # .16x32bx2: threads 0-15 make the first access, 16-31 the second


def fragment_cells(shape: str, num: int, packed: bool, split_offset: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(lane [32, R], columns [32, R, halves]) of every register of a warp, relative to taddr:
    R = registers per thread, halves = 2 under pack/unpack (the two 16-bit source columns)."""
    frag = FRAGMENTS[shape]
    offsets = np.array(frag.registers)
    repeat = np.arange(num)[None, :, None] * frag.repeat_columns
    column = (frag.thread_column[:, None, None] + offsets[None, None, :, 1] + repeat).reshape(WARP_THREADS, -1)
    lane = np.broadcast_to(frag.thread_lane[:, None, None] + offsets[None, None, :, 0], (WARP_THREADS, num, len(offsets)))
    halves = PACK_HALVES if packed else 1
    columns = column[:, :, None] * halves + np.arange(halves)
    if dm.LDST_SHAPES[shape].split:
        columns = columns + ((_T // SPLIT_HALF_THREADS) * split_offset)[:, None, None]
    return lane.reshape(WARP_THREADS, -1), columns
