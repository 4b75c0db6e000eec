"""Backends: plugins with one protocol that execute programs (RISCOF-style separation of the
reference model and the devices under test)."""

from conformance.backends.base import Backend, CaseResult, backend_named, BACKENDS

__all__ = ["Backend", "CaseResult", "backend_named", "BACKENDS"]
