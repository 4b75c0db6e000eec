"""Register fragments (ISA facts): which matrix element each thread's register holds, for
warp-level `mma.sync` and `mma.sp`, for the `wgmma` accumulator, wgmma's A in registers and the
sparsity metadata registers. Used by the oracle (reading register operands), the generators
(writing metadata) and the device kernels (packing registers: `tcgen05_conformance.device.registers`).

The PTX ISA shows these only as figures (9.7.14.5.x "Matrix Fragments", 9.7.15.5.1.1); the same
facts are public as CuTe (thread, value) -> element layouts in CUTLASS, which are kept here as data
and evaluated. A layout maps thread t and value v to the column-major index of the element in its
matrix: A is M x K (index m + M k), B is N x K (n + N k), C/D is M x N (m + M n). Values are
packed into 32-bit registers in order, `32 // bits` per register, the first in the low bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.memo import frozen, memo

Modes = tuple[tuple[int, int], ...]  # (size, stride) per mode, the first mode varying fastest


@dataclass(frozen=True)
class Fragment:
    """One operand's CuTe layout: `threads` and `values` modes, over a matrix of `rows` rows."""

    threads: Modes
    values: Modes
    rows: int

    @property
    def thread_count(self) -> int:
        return math.prod(s for s, _ in self.threads)

    @property
    def value_count(self) -> int:
        return math.prod(s for s, _ in self.values)

    def elements(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, column) of value v of thread t, each int64 [threads, values], read-only (computed
        once per fragment: `_elements`)."""
        return _elements(self)


# The fragments are few (per instruction shape and input width), read for every program.
@memo(maxsize=256)
def _elements(fragment: Fragment) -> tuple[np.ndarray, np.ndarray]:
    index = _offsets(fragment.threads)[:, None] + _offsets(fragment.values)[None, :]
    return frozen(index % fragment.rows), frozen(index // fragment.rows)


def _offsets(modes: Modes) -> np.ndarray:
    """The offset of every index of a multi-mode shape, the first mode varying fastest."""
    index = np.arange(int(np.prod([s for s, _ in modes])), dtype=np.int64)
    out = np.zeros_like(index)
    for size, stride in modes:
        out += (index % size) * stride
        index //= size
    return out


_T32 = lambda s0: ((4, s0), (8, 1))  # noqa: E731 - thread = 4 x 8: lane % 4 at stride s0, lane / 4 at 1
_C16x8 = Fragment(_T32(32), ((2, 16), (2, 8)), 16)  # CUTLASS mma_traits_sm80.hpp SM80_16x8_Row


@dataclass(frozen=True)
class MmaSyncShape:
    """mma.sync.aligned.m16n8k{k}: the A, B and C/D fragments of one input width."""

    k: int
    a: Fragment
    b: Fragment
    c: Fragment = _C16x8
    m: int = 16
    n: int = 8


# CUTLASS include/cute/atom/mma_traits_sm80.hpp: SM80_16x8x16_F32F16F16F32_TN (16-bit inputs),
# SM80_16x8x8_F32TF32TF32F32_TN (tf32), SM80_16x8x32_S32S8S8S32_TN (8-bit integers), and
# mma_traits_sm89.hpp SM89_16x8x32_F32E4M3E4M3F32_TN (fp8: the same layouts as 8-bit integers).
MMA_SYNC_SHAPES: dict[int, MmaSyncShape] = {
    16: MmaSyncShape(16, Fragment(_T32(32), ((2, 16), (2, 8), (2, 128)), 16),
                     Fragment(_T32(16), ((2, 8), (2, 64)), 8)),
    32: MmaSyncShape(8, Fragment(_T32(16), ((2, 8), (2, 64)), 16),
                     Fragment(_T32(8), ((2, 32),), 8)),
    8: MmaSyncShape(32, Fragment(_T32(64), ((4, 16), (2, 8), (2, 256)), 16),
                    Fragment(_T32(32), ((4, 8), (2, 128)), 8)),
}


# CUTLASS include/cute/atom/mma_traits_sm90_gmma.hpp: the register-source A layouts of wgmma
# (ALayout_64x8 for 32-bit types, ALayout_64x16 for 16-bit, ALayout_64x32 for 8-bit), by input width.
WGMMA_A: dict[int, Fragment] = {
    32: Fragment(((4, 64), (8, 1), (4, 16)), ((2, 8), (2, 256)), 64),
    16: Fragment(((4, 128), (8, 1), (4, 16)), ((2, 64), (2, 8), (2, 512)), 64),
    8: Fragment(((4, 256), (8, 1), (4, 16)), ((4, 64), (2, 8), (2, 1024)), 64),
}


# The sparsity metadata register of sparse wgmma (wgmma.mma_async.sp), by input width: CUTLASS
# include/cute/atom/mma_traits_sm90_gmma_sparse.hpp ELayout_64x16 (tf32, K = 16), ELayout_64x32
# (16-bit, K = 32), ELayout_64x64 (8-bit, K = 64). Rows are A's 64 rows, columns its logical (not
# compressed) K; each thread's one 32-bit register holds the values in order, 32 / values bits each.
# A thread mode of stride 0 is a pair of threads holding the same metadata: the sparsity selector
# picks which of the two the instruction reads (`selected_threads`).
WGMMA_METADATA: dict[int, Fragment] = {
    32: Fragment(((2, 512), (2, 0), (8, 1), (4, 16)), ((8, 64), (2, 8)), 64),
    16: Fragment(((2, 1024), (2, 0), (8, 1), (4, 16)), ((16, 64), (2, 8)), 64),
    8: Fragment(((2, 8), (2, 2048), (8, 1), (4, 16)), ((32, 64),), 64),
}


@dataclass(frozen=True)
class MmaSpFragments:
    """Warp-level mma.sp m16n8k{k}: the compressed A (16 x K/2), B (8 x K), C/D and sparsity
    metadata (16 rows x K logical columns) fragments of one input width."""

    a: Fragment
    b: Fragment
    metadata: Fragment
    c: Fragment = _C16x8


def mma_sp_fragments(bits: int, k: int) -> MmaSpFragments:
    """The mma.sp fragments for `bits`-wide inputs and logical K. A and B are the dense mma.sync
    fragments (CUTLASS mma_traits_sm80.hpp, as in MMA_SYNC_SHAPES) continued along K with the same
    strides (PTX ISA 9.7.14.6.3: the compressed A of m16n8k32 is laid out as A of m16n8k16, and so
    on). The metadata layout follows the sparse wgmma ELayouts restricted to one warp (assumption
    A-MMA-SP-METADATA): per row K bits (2 per tf32 element); 16 bits per row in one thread of each
    quad (the selector picks which), rows groupID and groupID + 8 in its low and high halves; 32
    bits in a pair (the selector picks lanes 0-1 or 2-3), lane % 2 taking the K half; 64 bits in all
    four, lane % 2 taking the row and lane / 2 % 2 the K half."""
    kc = k // 2
    if bits == 16:
        a = Fragment(_T32(32), ((2, 16), (2, 8), (kc // 8, 128)), 16)
        b = Fragment(_T32(16), ((2, 8), (k // 8, 64)), 8)
    elif bits == 32:
        a = Fragment(_T32(16), ((2, 8), (kc // 4, 64)), 16)
        b = Fragment(_T32(8), ((k // 4, 32),), 8)
    else:
        a = Fragment(_T32(64), ((4, 16), (2, 8), (kc // 16, 256)), 16)
        b = Fragment(_T32(32), ((4, 8), (k // 16, 128)), 8)
    row_bits = 2 * k if bits == 32 else k
    if row_bits == 16:
        metadata = Fragment(((4, 0), (8, 1)), ((k, 16), (2, 8)), 16)
    elif row_bits == 32 and bits == 8:
        metadata = Fragment(((2, 8), (2, 0), (8, 1)), ((k, 16),), 16)
    elif row_bits == 32:
        metadata = Fragment(((2, 16 * kc), (2, 0), (8, 1)), ((kc, 16), (2, 8)), 16)
    else:
        metadata = Fragment(((2, 8), (2, 16 * kc), (8, 1)), ((kc, 16),), 16)
    return MmaSpFragments(a, b, metadata)


def selected_threads(fragment: Fragment, selector: int) -> np.ndarray:
    """bool [threads]: the threads whose metadata a sparse instruction reads with this selector:
    those whose index along the layout's stride-0 thread mode equals it (all, without one);
    read-only (computed once per fragment and selector: `_selected_threads`)."""
    return _selected_threads(fragment, selector)


@memo(maxsize=256)
def _selected_threads(fragment: Fragment, selector: int) -> np.ndarray:
    index = np.arange(fragment.thread_count)
    chosen = np.ones(fragment.thread_count, bool)
    for size, stride in fragment.threads:
        if stride == 0:
            chosen &= index % size == selector
        index = index // size
    return frozen(chosen)


def wgmma_accumulator(n: int) -> Fragment:
    """The m64nN accumulator of one warpgroup (128 threads): CUTLASS
    include/cute/atom/mma_traits_sm90_gmma.hpp `CLayout_64xN`."""
    return Fragment(((4, 128), (8, 1), (4, 16)), ((2, 64), (2, 8), (n // 8, 512)), 64)


def register_elements(fragment: Fragment, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of each element held in register r of thread t, as int64
    [registers, threads, elements per register]: the register-major order in which the kernels
    of `tcgen05_conformance.device.inner_product_kernels` load and store fragments (word r of thread t); read-only
    (views of `Fragment.elements`)."""
    rows, cols = fragment.elements()
    per = 32 // bits
    shape = (fragment.thread_count, fragment.value_count // per, per)
    return rows.reshape(shape).transpose(1, 0, 2), cols.reshape(shape).transpose(1, 0, 2)
