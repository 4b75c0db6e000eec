"""The working state the oracle evolves: the program's memories (`tcgen05_conformance.core.images`: shared
memory, uninitialised outside the program's segments, and the TMEM image), plus the registers each
`tcgen05.ld` returns and the register operands of a Hopper MMA.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tcgen05_conformance.core.images import Images, initial_images
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import NotModelled, UndefinedBehaviour  # noqa: F401 (raised by the oracle's modules)


@dataclass
class OracleState(Images):
    """The oracle's state between two operations (the final one becomes a `MachineState`)."""

    loads: list[np.ndarray] = field(default_factory=list)  # tcgen05.ld results, in program order
    matrices: dict[str, np.ndarray] = field(default_factory=dict)  # register operands (Program.matrices)


def initial_state(p: Program) -> OracleState:
    """The state before the program's first operation."""
    images = initial_images(p)
    return OracleState(images.smem, images.smem_defined, images.tmem,
                       matrices={m.name: p.matrix(m.name) for m in p.matrices})
