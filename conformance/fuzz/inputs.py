"""Fuzz the readers of outside input with Hypothesis and count what happens: malformed program
files through the program loader (and, when it accepts one, everything `replay` does with it
short of a device: the legality check, the oracle, the kernel text), and damaged recorded-vector
folders through `vectors check`.

Each input ends one of four ways: accepted (a program loaded and went through, a folder
checked), refused with a one-line error naming the file, a traceback (any other exception,
or an error of more than one line, or a folder checked with fewer result files than it holds),
or a hang (still running after the time limit). Done when there are no tracebacks and no hangs.
Run by `tcgen05-conformance fuzz` (conformance/cli/fuzz.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tcgen05_conformance.core import program as program_model
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.inputs import printable
from tcgen05_conformance.core.program import ProgramError
from tcgen05_conformance.fuzz.command_calls import Wrong
from tcgen05_conformance.harness import runner
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE
from tcgen05_conformance.harness.export import load_case
from tcgen05_conformance.device.ptx.kernels import UnsupportedProgram, kernel
from tcgen05_conformance.generators.malformed import FileDamage, damage_folder, malformed_programs, vector_damage
from tcgen05_conformance.oracles.numerics.vectors import MANIFEST, RECORDINGS, VectorFileError, check_vectors, find_folders

ACCEPTED, REFUSED, TRACEBACK, HANG, WRONG = "accepted", "refused", "traceback", "hang", "wrong"
PROBES = Path(__file__).resolve().parents[2] / "probes"
# The development split shipped with the project.
RECORDED = RECORDINGS
MEMORY_LIMIT = 4 << 30  # address space: a reader that tries to allocate without bound fails, not the machine


@contextlib.contextmanager
def limited_memory(limit: int = MEMORY_LIMIT) -> Iterator[None]:
    """The process's address space limited to `limit` bytes while the fuzz runs, and given back after
    it: a limit left in place would make whatever the process starts later (a browser in the same
    test session) fail to reserve its memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
TOP_OUTCOMES = 25  # outcomes listed in the report


class Hang(Exception):
    """An input still being handled when its time ran out."""


class Broken(Exception):
    """A reader's answer that breaks its contract (an error of several lines, a short count)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expire(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _refusal(message: str, names: str) -> str:
    """What a one-line refusal naming `names` says, without the file, the JSON path and the values
    (to count refusals by reason); Broken if it is not one line or does not name the file."""
    if "\n" in message or "\r" in message or not message.startswith(names):
        raise Broken(f"error not on one line naming {names}: {message!r}")
    reason = re.sub(r"^[^ ]*: (\$[^ ]*: )?", "", message[len(names):].lstrip("/"))
    reason = re.sub(r"^[\[{].*? (is|holds) ", r"_ \1 ", reason)  # a list or object quoted first
    reason = re.sub(r"\b(got|one of|not in) .*", r"\1 ...", re.sub(r" \([^)]*\)", "", reason))
    reason = re.sub(r"'[^']*'|\"[^\"]*\"|-?\d+(\.\d+)?", "_", reason)
    return reason[:60]


# --- programs -------------------------------------------------------------------------------


def program_corpus(examples: int, seed: int) -> list[dict]:
    """Well-formed programs to mutate: the probes, and the first `examples` programs of `run`."""
    programs = [program_model.load(str(p)) for p in sorted(PROBES.glob("*.json"))]
    programs += runner.generate_programs(examples, seed)
    return [program_model.to_json(p) for p in programs]


def program_outcome(data: bytes, path: Path, observers: dict | None = None) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what became of it) for one program file's bytes, read and judged as
    `replay` does with the reference (the oracle) and, for a legal program, its kernel written as
    the ptxas backend writes it; Broken or any other exception when a reader breaks. `observers`
    keeps the reference backend from one input to the next."""
    path.write_bytes(data)
    try:
        p, profile = load_case(str(path))  # what replay reads: a program file or a case.json
    except ProgramError as e:
        return REFUSED, _refusal(str(e), str(path))
    legal = not [v for op in p.ops for v in check(op, p.target)]
    (verdict,) = runner.execute([p], [DEFAULT_REFERENCE], profile, observers=observers).results[DEFAULT_REFERENCE]
    if legal:
        try:
            kernel(p)
        except UnsupportedProgram:
            pass
    why = verdict.detail.split(":")[0] if verdict.detail else "a state"
    return ACCEPTED, f"{'legal' if legal else 'illegal'}; {DEFAULT_REFERENCE}: {verdict.status} ({why})"


# --- vector folders -------------------------------------------------------------------------


def small_vector_folder(source: Path, into: Path, lines: int = 6) -> Path:
    """A copy of the first `lines` vectors of the recorded format folder `source` under
    `into`/<GPU>/, with its GPU folder's manifest when it has one."""
    folder = into / source.parent.name / source.name
    folder.mkdir(parents=True)
    for f in source.iterdir():
        with f.open("rb") as fh:
            (folder / f.name).write_bytes(b"".join(fh.readline() for _ in range(lines)))
    if (source.parent / MANIFEST).is_file():
        shutil.copyfile(source.parent / MANIFEST, folder.parent / MANIFEST)
    return folder


