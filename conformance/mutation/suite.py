"""`tcgen05-conformance mutants`: the default CI suite run against every planted bug of
`tcgen05_conformance.mutation.mutants`, to measure how many of them it would catch.

The suite is what CI's default conformance run exercises: the programs of `run` (`--count`
200, `--seed` 0, profile `exact`), the probe programs (`probes/*.json`), a batch of discriminating
inner products (`tcgen05_conformance.generators.numeric_vectors`) through the oracle's arithmetic interface under the
`sm_100a`, `sm_90a` and `exact` profiles (the exact programs cannot see a rounding bug), and the
recorded tensor-core vectors (the development split shipped in `oracles/numerics/recordings`).
The unmutated oracle computes every case first (the golden outcomes, and the recorded vectors
must match it bit for bit); a mutant is killed by the first case whose outcome
differs: another digest, or an exception where there was none (or another one). Cases run cheap
first, those of the mutant's own family first, and the cases that killed earlier mutants before
all others.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from tcgen05_conformance import probes
from tcgen05_conformance import __version__
from tcgen05_conformance.core import program as program_model
from tcgen05_conformance.harness.runner import Progress, generate_programs, source_revision
from tcgen05_conformance.mutation.mutants import MUTANTS, Mutant
from tcgen05_conformance.oracles import numerics
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.generators.numeric_vectors import mix
from tcgen05_conformance.oracles.numerics.vectors import RECORDINGS, check_folder, find_folders

PROFILE = "exact"  # the profile `run` computes with by default
PROBES = Path(probes.__file__).resolve().parent
RECORDED = RECORDINGS
RECORDED_PROFILES = {"B200": "sm_100a", "H100": "sm_90a"}
MIN_SCORE = 0.95  # the share of mutants the suite must kill
# Cases counted as killing one mutant: the suite goes on past its first killer until this many, so
# that a mutant resting on a single case shows (counting every killer would run the whole suite per mutant).
KILLS_COUNTED = 2
NUMERIC_ROWS = 64  # vectors per numeric case; every pair of them is one inner product

# (profile, (A format, B format), accumulator, K, scale format and factors per row, saturate)
NUMERIC_CASES: tuple[tuple[str, tuple[str, str], str, int, tuple[str, int] | None, bool | None], ...] = (
    *((p, (f, f), acc, k, None, None) for p in ("sm_100a", "sm_90a") for f, acc, k in (
        ("f16", "f32", 16), ("f16", "f16", 16), ("bf16", "f32", 16), ("tf32", "f32", 8), ("f16", "f32", 32),
        ("e4m3", "f32", 32), ("e4m3", "f16", 32), ("e5m2", "f32", 32), ("e5m2", "f16", 32))),
    *(("sm_100a", (a, b), "f32", 32, None, None) for a, b in (("e2m3", "e2m3"), ("e3m2", "e3m2"), ("e2m1", "e2m1"), ("e4m3", "e2m1"))),
    ("sm_100a", ("e2m1", "e2m1"), "f32", 64, ("ue8m0", 2), None),
    ("sm_100a", ("e4m3", "e4m3"), "f32", 32, ("ue8m0", 1), None),
    *(("exact", (f, f), acc, k, None, None) for f, acc, k in (
        ("f16", "f32", 16), ("f16", "f16", 16), ("bf16", "f32", 16), ("tf32", "f32", 8), ("e4m3", "f32", 32), ("e5m2", "f16", 32))),
    ("exact", ("e2m1", "e2m1"), "f32", 64, ("ue8m0", 2), None),
    ("exact", ("e2m1", "e2m1"), "f32", 64, ("ue4m3", 4), None),
    ("exact", ("e4m3", "e4m3"), "f32", 32, ("ue8m0", 1), None),
    ("exact", ("e3m2", "e3m2"), "f32", 32, ("ue8m0", 1), None),
    ("exact", ("s8", "s8"), "s32", 32, None, False),
    ("exact", ("s8", "u8"), "s32", 32, None, True),
    ("exact", ("u8", "u8"), "s32", 32, None, False),
    # a second exact tf32 case (its containers carry random ignored low bits, as all tf32 cases do):
    # the exact fast path must drop those bits, and one case alone told that apart
    ("exact", ("tf32", "tf32"), "f32", 16, None, None),
)
# Scale-factor codes drawn around 1.0 (ue4m3 from its subnormals 0x01-0x07 up), with a few NaN
# codes: (lowest, highest, NaN code).
SCALE_CODES = {"ue8m0": (118, 137, 0xFF), "ue4m3": (0x01, 0x48, 0x7F)}
SCALE_NAN_RATE = 0.02
TF32_IGNORED = 1 << 13  # tf32 values ignore the 13 low bits of their 32-bit container


@dataclass(frozen=True)
class Case:
    """One case of the suite: `compute()` returns a digest of what the oracle computes for it."""

    name: str
    kind: str  # "program", "probe", "numeric" or "recorded"
    compute: Callable[[], str] = field(repr=False, compare=False)
    tags: frozenset[str] = frozenset()  # the instructions a program executes (`op.OP`); {kind} otherwise


@dataclass(frozen=True)
class Outcome:
    key: str  # what is compared: a digest, or "raises <exception class>"
    detail: str


def outcome(case: Case) -> Outcome:
    """The case's outcome on the oracle as it is now (mutated or not); numpy's warnings about
    NaN or overflowing casts (of special inputs, or of a mutant's wrong values) are not shown."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            digest = case.compute()
    except Exception as e:  # a mutant may break the oracle in any way
        return Outcome(f"raises {type(e).__name__}", f"raises {type(e).__name__}: {str(e)[:200]}")
    return Outcome(digest, digest)


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def program_cases(examples: int, seed: int) -> list[Case]:
    """The programs of the default run, then every probe program."""
    programs = [("program", p) for p in generate_programs(examples, seed)]
    programs += [("probe", program_model.load(str(path))) for path in sorted(PROBES.glob("*.json"))]
    return [Case(f"{kind} {p.case_id} {(p.label or '').split(':')[0][:60]}", kind, lambda p=p: run(p, PROFILE).digest(),
                 frozenset(op.OP for op in p.ops)) for kind, p in programs]


def _codes(x: np.ndarray) -> np.ndarray:
    """Raw encodings of any integer dtype as the uint32 codes the oracle's `matmul` takes."""
    return np.asarray(x).astype(np.int64).astype(np.uint32)


def _scales(fmt: str, factors: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi, nan = SCALE_CODES[fmt]
    codes = rng.integers(lo, hi, (NUMERIC_ROWS, factors))
    return np.where(rng.random(codes.shape) < SCALE_NAN_RATE, nan, codes).astype(np.uint32)


def numeric_cases(seed: int) -> list[Case]:
    """Discriminating inner products (every vector family), all pairs of `NUMERIC_ROWS` A rows and
    B rows through `numerics.matmul`: the diagonal holds the designed (a, b, c) triples. tf32
    containers carry random bits in their 13 low bits, which the format ignores."""
    cases = []
    for index, (profile, (fa, fb), acc, k, scale, saturate) in enumerate(NUMERIC_CASES):
        rng = np.random.default_rng([seed, index])
        a, b, c, _ = mix((fa, fb), acc, k, NUMERIC_ROWS, rng)
        a, b, c = _codes(a), _codes(b), np.repeat(_codes(c)[:, None], NUMERIC_ROWS, axis=1)
        if fa == "tf32":
            a, b = (x | rng.integers(0, TF32_IGNORED, x.shape, dtype=np.uint32) for x in (a, b))
        options: dict = {"saturate": saturate}
        if scale:
            options |= {"a_scale": _scales(scale[0], scale[1], rng), "b_scale": _scales(scale[0], scale[1], rng), "scale_fmt": scale[0]}
        name = f"numeric {profile} {fa}x{fb}->{acc} K={k}" + (f" {scale[0]}x{scale[1]}" if scale else "") + (
            f" saturate={saturate}" if saturate is not None else "")
        cases.append(Case(name, "numeric", lambda a=a, b=b, c=c, fa=fa, fb=fb, acc=acc, profile=profile, options=options:
                          _digest(numerics.matmul(a, b, c, fa, fb, acc, profile, **options)), frozenset({"numeric"})))
    return cases


def recorded_cases(root: Path = RECORDED) -> tuple[list[Case], str | None]:
    """One case per recorded format folder (its mismatch counts per result file under the
    GPU's profile), or none and the reason."""
    if not root.is_dir():
        return [], f"recorded vectors not found at {root}: that part of the suite is skipped"
    cases = []
    for gpu, profile in RECORDED_PROFILES.items():
        if not (root / gpu).is_dir():
            continue
        for folder in find_folders(root / gpu):
            cases.append(Case(f"recorded {gpu}/{folder.folder_format} ({profile})", "recorded",
                              lambda folder=folder, profile=profile:
                              " ".join(f"{e['output']}:{e['mismatches']}" for e in check_folder(folder, profile)),
                              frozenset({"recorded"})))
    return cases, None if cases else f"no B200/H100 vector folder under {root}"


@dataclass(eq=False)
class GoldenCase:
    case: Case
    expected: Outcome
    seconds: float


@dataclass
class MutantResult:
    name: str
    family: str
    description: str
    killed: bool
    killed_by: str | None
    kills: int  # cases whose outcome differs, counted up to KILLS_COUNTED
    detail: str
    cases_run: int
    seconds: float


FAMILY_KINDS = {"numerics": ("numeric", "recorded", "program", "probe")}
DEFAULT_KINDS = ("probe", "program", "numeric", "recorded")


class Suite:
    """The golden outcomes of every case, and the order to try them in for each mutant."""

    def __init__(self, cases: Sequence[Case], progress: Progress | None = None):
        self.golden: list[GoldenCase] = []
        for k, case in enumerate(cases):
            started = time.perf_counter()
            expected = outcome(case)
            if expected.key != "raises NotModelled":  # skipped by the run too
                self.golden.append(GoldenCase(case, expected, time.perf_counter() - started))
            if progress:
                progress(k + 1)
        self.killers: list[GoldenCase] = []  # cases that killed a mutant, the latest first

    def order(self, mutant: Mutant) -> list[GoldenCase]:
        """The cases the mutant can reach: killers first, then the mutant family's kinds of case in
        that order, each cheapest first."""
        kinds = FAMILY_KINDS.get(mutant.family, DEFAULT_KINDS)
        reached = [g for g in self.golden if mutant.reaches is None or g.case.tags & mutant.reaches]
        killers = [g for g in self.killers if g in reached]
        rest = sorted((g for g in reached if g not in killers), key=lambda g: (kinds.index(g.case.kind), g.seconds))
        return killers + rest

    def try_mutant(self, mutant: Mutant) -> MutantResult:
        """Run the suite with `mutant` applied until a case's outcome differs from its golden one."""
        started = time.perf_counter()
        ran = 0
        killers: list[GoldenCase] = []
        detail = ""
        with mutant.applied():
            for g in self.order(mutant):
                ran += 1
                got = outcome(g.case)
                if got.key != g.expected.key:
                    if not killers:
                        detail = (got.detail if got.key.startswith("raises") else "another result") + f" (expected {g.expected.key[:16]})"
                    killers.append(g)
                    if len(killers) == KILLS_COUNTED:
                        break
        seconds = round(time.perf_counter() - started, 3)
        if killers:
            self.killers = killers + [k for k in self.killers if k not in killers]
            return MutantResult(mutant.name, mutant.family, mutant.description, True, killers[0].case.name, len(killers),
                                detail, ran, seconds)
        scope = f" that execute {', '.join(sorted(mutant.reaches))}" if mutant.reaches else ""
        return MutantResult(mutant.name, mutant.family, mutant.description, False, None, 0,
                            f"every one of the {ran} cases{scope} gives its golden outcome", ran, seconds)


def run_mutants(names: Sequence[str], examples: int, seed: int, command: str) -> dict:
    """Build the suite, compute its golden outcomes, try every named mutant; the report (JSON-able)."""
    started = time.perf_counter()
    recorded, recorded_note = recorded_cases()
    cases = program_cases(examples, seed) + numeric_cases(seed) + recorded
    suite = Suite(cases, Progress("golden", len(cases)))
    golden_seconds = time.perf_counter() - started
    progress = Progress("mutants", len(names), unit="mutants")
    results = []
    for k, name in enumerate(names):
        results.append(suite.try_mutant(MUTANTS[name]))
        progress(k + 1)
    killed = sum(r.killed for r in results)
    kinds = [g.case.kind for g in suite.golden]
    return {
        "tool": "tcgen05-conformance",
        "version": __version__,
        "command": command,
        "source": source_revision(),
        "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})",
        "examples": examples,
        "seed": seed,
        "suite": {
            "cases": len(suite.golden),
            **{kind: kinds.count(kind) for kind in ("program", "probe", "numeric", "recorded")},
            "not_modelled_skipped": len(cases) - len(suite.golden),
            "recorded_note": recorded_note,
            "golden_seconds": round(golden_seconds, 3),
        },
        "recorded_vectors_reproduced": _reproduces_recordings(suite.golden),
        "mutants": len(results),
        "killed": killed,
        "score": round(killed / len(results), 4) if results else None,
        "min_score": MIN_SCORE,
        "kills_counted": KILLS_COUNTED,
        "single_case_kills": [r.name for r in results if r.kills == 1],
        "survived": [{"name": r.name, "description": r.description, "reason": survival_reason(r)} for r in results if not r.killed],
        "results": [vars(r) for r in results],
        "seconds": round(time.perf_counter() - started, 3),
    }


def _reproduces_recordings(golden: Sequence[GoldenCase]) -> bool | None:
    """Whether the unmutated model matches every recorded result (None: no recordings here)."""
    keys = [g.expected.key for g in golden if g.case.kind == "recorded"]
    if not keys:
        return None
    return all(not key.startswith("raises") and all(part.endswith(":0") for part in key.split()) for key in keys)


_NO_CP = ("the default run draws MMA programs only, and the two probes with a tcgen05.cp (A-CP-DESC, A-CP-PAIR-SOURCE) "
          "copy .128x128b without decompression: ")
_NO_LDST = "the default run draws no tcgen05.ld/st, and the probes load and store .32x32b and .16x32bx2 only: "
# Why the survivors of the measured run (reports/mutation-score/mutants.json) survive, one sentence each.
SURVIVAL_REASONS: dict[str, str] = {
    "cp-warpx2-patterns-swapped": _NO_CP + "no case copies .64x128b with a .warpx2 multicast.",
    "cp-4x256b-consecutive-lanes": _NO_CP + "no case copies a .4x256b matrix.",
    "cp-decompress-bit-0": _NO_CP + "no case decompresses a .b4x16_p64 or .b6x16_p32 source.",
    "ldst-16x64b-thread-map": _NO_LDST + "no case moves data with .16x64b.",
    "ldst-16x256b-register-order": _NO_LDST + "no case moves data with .16x256b.",
    "ldred-s32-unsigned": ("the default run draws no tcgen05.ld, and the .red probes reduce .f32 (A-LDRED-DATA, A-LDRED-F32) "
                           "and .u32 (A-LDRED-SCOPE), never .s32."),
}


def survival_reason(result: MutantResult) -> str:
    return SURVIVAL_REASONS.get(result.name, f"no case of the suite tells it apart ({result.cases_run} cases give their golden outcome)")
