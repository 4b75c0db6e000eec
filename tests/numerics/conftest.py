"""Fixtures shared by the numerics tests."""

from __future__ import annotations

import pytest

from tcgen05_conformance.generators import numeric_stream as ns
from tcgen05_conformance.oracles.numerics import checker


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> checker.HostChecker:
    """The integer checker built for this CPU (g++); the test is skipped where g++ is missing."""
    try:
        return checker.HostChecker.build(ns.C_SOURCE, str(tmp_path_factory.mktemp("checker")))
    except RuntimeError as e:
        if "g++ not found" in str(e):
            pytest.skip(str(e))
        raise