def vector_outcome(base: Path, damage: list[FileDamage], work: Path, profile: str) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, why) for `base` (a format folder) and its GPU folder's manifest
    damaged by `damage`."""
    if work.exists():
        shutil.rmtree(work)
    folder = work / base.parent.name / base.name
    shutil.copytree(base, folder)
    if (base.parent / MANIFEST).is_file():
        shutil.copyfile(base.parent / MANIFEST, folder.parent / MANIFEST)
    damage_folder(folder, damage)
    try:
        result = check_vectors(folder, profile)
    except (VectorFileError, FileNotFoundError) as e:
        return REFUSED, _refusal(str(e), str(work))
    held = sum(len(f.outputs) for f in find_folders(folder))
    if len(result["files"]) != held:
        raise Broken(f"checked {len(result['files'])} result files of {held}")
    return ACCEPTED, "checked, " + ("no mismatch" if result["mismatches"] == 0 else "mismatches")


# --- the measurement ------------------------------------------------------------------------


def count_outcomes(strategy: st.SearchStrategy, handle: Callable, examples: int, seed: int, limit: float, log) -> dict:
    """Hand `examples` inputs of `strategy` to `handle` and count how each ended (`Wrong`, raised
    by a handler whose command contradicts its input: `tcgen05_conformance.fuzz.command_calls`).
    The inputs are drawn first and handled after, outside Hypothesis, so that a handler may run
    code that draws with Hypothesis itself (`run` drawing its programs)."""
    counts = {ACCEPTED: 0, REFUSED: 0, TRACEBACK: 0, HANG: 0, WRONG: 0}
    reasons: Counter[str] = Counter()
    failures: list[dict] = []
    drawn: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value) -> None:
        drawn.append(value)

    started = time.perf_counter()
    draw()
    for value in drawn:
        try:
            with _deadline(limit):
                outcome, reason = handle(value)
            reasons[f"{outcome}: {reason}"] += 1
        except Hang as e:
            outcome, detail = HANG, str(e)
        except Wrong as e:
            outcome, detail = WRONG, str(e)
        except Exception as e:  # noqa: BLE001 - counting every way a reader can break is the point
            outcome, detail = TRACEBACK, "".join(traceback.format_exception_only(type(e), e)).strip()
            detail += " at " + " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                          for f in reversed(traceback.extract_tb(e.__traceback__)[-3:]))
        counts[outcome] += 1
        if outcome in (TRACEBACK, HANG, WRONG) and len(failures) < 50:
            failures.append({"outcome": outcome, "detail": detail[:500], "input": repr(value)[:2000]})
            print(f"  {outcome}: {printable(detail)[:300]} <- {printable(repr(value))[:300]}", file=log, flush=True)
        total = sum(counts.values())
        if total % 500 == 0:
            print(f"  {total} inputs: {counts}", file=log, flush=True)
    return {"inputs": sum(counts.values()), **counts, "seconds": round(time.perf_counter() - started, 1),
            "outcomes": dict(reasons.most_common()), "failures": failures}


def measure(examples: int, seed: int, corpus_size: int, vectors: Path, profile: str, limit: float, log=None) -> dict:
    """Fuzz the program loader and the vector reader with `examples` inputs each: the counts of
    each outcome, the commonest outcomes and the first 50 tracebacks or hangs with their inputs."""
    log = log or sys.stderr  # looked up when it runs: a test may have replaced it
    with limited_memory(), tempfile.TemporaryDirectory(prefix="fuzz-inputs-") as tmp:
        work = Path(tmp)
        corpus = program_corpus(corpus_size, seed)
        print(f"programs: {len(corpus)} well-formed programs to mutate", file=log, flush=True)
        observers: dict = {}
        programs = count_outcomes(malformed_programs(corpus), lambda data: program_outcome(data, work / "case.json", observers),
                         examples, seed, limit, log)
        bases = [small_vector_folder(vectors / fmt, work / "bases") for fmt in sorted(os.listdir(vectors))
                 if (vectors / fmt).is_dir()]
        print(f"vectors: {len(bases)} format folders of {vectors} (6 vectors each) to damage", file=log, flush=True)
        folders = count_outcomes(st.tuples(st.sampled_from(bases), vector_damage()),
                        lambda drawn: vector_outcome(drawn[0], drawn[1], work / "damaged", profile),
                        examples, seed, limit, log)
    return {"programs": {**programs, "corpus": len(corpus)}, "vectors": {**folders, "bases": [str(b.name) for b in bases]}}


def markdown(report: dict) -> str:
    """The report as a page: the counts per reader, any traceback or hang, the commonest outcomes."""
    rows = [f"| {name} | {r['inputs']} | {r[ACCEPTED]} | {r[REFUSED]} | {r[TRACEBACK]} | {r[HANG]} | {r['seconds']} |"
            for name, r in (("program loader (then judged as replay does: oracle, legality, kernel text)", report["programs"]),
                            ("vector reader (vectors check)", report["vectors"]))]
    lines = ["# Fuzzing the input readers", "", f"`{report['command']}` on {report['machine']}", "",
             "| reader | inputs | accepted | refused (one line) | tracebacks | hangs | seconds |",
             "| --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
    for name in ("programs", "vectors"):
        for f in report[name]["failures"]:
            lines.append(f"- {name} {f['outcome']}: {f['detail']}")
    for name, title in (("programs", "Program files"), ("vectors", "Vector folders")):
        lines += ["", f"{title}: the {TOP_OUTCOMES} commonest outcomes (values, numbers and JSON paths left out)", "",
                  "| inputs | outcome |", "| --- | --- |"]
        lines += [f"| {n} | {reason} |" for reason, n in list(report[name]["outcomes"].items())[:TOP_OUTCOMES]]
    return "\n".join(lines) + "\n"

