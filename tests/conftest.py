"""Test configuration: the Hypothesis profile (ci/dev/nightly) from the environment, a marker for
tests that need the in-process assembler (cuda-python's nvJitLink), and the `slow` tests first."""

import pytest

from generators.settings import load_profile

load_profile()


def _assembler_available() -> bool:
    try:
        from device.assembler import assembler_version

        assembler_version()
        return True
    except Exception:
        return False


ASSEMBLER = _assembler_available()
needs_assembler = pytest.mark.skipif(
    not ASSEMBLER, reason="nvJitLink not installed: pip install 'tcgen05-conformance[compile]'"
)


def pytest_collection_modifyitems(config, items) -> None:
    """The tests marked `slow` (a minute or more each) run first, the rest in their order: with the
    suite spread over CPUs (pytest-xdist), a long test started last leaves the other CPUs idle
    until it ends."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
