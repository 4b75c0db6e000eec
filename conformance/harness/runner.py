"""`run`: generate programs (one of each instruction family first, every Table 39 class, then
random ones), have each backend observe them, judge the observations against the reference's
(`tcgen05_conformance.harness.judge`), and summarise. Programs are reproducible from the seed;
failing ones are written out as JSON for `replay`."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Sequence

from hypothesis import strategies as st

from tcgen05_conformance import __version__
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.program import Program, dumps
from tcgen05_conformance.harness.backends.base import ASSEMBLY, STATE, Backend, Observation, observes
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE, backend_from_spec, is_plugin, uses_gpu
from tcgen05_conformance.harness.coverage import OPTION_UNIVERSE, coverage, instruction_classes, mma_options, option_counts
from tcgen05_conformance.harness.journal import Journal
from tcgen05_conformance.harness.judge import (
    ERROR,
    FAIL,
    PASS,
    SKIP,
    CaseResult,
    assembly_result,
    profile_for,
    reference_result,
    role,
    state_result,
)
from tcgen05_conformance.harness.supervisor import (
    DEFAULT_BATCH_SIZE,
    BackendFacts,
    describe,
    observe_one_at_a_time,
    run_supervised,
)
from tcgen05_conformance.harness.value_coverage import value_coverage
from tcgen05_conformance.generators.instructions import shape_classes_for_target, tcgen05_mma
from tcgen05_conformance.generators.programs import data_movement_forms, data_movement_programs, hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples, seed_only_draws
from tcgen05_conformance.generators.value_programs import value_programs

HOPPER_SHARE = 0.15
VALUE_PROGRAMS_MAX = 200  # programs aimed at missed value coverpoints, beyond `examples`
#: The instruction families a run draws one program of first, in this order, so that a run of any
#: size from len(FAMILIES) programs up exercises each: the first Table 39 class, each data-movement
#: instruction's first form (`data_movement_forms`), a wgmma and an mma.sp.
FAMILIES = ("tcgen05.mma", "tcgen05.cp", "tcgen05.ld", "tcgen05.st", "tcgen05.shift", "wgmma.mma_async", "mma.sp")


def target_for_class(c: mma.ShapeClass) -> str:
    """The first Blackwell target where the class exists (K=96 needs sm_103a, i8 sm_100a)."""
    for target in TCGEN05_TARGETS:
        if c in shape_classes_for_target(target):
            return target
    raise ValueError(f"no target supports {c.id}")


def target_with(feature: str) -> str:
    """The first Blackwell target with a feature ("" for any)."""
    return next(t for t in TCGEN05_TARGETS if not feature or feature in target_named(t).features)


def generate_programs(examples: int, seed: int, progress: Callable[[int], None] | None = None) -> list[Program]:
    """`examples` distinct programs (no case id twice): one of each instruction family first
    (`FAMILIES`), then one per Table 39 class, one for each MMA option those miss (coverage), one
    per data-movement form (tcgen05.cp/.ld/.st/.shift shapes, multicasts, decompression, .ld.red
    types), then random ones, a share of them Hopper
    (wgmma / mma.sp on sm_90a); when there are random ones, programs aimed at the value
    coverpoints all of these miss follow, beyond `examples` (`tcgen05_conformance.generators.value_programs`). The
    same seed gives the same list, whatever the command imported before. `progress(n)` as the
    n-th of the `examples` programs is drawn."""
    with seed_only_draws():
        return _draw_programs(examples, seed, progress or (lambda n: None))


def _case_id(p: Program) -> str:
    return p.case_id


def _draw_programs(examples: int, seed: int, progress: Callable[[int], None]) -> list[Program]:
    classes = list(mma.SHAPE_CLASSES)
    taken: set[str] = set()  # the case ids drawn so far: a random draw repeating one is drawn again

    def distinct(strategy: st.SearchStrategy[Program], count: int, seed: int) -> list[Program]:
        base = len(programs)
        return draw_examples(strategy, count, seed, _case_id, taken, lambda n: progress(base + n))

    programs: list[Program] = []
    forms = list(data_movement_forms().items())

    def class_program(k: int) -> list[Program]:
        return distinct(tcgen05_programs(target_for_class(classes[k]), classes[k]), 1, seed + k)

    def form_program(k: int) -> list[Program]:
        label, (feature, _) = forms[k]
        return distinct(data_movement_programs(target_with(feature), label), 1, seed + 400_009 + k)

    first_forms = {family: next(k for k, (label, _) in enumerate(forms) if label == family or label.startswith(family + "."))
                   for family in FAMILIES[1:5]}
    for n, family in enumerate(FAMILIES[:examples]):
        if family == "tcgen05.mma":
            programs += class_program(0)
        elif family in first_forms:
            programs += form_program(first_forms[family])
        else:
            only = hopper_programs().filter(lambda p, f=family: any(op.OP == f for op in p.ops))
            programs += distinct(only, 1, seed + 600_011 + n)
    for k in range(1, min(len(classes), examples - len(programs) + 1)):
        programs += class_program(k)
    programs += option_programs(programs, examples - len(programs), seed + 300_007)
    taken.update(p.case_id for p in programs)
    progress(len(programs))
    rest_forms = [k for k in range(len(forms)) if k not in first_forms.values()]
    for k in rest_forms[:max(0, examples - len(programs))]:
        programs += form_program(k)
    rest = examples - len(programs)
    if rest > 0:
        hopper = int(rest * HOPPER_SHARE)
        mixed = st.sampled_from(TCGEN05_TARGETS).flatmap(tcgen05_programs)
        programs += distinct(mixed, rest - hopper, seed + 100_003)
        programs += distinct(hopper_programs(), hopper, seed + 200_003) if hopper else []
        programs += value_programs(programs, VALUE_PROGRAMS_MAX, seed + 500_009)
    return programs


def in_shard(case_id: str, shard: tuple[int, int]) -> bool:
    """Whether a case belongs to shard (index, count), 1 <= index <= count, of a run. Case ids are
    SHA-256 prefixes in hex, so the id modulo count spreads a run's cases evenly over its shards,
    the same way on every machine; every shard draws the whole run and keeps its share."""
    index, count = shard
    return int(case_id, 16) % count == index - 1


OPTION_SEARCH_BATCH, OPTION_SEARCH_BATCHES = 256, 16  # the rarest option (one K=96 form) needs ~300 MMAs


def option_programs(programs: Sequence[Program], limit: int, seed: int) -> list[Program]:
    """At most `limit` programs, one per MMA option of `OPTION_UNIVERSE` that `programs` never
    exercise: batches of MMAs are drawn (cheaply, without operand images) over every Blackwell
    target and class, and the first MMA exercising a missing option becomes a whole program."""
    hit = option_counts(programs)
    pairs = [(t, c) for t in TCGEN05_TARGETS for c in shape_classes_for_target(t)]
    mmas = st.sampled_from(pairs).flatmap(lambda tc: st.tuples(st.just(tc), tcgen05_mma(*tc, reach="compact")))
    directed: list[Program] = []
    for batch in range(OPTION_SEARCH_BATCHES):
        missing = [o for o in OPTION_UNIVERSE if not hit[o]]
        if not missing or len(directed) >= limit:
            break
        for (target, c), op in draw_examples(mmas, OPTION_SEARCH_BATCH, seed + batch):
            options = mma_options(op)
            if len(directed) < limit and any(not hit[o] for o in options):
                directed.append(draw_examples(tcgen05_programs(target, c, op), 1, seed + len(directed))[0])
                hit.update(options)
    return directed


@dataclass
class BackendSummary:
    ran: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    skip_reason: str | None = None
    duration_s: float = 0.0
    role: str = ""  # how its verdicts are reached (`tcgen05_conformance.harness.judge.role`)


@dataclass
class RunOutcome:
    """The programs, the profile that judged each, the reference (None when no backend needed
    one) and each backend's verdicts, in program order, with their counts; the GPUs the backends
    that use one were given (CUDA_VISIBLE_DEVICES values; None in a merge of shards)."""

    programs: list[Program]
    profiles: list[str] = field(default_factory=list)
    reference: str | None = None
    gpus: list[str] | None = field(default_factory=list)
    results: dict[str, list[CaseResult]] = field(default_factory=dict)
    summaries: dict[str, BackendSummary] = field(default_factory=dict)


class Progress:
    """Cases (or other `unit`s) done, rate and ETA on a terminal; silent when stderr is not one or under CI."""

    def __init__(self, label: str, total: int, unit: str = "cases"):
        self.label, self.total, self.unit, self.start = label, total, unit, time.perf_counter()
        self.live = sys.stderr.isatty() and os.environ.get("CI") != "true"

    def __call__(self, done: int) -> None:
        if not self.live:
            return
        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed else 0.0
        eta = (self.total - done) / rate if rate else 0.0
        sys.stderr.write(f"\r[{self.label}] {done}/{self.total} {self.unit}, {rate:.1f}/s, ETA {eta:.0f}s ")
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


class Observer:
    """One backend spec, made once per numeric profile it observes under (a backend computes with
    the profile it is made for), observing programs in process or in supervised children: with
    a timeout, more than one job, `gpus` (more than one GPU, one child pinned to each at a time),
    or a plugin's (`MODULE:FACTORY`) unless `in_process` asks for it here: a device under test
    from outside the project then never runs in the harness's process, so whatever it does costs
    its cases, never the run (its facts too are asked in a child, `supervisor.describe`)."""

    def __init__(self, spec: str, timeout_s: float | None = None, batch_size: int = DEFAULT_BATCH_SIZE, jobs: int = 1,
                 gpus: Sequence[str] = (), in_process: bool = False):
        self.spec, self.timeout_s, self.batch_size, self.jobs, self.gpus = spec, timeout_s, batch_size, jobs, list(gpus)
        self.isolated = is_plugin(spec) and not in_process
        self._made: dict[str | None, Backend] = {}
        self._facts: dict[str | None, BackendFacts] = {}

    def backend(self, profile: str | None) -> Backend:
        """The backend made in this process for `profile` (a plugin's behind its guard)."""
        if profile not in self._made:
            self._made[profile] = backend_from_spec(self.spec, profile)
        return self._made[profile]

    def facts(self, profile: str | None) -> BackendFacts:
        """The backend's name, what it observes, why it cannot run here and why it is broken, for
        `profile`: asked of a child when the backend is isolated, else of the backend made here."""
        if profile not in self._facts:
            if self.isolated:
                self._facts[profile] = describe(self.spec, profile, self.timeout_s)
            else:
                backend = self.backend(profile)
                reason = backend.unavailable_reason()
                self._facts[profile] = BackendFacts(backend.name, observes(backend), reason, getattr(backend, "broken", None))
        return self._facts[profile]

    def observe(self, programs: Sequence[Program], profiles: Sequence[str], progress: Callable[[int], None] | None = None,
                on_observation: Callable[[int, Observation], None] | None = None, keep: bool = True) -> list[Observation]:
        """One observation per program, in order, each program observed by the backend made for its
        profile: the programs of one profile together, in one `observe` call when nothing waits
        for single observations, else one at a time (`on_observation(index, observation)` as each
        arrives), in supervised children with a timeout, more than one job or GPUs to spread over
        (`tcgen05_conformance.harness.supervisor`). With `keep` False, each observation goes to
        `on_observation` only (its state is not held) and the list returned is empty."""
        observations: list[Observation | None] = [None] * len(programs)
        groups: dict[str, list[int]] = {}
        for k, profile in enumerate(profiles):
            groups.setdefault(profile, []).append(k)
        done = 0
        for profile, members in groups.items():
            group = [programs[k] for k in members]
            waiting = {}  # case id -> indices not yet observed (one case id is one program: any of them)
            for k in members:
                waiting.setdefault(programs[k].case_id, []).append(k)

            def arrived(o: Observation, waiting=waiting) -> None:
                k = waiting[o.case_id].pop(0)
                if keep:
                    observations[k] = o
                if on_observation:
                    on_observation(k, o)

            def step(n: int, done=done) -> None:
                if progress:
                    progress(done + n)

            if self.timeout_s is not None or self.jobs > 1 or self.gpus or self.isolated:
                run_supervised(self.spec, profile, group, self.timeout_s, self.batch_size, step, arrived, self.jobs, self.gpus)
            elif on_observation:
                observe_one_at_a_time(self.backend(profile), group, arrived, step)
            else:
                got = self.backend(profile).observe(group, step)
                if [o.case_id for o in got] != [p.case_id for p in group]:
                    raise RuntimeError(f"backend {self.spec} returned observations of {[o.case_id for o in got]} "
                                       f"for cases {[p.case_id for p in group]}")
                for o in got:
                    arrived(o)
            done += len(members)
        return observations if keep else []


CHUNK = 512  # cases whose reference states are held at once (a TMEM image is up to 512 KiB)


@dataclass
class _Row:
    """One backend's part of a run: what it observes, why it cannot run (None: it can), why each
    of its cases is an error (None: none is), its journaled verdicts, its verdicts so far (by
    program index), time spent and progress."""

    observer: Observer
    observes: str
    reason: str | None
    broken: str | None
    journaled: dict[str, CaseResult]
    results: dict[int, CaseResult] = field(default_factory=dict)
    seconds: float = 0.0
    progress: Progress | None = None


def execute(programs: list[Program], backends: Sequence[str], profile: str | None = None, *,
            reference: str = DEFAULT_REFERENCE, journal: Journal | None = None, timeout_s: float | None = None,
            batch_size: int = DEFAULT_BATCH_SIZE, jobs: int = 1, gpus: Sequence[str] = (),
            observers: dict[str, Observer] | None = None, in_process: bool = False) -> RunOutcome:
    """Have each backend (any spec of `tcgen05_conformance.harness.backends.registry`) observe the programs
    and judge what it saw (`tcgen05_conformance.harness.judge`): states against the `reference`'s, which
    observes each case once, before the others, wherever a backend compares states with it or it
    is among `backends` (its row listed first when it is not); assemblies against the legality
    model. `profile`: the numeric profile asked for (`judge.profile_for` picks each case's).

    With `journal`, every verdict is journaled as soon as it exists, and the cases the journal
    already holds for a backend are not run again: their journaled verdicts are reused (the
    reference observes again the cases another backend still needs its state of). With
    `timeout_s`, each backend runs in watched child processes, `batch_size` cases each, so a
    hang or a crash costs the case that caused it (`tcgen05_conformance.harness.supervisor`). With `jobs`
    > 1, up to `jobs` such children run at once (without a watchdog unless `timeout_s` is given);
    the verdicts are the same, in program order. `gpus` (CUDA_VISIBLE_DEVICES values): the GPUs
    of the backends that use one (`registry.uses_gpu`); with more than one, such a backend runs in
    children of `batch_size` cases, one per GPU at a time, each seeing its GPU alone (instead of
    `jobs`), and the verdicts are again the same. `observers`, by spec, keeps the backends made
    (and their set-up) from one call to the next. A plugin's backend (`MODULE:FACTORY`) runs in
    watched children whatever the options (`Observer`), in this process only with `in_process`.
    ValueError when the reference observes no states."""
    profiles = [profile_for(p, profile) for p in programs]
    outcome = RunOutcome(programs, profiles)
    observers = {} if observers is None else observers
    spread = list(gpus) if len(gpus) > 1 else []  # one GPU: its backends run as on a one-GPU machine

    def row_of(spec: str) -> _Row:
        observer = observers.setdefault(spec, Observer(spec, timeout_s, batch_size, jobs, spread if uses_gpu(spec) else (),
                                                       in_process))
        started = time.perf_counter()
        facts = observer.facts(profiles[0] if profiles else profile)
        row = _Row(observer, facts.observes, facts.unavailable or None, facts.broken,  # "": no reason, so it runs
                   journal.done(spec) if journal is not None else {})
        row.seconds = time.perf_counter() - started
        return row

    rows = {spec: row_of(spec) for spec in dict.fromkeys(backends)}
    others = [spec for spec in rows if spec != reference]
    if reference in rows or any(rows[spec].observes == STATE for spec in others):
        if reference not in rows:
            rows[reference] = row_of(reference)
        if rows[reference].observes != STATE:
            raise ValueError(f"the reference {reference} observes {rows[reference].observes}, not machine states: "
                             "it cannot be the reference")
        outcome.reference = reference
    outcome.gpus = list(gpus) if any(uses_gpu(spec) for spec in rows) else []
    compared = [spec for spec in others if rows[spec].observes == STATE and rows[spec].reason is None]
    order = [reference] * (reference in rows and reference not in backends) + list(dict.fromkeys(backends))
    for spec in order:
        rows[spec].progress = Progress(spec, len(programs))
    for start in range(0, len(programs), CHUNK):
        chunk = range(start, min(start + CHUNK, len(programs)))
        references = _observe_reference(programs, profiles, chunk, reference, rows.get(reference), [rows[s] for s in compared], journal)
        for spec in others:
            _observe_and_judge(programs, profiles, chunk, spec, rows[spec], reference, references, journal)
    for spec in order:
        row = rows[spec]
        results = [row.results[k] for k in range(len(programs))]
        counts = Counter(r.status for r in results)
        summary = BackendSummary(len(results) - counts[SKIP], counts[PASS], counts[FAIL], counts[ERROR], counts[SKIP],
                                 row.reason, round(row.seconds, 3), role(row.observes, reference, spec == reference))
        outcome.results[spec], outcome.summaries[spec] = results, summary
    return outcome


def reference_observations(programs: list[Program], reference: str = DEFAULT_REFERENCE, profile: str | None = None,
                           progress: Callable[[int], None] | None = None) -> tuple[list[Observation], list[str]]:
    """The reference's observation of each program and the profile it was judged by (`export`'s
    expected states); skips with the reason when the reference cannot run here, ValueError when
    it observes no states."""
    profiles = [profile_for(p, profile) for p in programs]
    observer = Observer(reference)
    facts = observer.facts(profiles[0] if profiles else profile)
    if facts.observes != STATE:
        raise ValueError(f"the reference {reference} observes {facts.observes}, not machine states: it cannot be the reference")
    if facts.unavailable or facts.broken:
        return [Observation(p.case_id, skip=facts.unavailable) if facts.unavailable else Observation(p.case_id, error=facts.broken)
                for p in programs], profiles
    return observer.observe(programs, profiles, progress), profiles


def _observe_reference(programs: list[Program], profiles: list[str], chunk: range, spec: str, row: _Row | None,
                       compared: list[_Row], journal: Journal | None) -> dict[int, Observation]:
    """The reference's observations of the cases of `chunk` that need one (its own verdict not yet
    journaled, or another backend's pending), its verdicts recorded; {} when no row needs it, or
    when no backend compares states with it (its states are then not held)."""
    if row is None:
        return {}
    need = [k for k in chunk if programs[k].case_id not in row.journaled
            or any(programs[k].case_id not in other.journaled for other in compared)]
    verdicts: dict[int, CaseResult] = {}

    def judged(k: int, o: Observation) -> CaseResult:
        verdicts[k] = reference_result(o)
        return verdicts[k]

    observations = _observe(programs, profiles, need, spec, row, journal, judged, keep=bool(compared))
    for k in chunk:
        row.results[k] = row.journaled.get(programs[k].case_id) or verdicts.get(k) or reference_result(observations[k])
    return observations


def _observe_and_judge(programs: list[Program], profiles: list[str], chunk: range, spec: str, row: _Row,
                       reference: str, references: dict[int, Observation], journal: Journal | None) -> None:
    """One backend's verdicts on the cases of `chunk`: journaled ones reused; a state observer's
    cases without a reference state judged unrun; the rest observed and judged."""
    if row.reason:
        row.results.update((k, CaseResult(programs[k].case_id, SKIP, row.reason)) for k in chunk)
        return
    pending = [k for k in chunk if programs[k].case_id not in row.journaled]
    if row.observes == ASSEMBLY:
        def verdict(k: int, o: Observation) -> CaseResult:
            return assembly_result(programs[k], row.observer.facts(profiles[k]).name, o)
    else:
        def verdict(k: int, o: Observation | None) -> CaseResult:
            return state_result(programs[k], reference, references[k], o)

        for k in [k for k in pending if references[k].state is None]:
            row.results[k] = verdict(k, None)
            if journal is not None:
                journal.record(spec, row.results[k])
        pending = [k for k in pending if references[k].state is not None]
    observations = _observe(programs, profiles, pending, spec, row, journal, verdict)
    for k in chunk:
        if k not in row.results:
            journaled = row.journaled.get(programs[k].case_id)
            row.results[k] = journaled or verdict(k, observations[k])


def _observe(programs: list[Program], profiles: list[str], indices: list[int], spec: str, row: _Row,
             journal: Journal | None, verdict: Callable[[int, Observation], CaseResult], keep: bool = True) -> dict[int, Observation]:
    """`row`'s observations of the programs at `indices` (skips with its reason when it cannot run
    here), each judged as it arrives, and the verdict journaled, when there is a journal or the
    observations are not to be kept (then {} is returned)."""
    if row.reason:
        return {k: Observation(programs[k].case_id, skip=row.reason) for k in indices}
    waiting = journal is not None or not keep
    if row.broken:
        charged = [Observation(programs[k].case_id, error=row.broken) for k in indices]
        for k, o in zip(indices, charged):
            if waiting:
                result = verdict(k, o)
                if journal is not None:
                    journal.record(spec, result)
        return dict(zip(indices, charged)) if keep else {}
    started = time.perf_counter()
    offset = len(row.results)

    def progress(n: int) -> None:
        row.progress(offset + n)

    def observed(j: int, o: Observation) -> None:
        result = verdict(indices[j], o)
        if journal is not None:
            journal.record(spec, result)

    got = row.observer.observe([programs[k] for k in indices], [profiles[k] for k in indices], progress,
                               observed if waiting else None, keep)
    row.seconds += time.perf_counter() - started
    return dict(zip(indices, got))


SUMMARY_SCHEMA = "tcgen05-conformance/summary/2"


def source_revision() -> dict | None:
    """The git commit this code was run from and whether its checkout had local changes; None
    outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
        status = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if commit.returncode or status.returncode:
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def replay_command(case_id: str, backend: str, reference: str | None, profile: str | None, report_dir: str = ".") -> str:
    """The command that judges one case of a run again as the run did, run in the directory the
    run was started in (`replay_dir`: a simulator command or a plugin module is found from there,
    as in the run), the case file named under `report_dir` as the run was given it."""
    words = ["tcgen05-conformance", "replay", os.path.join(report_dir, "cases", f"{case_id}.json"), "--backend", backend]
    if reference not in (None, DEFAULT_REFERENCE, backend):
        words += ["--reference", reference]
    if profile is not None:
        words += ["--profile", profile]
    return " ".join(shlex.quote(w) for w in words)


MAX_SKIPPED_IDS = 1000  # case ids listed per skip reason in summary.json (the count is always whole)


def skips(results: Sequence[CaseResult]) -> list[dict]:
    """A backend's skipped cases grouped by reason, most frequent first: reason, count, case ids."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.status == SKIP:
            groups.setdefault(r.detail or "(no reason given)", []).append(r.case_id)
    return [{"reason": reason, "count": len(ids), "case_ids": ids[:MAX_SKIPPED_IDS]}
            for reason, ids in sorted(groups.items(), key=lambda item: -len(item[1]))]


def checked(outcome: RunOutcome) -> dict:
    """What the run checked: per backend, the cases it ran and what running one checks (its role),
    the number of cases some backend under test (every backend but the reference) compared with
    something, and whether nothing was compared at all."""
    under_test = {n: b for n, b in outcome.summaries.items() if n != outcome.reference}
    compared = {r.case_id for n in under_test for r in outcome.results[n] if r.status != SKIP}
    return {
        "backends": {n: {"ran": b.ran, "of": b.ran + b.skipped, "what": b.role} for n, b in outcome.summaries.items()},
        "cases_compared": len(compared),
        "backends_under_test": list(under_test),
        "nothing_compared": not compared,
    }


def summary(outcome: RunOutcome, seed: int, examples: int, duration: float, command: list[str],
            profile: str | None = None, shard: tuple[int, int] | None = None, report_dir: str = ".") -> dict:
    """The run's summary.json: the documented fields (cases, per-backend counts, roles and skipped
    cases by reason, what was checked, the reference, the profile judging each case and their
    counts, coverage, seed, duration, the GPUs of the backends that use one), and for trend tracking the schema, source revision,
    finishing time, totals, coverage heat maps, every failure with its decoded first mismatches
    (`data["diff"]`) and the command replaying it (in `replay_dir`), and the shard ("I/N", None
    for a whole run)."""
    failures = []
    for name, results in outcome.results.items():
        for p, r, judged_by in zip(outcome.programs, results, outcome.profiles):
            if r.status in (FAIL, ERROR):
                failures.append({"backend": name, "case_id": r.case_id, "status": r.status,
                                 "label": p.label, "classes": instruction_classes(p), "profile": judged_by, "detail": r.detail,
                                 "diff": r.data.get("diff"),
                                 "replay": replay_command(r.case_id, name, outcome.reference, profile, report_dir)})
    backends = {n: {**vars(s), "skips": skips(outcome.results[n])} for n, s in outcome.summaries.items()}
    return {
        "schema": SUMMARY_SCHEMA,
        "tool": "tcgen05-conformance",
        "version": __version__,
        "source": source_revision(),
        "command": " ".join(command),
        "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})",
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "examples": examples,
        "shard": f"{shard[0]}/{shard[1]}" if shard else None,
        "profile": profile,
        "reference": outcome.reference,
        "profiles": dict(Counter(outcome.profiles)),
        "case_profiles": {p.case_id: judged_by for p, judged_by in zip(outcome.programs, outcome.profiles)},
        "cases": len(outcome.programs),
        "gpus": outcome.gpus,
        "duration_s": round(duration, 3),
        "backends": backends,
        "totals": {k: sum(b[k] for b in backends.values()) for k in ("ran", "passed", "failed", "errors", "skipped")},
        "checked": checked(outcome),
        "coverage": coverage(outcome.programs, {f["case_id"] for f in failures}),
        "value_coverage": value_coverage(outcome.programs),
        "failures": failures,
        "replay_dir": os.getcwd(),
    }


def failing_case_files(outcome: RunOutcome) -> dict[str, str]:
    """Each failing program's file, `cases/<case id>.json` (replayable on its own), and its text."""
    failing = {r.case_id for results in outcome.results.values() for r in results if r.status in (FAIL, ERROR)}
    return {f"cases/{p.case_id}.json": dumps(p) + "\n" for p in outcome.programs if p.case_id in failing}
