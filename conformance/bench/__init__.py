"""Benchmarks of the oracle (`tcgen05-conformance bench`): inner products per format and whole MMAs
per second (`oracle_throughput`).
"""

from __future__ import annotations

from tcgen05_conformance.bench.oracle_throughput import bench

__all__ = ["bench"]
