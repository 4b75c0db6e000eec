"""Hypothesis settings profiles, chosen by the TCGEN05_HYPOTHESIS_PROFILE environment variable.

`ci` is deterministic (derandomized, no example database), so every CI run draws the same
programs; `dev` (default) and `nightly` explore with fresh randomness.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE_VARIABLE = "TCGEN05_HYPOTHESIS_PROFILE"

settings.register_profile(
    "ci", max_examples=60, derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev", max_examples=100, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "nightly", max_examples=5000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def load_profile() -> str:
    """Activate the profile named by the environment (CI=true implies `ci`); returns its name."""
    name = os.environ.get(PROFILE_VARIABLE) or ("ci" if os.environ.get("CI") == "true" else "dev")
    settings.load_profile(name)
    return name
