"""Truth from silicon-proven peers: the project's facts cross-checked against another implementation
(`tcgen05-conformance peers`; docs/peers.md).

`cutlass` compares descriptors, TMEM fragments and D with what CUTLASS's SM100/SM103 atoms
(`cutlass_atoms`) compute, built by `cutlass_toolchain` from the programs in `cutlass_cpp/`.
"""

from __future__ import annotations

from tcgen05_conformance.peers.cutlass import cross_check
from tcgen05_conformance.peers.cutlass_toolchain import PeersUnavailable

__all__ = ["PeersUnavailable", "cross_check"]
