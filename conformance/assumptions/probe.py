"""`probe`: run every probe of the assumptions ledger (docs/assumptions.md) that a backend can
execute, and the numeric probe vectors as tcgen05.mma programs, and give a verdict per assumption.

Each probe program's readings (`tcgen05_conformance.probes.readings.READINGS`) predict an outcome: the adopted one is
the oracle's state of the program (or undefined, where the oracle refuses it); an alternative is
the oracle's state of a rewritten program, an explicit image, a fault, or only "another state".
A program's verdict compares the backend's observation with them:

- `confirmed`: the observation is the adopted reading's (its state bit for bit; for an undefined
  adopted reading, a fault, or a state no alternative predicts);
- `refuted`: it is not: the first differing words decoded as `tcgen05_conformance.harness.diff` decodes a
  failure, and the alternatives whose prediction matches what was seen;
- `not runnable here`: the backend skipped the program (why: another architecture, no GPU, no
  kernel for the form).

An assumption is refuted when one of its programs is, else confirmed when one is, else not runnable.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, NotModelled, UndefinedBehaviour
from tcgen05_conformance.harness.backends.base import STATE, Observation, observes
from tcgen05_conformance.harness.diff import diff_states
from tcgen05_conformance.harness.judge import profile_for
from tcgen05_conformance.harness.report import ReportDir
from tcgen05_conformance.harness.runner import Observer, source_revision
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.oracles.numerics import from_binary32
from tcgen05_conformance.oracles.numerics import probes as numeric_probes
from tcgen05_conformance.probes.build import probes as ledger_probes
from tcgen05_conformance.probes.images import Images, codes
from tcgen05_conformance.probes.mma import idesc_word, operands
from tcgen05_conformance.probes.readings import ADOPTED, FAULT, OTHER, READINGS, REFUSED, STATE as PREDICTS_STATE, UNDEFINED, Reading, Readings

CONFIRMED, REFUTED, NOT_RUNNABLE = "confirmed", "refuted", "not runnable here"
VERDICTS = (REFUTED, CONFIRMED, NOT_RUNNABLE)  # an assumption's verdict: the first of these any of its programs has
PROBE_SCHEMA = "tcgen05-conformance/probe/1"
NUMERIC_ASSUMPTION = "A-TCGEN05-DATAPATH"
NUMERIC_ADOPTED = "tcgen05"  # the hypothesis the sm_100a profile implements (oracles/numerics/probes.py)
NUMERIC_PROFILE = "sm_100a"
LEDGER = Path(__file__).resolve().parents[2] / "docs" / "assumptions.md"
LINK_ERROR = "did not link"  # the blackwell backend's error when ptxas refuses a kernel


@dataclass
class ProbeProgram:
    """One program to observe: the assumption it settles, its name (file stem), the program and its readings."""

    assumption: str
    name: str
    program: Program
    readings: Readings


@dataclass
class Prediction:
    """A reading and what it predicts for one program: a state, or an outcome without one; `note`
    says why a predicted state could not be computed (the oracle refuses the rewritten program)."""

    reading: Reading
    state: MachineState | None = None
    note: str = ""

    def matches(self, program: Program, observed: Observation, adopted: MachineState | None) -> bool:
        outcome = self.reading.outcome
        if observed.error is not None:
            refused = LINK_ERROR in observed.error
            return (outcome == REFUSED and refused) or (outcome in (FAULT, UNDEFINED) and not refused)
        if observed.state is None:
            return False
        if outcome == OTHER:
            return adopted is None or _differs(program, adopted, observed.state)
        return self.state is not None and not _differs(program, self.state, observed.state)

    def as_dict(self) -> dict:
        predicted = ("the oracle's state" if self.reading.name == ADOPTED and self.reading.outcome == PREDICTS_STATE
                     else "a state (computed)" if self.state is not None else self.note or self.reading.outcome)
        return {"reading": self.reading.name, "says": self.reading.says, "outcome": self.reading.outcome,
                "predicted": predicted, "digest": self.state.digest() if self.state is not None else None}


def _differs(program: Program, expected: MachineState, actual: MachineState) -> bool:
    try:
        return diff_states(program, expected, actual).mismatched > 0
    except ValueError:  # the state does not fit the program
        return True


# --- the programs and their predictions -------------------------------------------------------------


def ledger_programs() -> list[ProbeProgram]:
    """Every probe program of the ledger (`tcgen05_conformance.probes.build`), with its assumption's readings."""
    return [ProbeProgram(p.assumption, p.name, p.labelled(), READINGS[p.assumption]) for p in ledger_probes()]


