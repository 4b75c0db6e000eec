"""Test configuration: the Hypothesis profile (ci/dev/nightly) from the environment, and a marker
for tests that need the in-process assembler (cuda-python's nvJitLink)."""

import pytest

from tcgen05_conformance.generators.settings import load_profile

load_profile()


def _assembler_available() -> bool:
    try:
        from tcgen05_conformance.device.assembler import assembler_version

        assembler_version()
        return True
    except Exception:
        return False


ASSEMBLER = _assembler_available()
needs_assembler = pytest.mark.skipif(
    not ASSEMBLER, reason="nvJitLink not installed: pip install 'tcgen05-conformance[compile]'"
)
