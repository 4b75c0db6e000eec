"""Fuzz the `sim:CMD` protocol (docs/simulators.md) with Hypothesis: malformed simulator
behaviours, one per case, through one `SimBackend` (its simulator kept running from case to case,
as in a run), counted as `tcgen05_conformance.fuzz.inputs` counts the input readers.

A behaviour (`behaviours()`) is what a faulty simulator does with one request: its answer line
(arbitrary bytes, text, JSON nested thousands deep, JSON values that are not an answer, answers
with fields of the wrong type, a line past the length limit, non-UTF-8, no newline), the first
state file (missing, short, long, empty, a directory, a FIFO, /dev/zero, a dangling link, a 3 GiB
sparse file, random words of the right size), exits and signals before or after answering, a
closed stdout, delays past the case timeout, a second answer (at once or later) or a garbage line
after the answer, and noise on stderr. `conformance/fuzz/simulator_agent.sh` acts it out,
running the shell script `act_script` writes for the case.

Each case ends one way: a state read back (accepted), or a skip or error on one line (refused).
A traceback is any exception out of `observe`, an observation of another case, a message of more
than one line or `MAX_MESSAGE` characters, a well-behaved answer that does not give the state (the
case blamed for what the simulator did before it), or a damaged state file read as a state; a hang
is a case still running after the limit. Run by `tcgen05-conformance fuzz --simulator`.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.sim import MAX_ANSWER_BYTES, SimBackend
from tcgen05_conformance.harness.export import state_layout
from tcgen05_conformance.harness.runner import FAMILIES, generate_programs
from tcgen05_conformance.fuzz.inputs import ACCEPTED, HANG, REFUSED, TOP_OUTCOMES, TRACEBACK, Broken, count_outcomes
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples

AGENT = Path(__file__).resolve().parent / "simulator_agent.sh"
CASE_TIMEOUT_S = 0.5  # the simulator's per-case timeout while fuzzing (each hang costs it)
MAX_MESSAGE = 2000  # characters of a skip or error
OK = b'{"case_id": "@CASE@", "status": "ok"}'
STATE_FILES = ("right", "random", "missing", "short", "long", "empty", "directory", "fifo", "dev-zero", "dangling-link",
               "sparse-3GiB")
DAMAGED = set(STATE_FILES) - {"right", "random"}
# Faults drawn rarely enough that the hangs among them (each costs the case timeout) stay a small share.
BEFORE = (None,) * 60 + ("exit0", "exit3", "segv", "kill", "close-stdout", "hang")
AFTER = (None,) * 12 + ("exit0", "segv", "second-answer", "late-second-answer", "garbage-line")
DELAYS = (0.0,) * 100 + (0.05, CASE_TIMEOUT_S * 1.2)

_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                            max_leaves=8)


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()


def answer_lines() -> st.SearchStrategy[bytes]:
    """An answer line as a faulty simulator may write it (@CASE@: the request's case id)."""
    field = st.one_of(st.just("@CASE@"), _json_values)
    answers = st.fixed_dictionaries({"case_id": field, "status": st.one_of(st.sampled_from(["ok", "unsupported", "error"]),
                                                                           _json_values)},
                                    optional={"reason": _json_values, "extra": _json_values})
    return st.one_of(
        st.just(OK),
        st.binary(max_size=300),
        st.text(max_size=200).map(str.encode),
        st.integers(1, 20_000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(1, 5_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
        _json_values.map(_dumps),
        answers.map(_dumps),
        st.integers(MAX_ANSWER_BYTES - 64, MAX_ANSWER_BYTES + 4096).map(lambda n: b"x" * n),
        st.binary(min_size=1, max_size=8).map(lambda junk: OK[:-1] + junk + b"}"),
        st.just(OK + b"\xff\xfe"),
    )


def behaviours() -> st.SearchStrategy[dict]:
    """One case's behaviour (bytes as base64, so that a report can show it as JSON)."""
    return st.fixed_dictionaries({
        "answer": answer_lines().map(lambda b: base64.b64encode(b).decode()),
        "files": st.sampled_from(STATE_FILES),
        "before": st.sampled_from(BEFORE),
        "after": st.sampled_from(AFTER),
        "delay": st.sampled_from(DELAYS),
        "blank": st.integers(0, 2),
        "newline": st.sampled_from((True,) * 19 + (False,)),
        "stderr": st.binary(max_size=80).map(lambda b: base64.b64encode(b).decode()),
    })


_DIE = {"exit0": "exit 0", "exit3": "exit 3", "segv": "kill -SEGV $$", "kill": "kill -KILL $$",
        "close-stdout": "exec 1>&-; sleep 0.05; exit 0", "hang": "sleep 3600"}


def act_script(b: dict, program: Program, folder: Path) -> str:
    """The shell commands acting out behaviour `b` for `program`'s request ($out: its state folder);
    the answer and the noise go to files in `folder`, which the commands print."""
    (folder / "answer.bin").write_bytes(b"\n" * b["blank"] + base64.b64decode(b["answer"]).replace(b"@CASE@", program.case_id.encode())
                                        + (b"\n" if b["newline"] else b""))
    (folder / "stderr.bin").write_bytes(base64.b64decode(b["stderr"]))
    lines = [f"cat '{folder}/stderr.bin' >&2"]
    if b["before"]:
        lines.append(_DIE[b["before"]])
    if b["delay"]:
        lines.append(f"sleep {b['delay']}")
    for k, part in enumerate(_state_parts(state_layout(program))):
        path, size = f'"$out/{part["file"]}"', 4 * math.prod(part["shape"])
        how = b["files"] if k == 0 else "right"
        lines.append({"right": f"truncate -s {size} {path}", "random": f"head -c {size} /dev/urandom > {path}",
                      "missing": ":", "short": f"truncate -s {size - 1} {path}", "long": f"truncate -s {size + 4} {path}",
                      "empty": f": > {path}", "directory": f"mkdir {path}", "fifo": f"mkfifo {path}",
                      "dev-zero": f"ln -s /dev/zero {path}", "dangling-link": f'ln -s "$out/nowhere" {path}',
                      "sparse-3GiB": f"truncate -s 3G {path}"}[how])
    lines.append(f"cat '{folder}/answer.bin'")
    second = f"printf '%s\\n' '{{\"case_id\": \"{program.case_id}\", \"status\": \"ok\"}}'"
    if b["after"]:
        lines.append({"second-answer": second, "late-second-answer": f"sleep 0.15; {second}",
                      "garbage-line": "printf '\\000\\377not an answer\\n'"}.get(b["after"]) or _DIE[b["after"]])
    return "\n".join(lines) + "\n"


def _state_parts(layout: dict) -> list[dict]:
    return [layout["tmem"], *layout["loads"], *([layout["hopper_d"]] if layout["hopper_d"] else [])]


def well_behaved(b: dict) -> bool:
    """Whether the behaviour answers its case properly: an ok answer, on time, the state written whole."""
    return (b["before"] is None and b["delay"] < CASE_TIMEOUT_S / 2 and b["files"] in ("right", "random")
            and base64.b64decode(b["answer"]) == OK and b["newline"])


def _reason(text: str) -> str:
    """A skip or error without the case id and the quoted bytes or values, to count outcomes by reason."""
    text = re.sub(r"^case [0-9a-f]+: ", "", text)
    text = re.sub(r"(b'|b\"|\(|\"|\[|\{).*", "", text)
    text = re.sub(r"\d+(\.\d+)?", "_", text)
    return text.strip()[:80]


def case_outcome(backend: SimBackend, folder: Path, program: Program, behaviour: dict) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what became of the case) for one behaviour; Broken when the backend
    broke the protocol's promises (see the module's docstring)."""
    script = folder / "act.sh.new"
    script.write_text(act_script(behaviour, program, folder), encoding="utf-8")
    os.replace(script, folder / "act.sh")
    observed = backend.observe([program])
    if len(observed) != 1 or observed[0].case_id != program.case_id:
        raise Broken(f"observed {[o.case_id for o in observed]} for case {program.case_id}")
    [o] = observed
    message = o.error or o.skip
    if message is not None and ("\n" in message or "\r" in message or len(message) > MAX_MESSAGE):
        raise Broken(f"a message of more than one line or {MAX_MESSAGE} characters: {message[:300]!r}")
    if well_behaved(behaviour) and o.state is None:
        raise Broken(f"a well-behaved answer gave no state: {message}")
    if o.state is not None and behaviour["files"] in DAMAGED:
        raise Broken(f"a damaged state file ({behaviour['files']}) was read as a state")
    if o.state is not None:
        return ACCEPTED, "state read back" + (" (after a restart)" if "simulator_note" in o.data else "")
    return REFUSED, ("skip: " if o.skip else "error: ") + _reason(message)


def fuzz_programs() -> list[Program]:
    """The programs the cases carry: two tcgen05.mma programs of `run` (its first two Table 39
    classes, after the first program of each other family) and a Hopper one (its D too)."""
    drawn = generate_programs(len(FAMILIES) + 1, 0)
    return [drawn[0], drawn[len(FAMILIES)], draw_examples(hopper_programs(), 1, 0)[0]]


def measure(examples: int, seed: int, limit: float, log=None) -> dict:
    """`examples` simulator behaviours through one SimBackend: the counts of each outcome, the
    commonest outcomes and the first 50 tracebacks or hangs with their behaviours."""
    log = log or sys.stderr
    programs = fuzz_programs()
    with tempfile.TemporaryDirectory(prefix="fuzz-simulator-") as tmp:
        backend = SimBackend(shlex.join(["sh", str(AGENT), tmp]), "exact", case_timeout_s=CASE_TIMEOUT_S)
        last: list[str] = []

        def one(drawn: tuple[int, dict]) -> tuple[str, str]:
            # One program after another, never the same twice in a row: a run never asks for a case id
            # twice, and a late second answer must name another case than the next request's.
            k, behaviour = drawn
            program = next(p for p in programs[k:] + programs[:k] if p.case_id not in last[-1:])
            last.append(program.case_id)
            return case_outcome(backend, Path(tmp), program, behaviour)

        try:
            counts = count_outcomes(st.tuples(st.integers(0, len(programs) - 1), behaviours()), one, examples, seed, limit, log)
        finally:
            backend.close()
    return {"simulator": {**counts, "case_timeout_s": CASE_TIMEOUT_S, "programs": [p.case_id for p in programs]}}


def markdown(report: dict) -> str:
    """The report as a page: the counts, any traceback or hang, the commonest outcomes."""
    r = report["simulator"]
    lines = ["# Fuzzing the simulator protocol", "", f"`{report['command']}` on {report['machine']}", "",
             f"Each input is one faulty simulator behaviour for one case (docs/simulators.md), through one `sim:` "
             f"backend whose simulator is kept running from case to case; case timeout {r['case_timeout_s']:g} s.", "",
             "| inputs | state read back | skipped or error on one line | tracebacks | hangs | seconds |",
             "| --- | --- | --- | --- | --- | --- |",
             f"| {r['inputs']} | {r[ACCEPTED]} | {r[REFUSED]} | {r[TRACEBACK]} | {r[HANG]} | {r['seconds']} |", ""]
    lines += [f"- {f['outcome']}: {f['detail']}" for f in r["failures"]]
    lines += ["", f"The {TOP_OUTCOMES} commonest outcomes (case ids, numbers and quoted values left out)", "",
              "| inputs | outcome |", "| --- | --- |"]
    lines += [f"| {n} | {reason.replace('|', '/')} |" for reason, n in list(r["outcomes"].items())[:TOP_OUTCOMES]]
    return "\n".join(lines) + "\n"
