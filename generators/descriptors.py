"""Strategies for the runtime words of tcgen05.mma: instruction descriptors, shared-memory
descriptors, TMEM addresses and zero-column masks, all legal for a given MMA."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.swizzle import SWIZZLE_MODES


def swizzles_for(element_bits: int, transposed: bool) -> list[str]:
    """Swizzle modes Table 52 allows for an operand of this element size and major-ness."""
    if not transposed:
        return list(SWIZZLE_MODES)
    rule = mma.TRANSPOSE_SWIZZLE_RULE[element_bits]
    if rule == "only-128B-32B-atom":
        return ["128B_base32B"]
    return [name for name in SWIZZLE_MODES if name != "128B_base32B"]


# Descriptor ranges: anywhere in a 228 KiB shared memory, or compact (operands that fit the
# images the program generator writes).
DESCRIPTOR_RANGES = {"anywhere": (200 * 1024, 4096), "compact": (8 * 1024, 1024)}


@functools.lru_cache(maxsize=None)
def _descriptor_fields(reach: str) -> tuple[st.SearchStrategy[int], st.SearchStrategy[int], st.SearchStrategy[int]]:
    """The strategies of a descriptor's start address and offsets (in 16-byte units) within
    `reach`, and of its base offset: built once, not at every draw (see `smem_descriptors`)."""
    start_limit, offset_limit = DESCRIPTOR_RANGES[reach]
    return st.integers(0, start_limit // 16), st.integers(0, offset_limit // 16), st.integers(0, 7)


# One strategy object per set of arguments, and the strategies it draws from built once: Hypothesis
# checks a strategy object the first time it is drawn from, which cost a tenth of a campaign's
# instruction draws when each draw built its own, and even looking a built one up in Hypothesis's
# cache at every draw cost a few percent of them.
@functools.lru_cache(maxsize=None)
@st.composite
def smem_descriptors(draw, swizzle: str, lbo_absolute: bool = False, variant: str = "tcgen05",
                     reach: str = "anywhere") -> int:
    """A descriptor word with 16-byte aligned addresses and offsets within `reach`."""
    starts, offsets, bases = _descriptor_fields(reach)
    start = draw(starts) * 16
    lbo = draw(offsets) * 16
    sbo = draw(offsets) * 16
    base = 0 if lbo_absolute else draw(bases)
    return sdesc_codec.encode(
        sdesc_codec.SmemDescriptor(start, lbo, sbo, swizzle, base, lbo_absolute), variant
    )


@st.composite
def tmem_addresses(draw, alignment: int, columns: int, limit: int = dm.TMEM_COLUMNS) -> int:
    """A TMEM address whose lane is aligned to `alignment` within a 32-lane quarter (lane 0 or
    16 of quarter 0) and whose column leaves `columns` columns before column `limit`."""
    column = draw(st.integers(0, max(0, limit - columns)))
    return taddr_codec.encode(alignment, column)


@st.composite
def zero_column_masks(draw, m: int) -> int:
    limit = mma.ZCMASK_MAX_SHIFT.get(m, mma.ZCMASK_MAX_SHIFT_DEFAULT)
    return zcmask_codec.encode(
        zcmask_codec.ZeroColumnMask(
            start_counts=tuple(draw(st.integers(0, 255)) for _ in range(4)),
            first_spans=tuple(draw(st.integers(0, 1)) for _ in range(4)),
            non_zero_mask=draw(st.booleans()),
            skip_span=draw(st.integers(0, 255)),
            use_span=draw(st.integers(0, 255)),
            column_shift=draw(st.integers(0, limit)),
        )
    )
