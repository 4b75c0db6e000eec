"""The case files `replay` reads from the paths it is given: a program file or a case.json as it
is, and from a folder (a run's report folder, an export folder, a folder of program files) every
case.json below it and every other .json file directly in it or in its cases/ folder, but the
reports' own files. One line, naming the path, when a path holds none."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tcgen05_conformance.harness.export import CASE_FILE, INDEX_FILE

NOT_CASES = frozenset({"summary.json", "results.json", INDEX_FILE, "probe.json"})  # reports beside the cases
CASES_DIR = "cases"


class CaseFilesError(ValueError):
    """A path that is neither a case file nor a folder holding one."""


def case_files(paths: Sequence[str]) -> list[str]:
    """The case files `paths` name, in order, each once."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            files = _in_folder(path)
            if not files:
                raise CaseFilesError(f"{path}: no case file in this folder (a program .json, or an export's "
                                     f"{CASES_DIR}/<case id>/{CASE_FILE})")
            found += files
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise CaseFilesError(f"{path}: no such file or folder")
    return list(dict.fromkeys(os.path.normpath(f) for f in found))


def _in_folder(folder: str) -> list[str]:
    nested = [os.path.join(root, CASE_FILE) for root, _, names in os.walk(folder) if CASE_FILE in names]
    direct = [os.path.join(where, name) for where in (folder, os.path.join(folder, CASES_DIR)) if os.path.isdir(where)
              for name in os.listdir(where)
              if name.endswith(".json") and name not in NOT_CASES and name != CASE_FILE
              and os.path.isfile(os.path.join(where, name))]
    return sorted(direct) + sorted(nested)
