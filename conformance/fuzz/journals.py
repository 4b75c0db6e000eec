"""Damaged journals through a resumed `run --journal`: the journal of a small run that passed,
then one of its lines damaged (`tcgen05_conformance.fuzz.json_damage`: a status or detail
edited, a record dropped or added, the header's run changed, the file cut, made a FIFO or a
device). The resume must refuse on one line (exit 2), or reuse only records its run wrote and
exit 0 with every case passed, as the run did; an edited record must never become a verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import strategies as st

from tcgen05_conformance.fuzz.command_calls import Main, Wrong, call, refusal, summary_of
from tcgen05_conformance.fuzz.json_damage import damage_file, damages

ACCEPTED, REFUSED = "accepted", "refused"
RUN = ["run", "--count", "3", "--seed", "2", "--backend", "oracle"]


def make_journal(main: Main, into: Path) -> Path:
    """The journal of a small run that passed."""
    journal = into / "journal.jsonl"
    called = call(main, [*RUN, "--journal", str(journal), "--out", str(into / "base")])
    if called.status != 0:
        raise RuntimeError(f"the base run exited {called.status}: {called.err.strip()[-300:]}")
    return journal


def inputs() -> st.SearchStrategy:
    return damages()


def journal_outcome(main: Main, base: Path, damage: tuple, work: Path) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what happened) for one damaged journal resumed."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    journal = work / "journal.jsonl"
    shutil.copyfile(base, journal)
    damage_file(journal, damage, lines=True)
    out = work / "out"
    called = call(main, [*RUN, "--journal", str(journal), "--out", str(out)])
    if called.status == 2:
        return REFUSED, refusal(called)
    if called.status != 0:
        raise Wrong(f"exit {called.status} resuming a journal of a run that passed: {called.err.strip()[-200:]}")
    summary = summary_of(str(out))
    if summary["backends"]["oracle"]["passed"] != summary["cases"]:
        raise Wrong(f"a resume reported {summary['backends']['oracle']} for a run that passed")
    return ACCEPTED, "exit 0" + (", resumed" if "resuming" in called.err else ", journal started afresh")
