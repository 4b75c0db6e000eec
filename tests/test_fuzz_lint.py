"""`fuzz --lint` (issue 30, item 3): hostile PTX and C++ through lint and import end accepted or
refused on one line; the measurement counts a command that breaks its contract."""

from __future__ import annotations

import io
import resource
import tempfile
from pathlib import Path

from tcgen05_conformance.cli import main
from tcgen05_conformance.fuzz.inputs import HANG, TRACEBACK
from tcgen05_conformance.fuzz.lint_inputs import hostile_files, measure, outcome


def test_every_hand_made_hostile_file_is_judged_or_refused():
    with tempfile.TemporaryDirectory() as work:
        outcomes = [outcome(main, f, Path(work)) for f in hostile_files()]
    assert len(outcomes) == 20 and all(o[0] in ("accepted", "refused") for o in outcomes)


def test_a_small_fuzz_run_has_no_traceback_or_hang():
    report = measure(main, 40, 0, 30.0)["lint"]
    assert report["inputs"] == 40 and report[TRACEBACK] == 0 and report[HANG] == 0


def test_a_command_that_breaks_its_contract_is_counted():
    def crashing(argv: list[str]) -> int:
        print("a two-line\nerror", file=__import__("sys").stderr)
        return 2

    report = measure(crashing, 5, 0, 30.0)["lint"]
    assert report[TRACEBACK] == 5 and "one line" in report["failures"][0]["detail"]


def test_a_fuzz_run_gives_the_address_space_back():
    """The fuzz limits the process's address space while it runs and restores it after: a limit
    left behind made every later Chromium of the same test session die of SIGTRAP."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    measure(main, 3, 0, 30.0, log=io.StringIO())
    assert resource.getrlimit(resource.RLIMIT_AS) == before
