"""tcgen05-conformance: ISA tables, legality, encodings, programs, backends, reports and CLI."""

__version__ = "0.1.0"