SCALE_A_COLUMN, SCALE_B_COLUMN = 48, 52  # TMEM columns of a numeric probe's scale factors (A: 128 rows, 4 columns)


def numeric_program(vector: numeric_probes.Probe) -> Program:
    """A numeric probe vector as one tcgen05.mma (M = 128, N = 16, A row 0 = a, B column 0 = b, c in
    D lane 0 column 0, every other element 0), judged by the sm_100a profile. A block-scaled vector is
    an MMA of its kind (.block32) whose every scale-factor byte in reach holds the vector's factors
    (each 32-bit cell repeats them, whatever SF_ID picks), for A at column 48, for B at 52."""
    scaled = vector.a_scale is not None
    kind = vector.kind if scaled else "f16" if vector.in_fmt in ("f16", "bf16") else "f8f6f4"
    k, n = len(vector.a), 16
    images = Images(columns=64 if scaled else 32)
    a = np.zeros((128, k))
    b = np.zeros((n, k))
    a[0], b[0] = vector.a, vector.b
    packed = kind in ("mxf4", "mxf4nvf4")  # two fp4 per byte; in f8f6f4 kinds 4/6-bit elements are padded (9.7.16.10.4.4)
    a_word, b_word = operands(images, [codes(vector.in_fmt, a)], [codes(vector.in_fmt, b)], vector.in_fmt, vector.in_fmt,
                              padded=isa.TYPE_BITS[vector.in_fmt] < 8 and not packed)
    images.tmem[0, 0, 0] = codes(vector.acc_fmt, [vector.c]).item()
    fields = {}
    if scaled:
        images.tmem[0, :, SCALE_A_COLUMN:SCALE_A_COLUMN + 4] = _scale_cell(vector.a_scale, vector.scale_fmt)
        images.tmem[0, :, SCALE_B_COLUMN:SCALE_B_COLUMN + 4] = _scale_cell(vector.b_scale, vector.scale_fmt)
        fields = dict(block_scale=True, scale_vec="block32", scale_a_tmem=taddr_codec.encode(0, SCALE_A_COLUMN),
                      scale_b_tmem=taddr_codec.encode(0, SCALE_B_COLUMN))
        idesc = idesc_word(kind, 128, n, vector.in_fmt, vector.in_fmt, scale_type=vector.scale_fmt)
    else:
        idesc = idesc_word(kind, 128, n, vector.in_fmt, vector.in_fmt, dtype=vector.acc_fmt)
    op = Tcgen05Mma(kind=kind, idesc=idesc, a_desc=a_word, b_desc=b_word, enable_input_d=True, **fields)
    label = f"{NUMERIC_ASSUMPTION}.{vector.name}: {vector.question}"
    return dataclasses.replace(images.program("sm_100a", (op,)), profile=NUMERIC_PROFILE, label=label)


