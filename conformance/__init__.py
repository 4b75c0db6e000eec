"""tcgen05-conformance: ISA tables, legality, encodings, programs, backends, reports and CLI."""

#: The package's version, the one place it is written: pyproject.toml reads it from here.
__version__ = "1.0.0"

#: The version of the frozen case list that `tcgen05-conformance suite` names (its stable case ids,
#: with the oracle and profile versions their expected states come from); a simulator that passes it
#: "passes suite 1.0". Changed only when that list changes.
SUITE_VERSION = "1.0"
