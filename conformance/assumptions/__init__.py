"""The assumptions ledger (docs/assumptions.md) put to a backend: every probe program it can run, and
a verdict per assumption (`tcgen05-conformance probe`).
"""

from __future__ import annotations

from tcgen05_conformance.assumptions.probe import run_probes, write_ledger, write_outputs

__all__ = ["run_probes", "write_ledger", "write_outputs"]
