"""The numeric profiles by name: which tensor-core arithmetic a reference computes results with,
and the architecture each models. This is the one list that programs, the CLI and the pytest
plugin offer. The models themselves are `tcgen05_conformance.oracles.numerics.profiles.PROFILES` (a floor above this
one), which checks its registry against this table when it is imported.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProfileFacts:
    """A numeric profile a user may choose: its name, the architecture it models and the GPU its
    datapaths were fitted to (both None for a definition that models no hardware)."""

    name: str
    architecture: str | None
    gpu: str | None


NUMERIC_PROFILES: dict[str, ProfileFacts] = {
    p.name: p
    for p in (
        ProfileFacts("exact", None, None),  # the exact sum rounded once: docs/numerics.md
        ProfileFacts("sm_90a", "Hopper", "H100"),
        ProfileFacts("sm_100a", "Blackwell", "B200"),
    )
}
PROFILE_NAMES: tuple[str, ...] = tuple(NUMERIC_PROFILES)
DEFAULT_PROFILE = "exact"