def _scale_cell(factors: tuple[float, ...], fmt: str) -> int:
    """One TMEM word of scale-factor bytes: the factors' codes repeated over its four bytes."""
    byte_codes = [int(x) for x in from_binary32(np.array(factors, np.float32).view(np.uint32), fmt)]
    cell = (byte_codes * (4 // len(byte_codes)))[:4]
    return sum(code << (8 * i) for i, code in enumerate(cell))


def numeric_readings(vector: numeric_probes.Probe) -> Readings:
    """The datapath hypotheses of a numeric probe as readings: the adopted one is the sm_100a profile's
    (`recorded`), each other predicts its result bits in D lane 0, column 0."""
    predicted = numeric_probes.predictions(vector)

    def word(bits: int):
        def image(p: Program, adopted: MachineState | None) -> MachineState:
            s = MachineState(adopted.tmem.copy(), [w.copy() for w in adopted.loads], None)
            s.tmem[0, 0, 0] = bits
            return s
        return image

    alternatives = tuple(Reading(h, f"the {h} datapath: D = {bits:#x}", image=word(bits))
                         for h, bits in predicted.items() if h != NUMERIC_ADOPTED)
    return Readings(f"the {NUMERIC_ADOPTED} datapath (sm_100a): D = {predicted[NUMERIC_ADOPTED]:#x}", alternatives)


def numeric_programs() -> list[ProbeProgram]:
    """The numeric probe vectors as tcgen05.mma programs (every one has a legal form)."""
    return [ProbeProgram(NUMERIC_ASSUMPTION, f"{NUMERIC_ASSUMPTION}.{vector.name}", numeric_program(vector),
                         numeric_readings(vector)) for vector in numeric_probes.PROBES]


def predictions(pp: ProbeProgram, profile: str) -> tuple[MachineState | None, list[Prediction]]:
    """The adopted state (None when the oracle refuses the program) and every reading's prediction."""
    try:
        adopted = run(pp.program, profile)
    except (UndefinedBehaviour, NotModelled) as e:
        if pp.readings.outcome != UNDEFINED:
            raise ValueError(f"{pp.name}: the oracle refuses the probe, whose adopted reading predicts a state: {e}") from None
        adopted = None
    out = [Prediction(pp.readings.adopted_reading(), adopted)]
    for reading in pp.readings.alternatives:
        if reading.rewrite is not None:
            try:
                out.append(Prediction(reading, run(reading.rewrite(pp.program), profile)))
            except (UndefinedBehaviour, NotModelled) as e:
                out.append(Prediction(reading, note=f"not computed: the oracle refuses the rewritten program ({e})"))
        elif reading.image is not None:
            out.append(Prediction(reading, reading.image(pp.program, adopted)))
        else:
            out.append(Prediction(reading))
    return adopted, out


# --- verdicts -------------------------------------------------------------------------------------


@dataclass
class ProgramVerdict:
    """The verdict on one probe program: what was observed, which readings predicted it, the diff
    from the adopted state (decoded, `Diff.as_dict()`) where both are states."""

    assumption: str
    name: str
    case_id: str
    verdict: str
    detail: str
    observed: str
    matched: list[str] = field(default_factory=list)
    diff: dict | None = None
    readings: list[dict] = field(default_factory=list)


def _observed(o: Observation) -> str:
    if o.state is not None:
        return "a state"
    if o.error is not None:
        return f"error: {o.error}"
    if o.skip is not None:
        return f"skip: {o.skip}"
    return "an assembly"


def judge(pp: ProbeProgram, observed: Observation, adopted: MachineState | None, preds: list[Prediction]) -> ProgramVerdict:
    """The verdict on one probe program from the backend's observation and every reading's prediction."""
    verdict = ProgramVerdict(pp.assumption, pp.name, pp.program.case_id, NOT_RUNNABLE, "", _observed(observed),
                             readings=[p.as_dict() for p in preds])
    if observed.skip is not None:
        verdict.detail = observed.skip
        return verdict
    alternatives = [p for p in preds[1:] if p.matches(pp.program, observed, adopted)]
    specific = [p.reading.name for p in alternatives if p.reading.outcome != OTHER]
    verdict.matched = [p.reading.name for p in alternatives]
    if pp.readings.outcome == UNDEFINED:
        if observed.error is not None or not specific:
            verdict.verdict = CONFIRMED
            verdict.detail = ("undefined, and it did not run: " + observed.error if observed.error is not None
                              else "undefined, and the state seen is no alternative's prediction")
            return verdict
        verdict.verdict = REFUTED
        verdict.detail = f"the hardware defines it: the state seen is what {_names(specific)} predicts"
        return verdict
    if observed.state is not None and adopted is not None:
        try:
            diff = diff_states(pp.program, adopted, observed.state)
        except ValueError as e:
            verdict.verdict, verdict.detail = REFUTED, f"the state does not fit the program: {e}"
            return verdict
        if not diff.mismatched:
            verdict.verdict, verdict.detail = CONFIRMED, f"all {diff.words} words as the adopted reading predicts"
            return verdict
        verdict.diff = diff.as_dict()
        seen = diff.summary_line()
    else:
        seen = f"it did not run ({observed.error})" if observed.error is not None else "no state"
    verdict.verdict = REFUTED
    verdict.detail = seen + "; " + (f"predicted by {_names(verdict.matched)}" if verdict.matched
                                    else "no listed reading predicted it")
    return verdict


def _names(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def assumption_verdicts(verdicts: list[ProgramVerdict]) -> dict[str, dict]:
    """Per assumption: its verdict (the first of VERDICTS any of its programs has) and one line saying why."""
    grouped: dict[str, list[ProgramVerdict]] = {}
    for v in verdicts:
        grouped.setdefault(v.assumption, []).append(v)
    out = {}
    for assumption, vs in grouped.items():
        verdict = next(x for x in VERDICTS if any(v.verdict == x for v in vs))
        deciding = [v for v in vs if v.verdict == verdict]
        detail = "; ".join(f"{v.name}: {v.detail}" if len(vs) > 1 else v.detail for v in deciding)
        out[assumption] = {"verdict": verdict, "detail": detail, "programs": [v.name for v in vs]}
    return out


# --- running it -----------------------------------------------------------------------------------------


def run_probes(spec: str, timeout_s: float | None = None) -> dict:
    """Observe every probe program with the backend `spec`, judge each, and return the probe report
    (probe.json's contents, without the command and machine, which the caller adds)."""
    programs = ledger_programs()
    programs += numeric_programs()
    profiles = [profile_for(pp.program) for pp in programs]
    observer = Observer(spec, timeout_s)
    backend = observer.backend(profiles[0])
    reason = backend.unavailable_reason()
    if reason is None and observes(backend) != STATE:
        reason = f"{spec} observes {observes(backend)}, not machine states"
    if reason:
        observations = [Observation(pp.program.case_id, skip=reason) for pp in programs]
    else:
        observations = observer.observe([pp.program for pp in programs], profiles)
    verdicts = []
    for pp, profile, o in zip(programs, profiles, observations):
        adopted, preds = predictions(pp, profile)
        verdicts.append(judge(pp, o, adopted, preds))
    assumptions = assumption_verdicts(verdicts)
    counts = {v: sum(a["verdict"] == v for a in assumptions.values()) for v in VERDICTS}
    return {
        "schema": PROBE_SCHEMA,
        "backend": spec,
        "unavailable": reason,
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": source_revision(),
        "counts": counts,
        "assumptions": assumptions,
        "programs": [dataclasses.asdict(v) for v in verdicts],
    }


# --- the ledger ------------------------------------------------------------------------------------------

LEDGER_ROW = re.compile(r"^\| (A-[A-Za-z0-9-]+) \|")
CELL = re.compile(r"(?<!\\)\|")
VERDICT_COLUMN = 5  # id, question, interpretation implemented, where, probe, verdict


def ledger_cells(line: str) -> list[str]:
    """The cells of one ledger table row."""
    return [c.strip() for c in CELL.split(line)[1:-1]]


def verdict_cell(spec: str, assumption: dict, date: str) -> str:
    """A ledger verdict cell: the verdict, the backend and date, and for a refutation why."""
    text = f"{assumption['verdict']} by `probe --backend {spec}` ({date})"
    if assumption["verdict"] == REFUTED:
        text += f": {assumption['detail']}"
    return text.replace("|", "\\|").replace("\n", " ")


def write_ledger(report: dict, source: Path, target: str) -> list[str]:
    """Write the ledger `source` to `target` with the verdict cell of every assumption that ran
    (confirmed or refuted) replaced; the ids changed."""
    date = report["finished_utc"][:10]
    changed, lines = [], []
    for line in source.read_text(encoding="utf-8").splitlines():
        match = LEDGER_ROW.match(line)
        assumption = report["assumptions"].get(match.group(1)) if match else None
        if assumption and assumption["verdict"] != NOT_RUNNABLE:
            cells = ledger_cells(line)
            cells[VERDICT_COLUMN] = verdict_cell(report["backend"], assumption, date)
            line = "| " + " | ".join(cells) + " |"
            changed.append(match.group(1))
        lines.append(line)
    temporary = f"{target}.{os.getpid()}.tmp"  # then replaced: a reader sees the old ledger or the new
    with open(temporary, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(temporary, target)
    return changed


def write_outputs(report: dict, folder: ReportDir) -> list[str]:
    """probe.json and probe.html in the report directory `folder` (written atomically); the paths."""
    import json

    from tcgen05_conformance.harness.report import probe_page

    return [folder.write("probe.json", json.dumps(report, indent=1, sort_keys=True) + "\n"),
            folder.write("probe.html", probe_page(report))]
