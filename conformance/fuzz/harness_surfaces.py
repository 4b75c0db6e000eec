"""`fuzz --harness`: the harness's own surfaces under fire, each with Hypothesis and counted as
`fuzz` counts the input readers (`tcgen05_conformance.fuzz.inputs.count_outcomes`): misbehaving
plugin backends through `run` (`plugins`), damaged shard folders through `report merge`
(`shards`), damaged profile files (`profile_files`), damaged journals resumed (`journals`), and
the pytest plugin's options (`pytest_options`). Beside accepted, refused on one line, traceback
and hang, an input may end `wrong`: an exit status or reports that contradict what was given (a
run exiting 0 for a misbehaving plugin, reports missing, merged counts that are not the cases').
Done when there are no tracebacks, hangs or wrong ends."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable

from tcgen05_conformance.fuzz import journals, plugins, profile_files, pytest_options, shards
from tcgen05_conformance.fuzz.command_calls import Main
from tcgen05_conformance.fuzz.inputs import ACCEPTED, HANG, RECORDED, REFUSED, TOP_OUTCOMES, TRACEBACK, WRONG
from tcgen05_conformance.fuzz.inputs import count_outcomes, limited_memory, small_vector_folder

SURFACES = {
    "plugins": "misbehaving plugin backends through run (factory, name, observes, unavailable_reason, observe; "
               "as backend or reference; isolated or in process)",
    "merge": "damaged shard folders through report merge (summary.json, results.json, --out)",
    "profiles": "damaged profile files through vectors check --profile",
    "journals": "damaged journals resumed by run --journal",
    "pytest": "the pytest plugin's options in a pytest session of their own",
}


def measure(main: Main, examples: int, seed: int, limit: float, surfaces: tuple[str, ...] = tuple(SURFACES),
            log=None) -> dict:
    """`examples` inputs through each surface named in `surfaces`, `main` the command line's entry
    point: the counts of each outcome, the commonest outcomes and the first tracebacks, hangs and
    wrong ends with their inputs."""
    log = log or sys.stderr
    report = {}
    with limited_memory(), tempfile.TemporaryDirectory(prefix="fuzz-harness-") as tmp:
        work = Path(tmp)
        for name in surfaces:
            print(f"{name}: {examples} inputs", file=log, flush=True)
            strategy, handle = _surface(name, main, work / name)
            report[name] = count_outcomes(strategy, handle, examples, seed, limit, log)
    return report


def _surface(name: str, main: Main, work: Path) -> tuple:
    """(strategy, handler) of one surface, its fixed material (base shards, journal, folder) made."""
    work.mkdir(parents=True)
    handle: Callable
    if name == "plugins":
        return plugins.scripts(), lambda script: plugins.plugin_outcome(main, script, work / "case")
    if name == "merge":
        bases = shards.make_shards(main, work / "bases")
        return shards.inputs(), lambda drawn: shards.merge_outcome(main, bases, drawn, work / "case")
    if name == "profiles":
        folder = small_vector_folder(RECORDED / "H100" / "fp16", work / "bases")
        return profile_files.inputs(), lambda drawn: profile_files.profile_outcome(main, folder, drawn, work / "case")
    if name == "journals":
        base = journals.make_journal(main, work / "base")
        return journals.inputs(), lambda damage: journals.journal_outcome(main, base, damage, work / "case")
    handle = lambda options: pytest_options.session_outcome(options, work / "session")  # noqa: E731
    return pytest_options.inputs(), handle


def markdown(report: dict) -> str:
    """The report as a page: the counts per surface, every traceback, hang or wrong end, the commonest outcomes."""
    rows = [f"| {name} | {SURFACES[name]} | {r['inputs']} | {r[ACCEPTED]} | {r[REFUSED]} | {r[TRACEBACK]} | {r[HANG]} | "
            f"{r[WRONG]} | {r['seconds']} |" for name, r in report.items() if name in SURFACES]
    lines = ["# Fuzzing the harness's surfaces", "", f"`{report['command']}` on {report['machine']}", "",
             "| surface | what | inputs | accepted | refused (one line) | tracebacks | hangs | wrong | seconds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
    for name in SURFACES:
        for f in report.get(name, {}).get("failures", []):
            lines.append(f"- {name} {f['outcome']}: {f['detail']}")
    for name in (n for n in SURFACES if n in report):
        lines += ["", f"{name}: the {TOP_OUTCOMES} commonest outcomes (values and numbers left out)", "",
                  "| inputs | outcome |", "| --- | --- |"]
        lines += [f"| {n} | {reason} |" for reason, n in list(report[name]["outcomes"].items())[:TOP_OUTCOMES]]
    return "\n".join(lines) + "\n"
