"""A program's memories as the instructions read them: per CTA, the shared-memory bytes (and
which of them the program initialised) and the Tensor Memory image (128 lanes x the allocated
columns of 32-bit cells, PTX ISA 9.7.16.1).

Shared memory outside the program's segments is *uninitialised*: the kernels copy in only the
segments, so a read there has no defined value and is refused (`UndefinedBehaviour`) instead of
guessed. TMEM cells the program does not initialise are 0 (the kernels store the whole allocated
image, zero where the program gives nothing). The oracle evolves these images (its `OracleState`);
the value coverpoints read the initial ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.program import SMEM_BYTES, Program
from tcgen05_conformance.core.state import UndefinedBehaviour, initial_smem, initial_tmem


@dataclass
class Images:
    """Shared memory and TMEM of every CTA of a program."""

    smem: np.ndarray  # uint8 [ctas, SMEM_BYTES]
    smem_defined: np.ndarray  # bool [ctas, SMEM_BYTES]: bytes the program initialised
    tmem: np.ndarray  # uint32 [ctas, 128, columns]

    @property
    def ctas(self) -> int:
        return self.tmem.shape[0]

    @property
    def columns(self) -> int:
        return self.tmem.shape[2]

    def read_smem(self, cta: int, addresses: np.ndarray, what: str) -> np.ndarray:
        """Bytes at `addresses` (any shape) of one CTA's shared memory; refuses addresses beyond
        shared memory or not initialised by the program."""
        addresses = np.asarray(addresses, dtype=np.int64)
        outside = (addresses < 0) | (addresses >= SMEM_BYTES)
        if outside.any():
            bad = int(addresses[outside].flat[0])
            raise UndefinedBehaviour(f"{what} reads shared-memory byte {bad:#x}, beyond the {SMEM_BYTES}-byte shared memory")
        undefined = ~self.smem_defined[cta][addresses]
        if undefined.any():
            bad = int(addresses[undefined].flat[0])
            raise UndefinedBehaviour(f"{what} reads shared-memory byte {bad:#x} of CTA {cta}, which the program does not initialise")
        return self.smem[cta][addresses]

    def check_tmem(self, lanes: np.ndarray, columns: np.ndarray, what: str) -> None:
        """Refuse TMEM coordinates outside the 128 lanes or the allocated columns."""
        lanes, columns = np.asarray(lanes), np.asarray(columns)
        if lanes.size and (lanes.min() < 0 or lanes.max() >= dm.TMEM_LANES):
            raise UndefinedBehaviour(f"{what} reaches TMEM lane {int(lanes.max())}, beyond lane {dm.TMEM_LANES - 1}")
        if columns.size and (columns.min() < 0 or columns.max() >= self.columns):
            raise UndefinedBehaviour(
                f"{what} reaches TMEM column {int(columns.max())}, beyond the {self.columns} allocated columns"
            )


def initial_images(p: Program) -> Images:
    """The memories before the program's first operation (`tcgen05_conformance.core.state`'s images)."""
    smem, defined = initial_smem(p)
    return Images(smem, defined, initial_tmem(p))
