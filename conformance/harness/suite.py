"""The versioned suite: the release's frozen case list, as conformance suites publish a must-pass
list, so that a simulator author can say "passes suite 1.0".

A suite file (`suites/<version>.json`, committed in the package, written by `tcgen05-conformance
suite freeze`) holds how its programs are drawn (seed and count of `runner.generate_programs`),
every case's stable id with the profile judging it and the SHA-256 of its expected state (the
oracle's), the versions those states come from (the package's, and a digest of each profile's
parameter values), and its waivers: the behaviour the ISA leaves undefined (the program-scope
legality rules: no case of the suite has any, checked when it is frozen), and the cases the oracle
gives no expected state (not modelled), which the suite does not require. `programs` draws the
list again and refuses an installation that no longer gives its ids; `check` judges a run's report
folder against it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from tcgen05_conformance import SUITE_VERSION, __version__
from tcgen05_conformance.core.legality.rules import PROGRAM, RULES
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import state_to_json

SCHEMA = "tcgen05-conformance/suite/1"
SUITES = Path(__file__).parent / "suites"
#: How each suite's programs are drawn: `run --count 200 --seed 0`, the default run.
DRAWS: dict[str, dict[str, int]] = {"1.0": {"seed": 0, "count": 200}}
REFERENCE = "oracle"


class SuiteError(ValueError):
    """A suite that cannot be used here, or a result folder that cannot be checked: one line saying why."""


def versions() -> list[str]:
    """The suite versions this package holds."""
    return sorted(path.stem for path in SUITES.glob("*.json"))


def path_of(version: str) -> Path:
    return SUITES / f"{version}.json"


def _package_path(version: str) -> str:
    """Where the suite file lies in the repository (what `suite freeze --out` is given)."""
    return f"conformance/harness/suites/{version}.json"


def load(version: str = SUITE_VERSION) -> dict:
    """The frozen suite `version`; SuiteError when the package holds no such suite."""
    if version not in versions():
        raise SuiteError(f"no suite {version!r} in this package (suites: {', '.join(versions()) or 'none'})")
    return json.loads(path_of(version).read_text(encoding="utf-8"))


def state_digest(state) -> str:
    """The SHA-256 of a machine state's canonical JSON (`state_to_json`)."""
    return hashlib.sha256(json.dumps(state_to_json(state), sort_keys=True).encode()).hexdigest()


def _values_only(data):
    """A profile's description without its prose (provenance, description): what its numbers are."""
    if isinstance(data, dict):
        return {k: _values_only(v) for k, v in data.items() if k not in ("provenance", "description")}
    if isinstance(data, list):
        return [_values_only(v) for v in data]
    return data


def profile_versions(names: Iterable[str]) -> dict[str, str]:
    """Each profile registered under the base names of `names` (`sm_90a` brings `sm_90a.mma_sync`),
    by name, with the SHA-256 of its parameter values: the version the expected states come from."""
    from tcgen05_conformance.oracles.numerics.profiles import PROFILES

    bases = {name.split(".")[0] for name in names}
    return {name: hashlib.sha256(json.dumps(_values_only(profile.as_dict()), sort_keys=True, default=str).encode()).hexdigest()
            for name, profile in sorted(PROFILES.items()) if name.split(".")[0] in bases}


def undefined_behaviour_waivers() -> list[dict]:
    """What the ISA leaves undefined in a program (the program-scope rules of the legality model),
    with its reference: a suite has no case doing any of it."""
    return [{"rule": r.id, "reference": r.reference, "statement": r.statement} for r in RULES.values() if r.scope == PROGRAM]


def freeze(version: str = SUITE_VERSION, progress: Callable[[str], None] = lambda message: None) -> dict:
    """The suite `version` as this installation draws and computes it (what `suite freeze` writes)."""
    from tcgen05_conformance.core.legality.undefined import undefined_behaviour
    from tcgen05_conformance.harness import runner

    draw = DRAWS.get(version)
    if draw is None:
        raise SuiteError(f"suite {version!r} has no draw (known: {', '.join(DRAWS)})")
    progress(f"drawing {draw['count']} programs from seed {draw['seed']}")
    programs = runner.generate_programs(draw["count"], draw["seed"])
    undefined = [f"{p.case_id}: {v}" for p in programs for v in undefined_behaviour(p)]
    if undefined:
        raise SuiteError(f"a drawn program does what the ISA leaves undefined: {undefined[0]}")
    progress(f"computing the expected states of {len(programs)} cases with the {REFERENCE}")
    observations, profiles = runner.reference_observations(programs, REFERENCE)
    cases, waived = [], []
    for p, o, profile in zip(programs, observations, profiles, strict=True):
        case = {"id": p.case_id, "label": p.label, "profile": profile}
        if o.state is None:
            case["waived"] = o.skip or o.error
            waived.append(p.case_id)
        else:
            case["expected"] = state_digest(o.state)
        cases.append(case)
    return {
        "schema": SCHEMA,
        "suite": version,
        "frozen_with": {"package": __version__,
                        "command": f"tcgen05-conformance suite freeze --suite {version} --out {_package_path(version)}"},
        "draw": draw,
        "reference": REFERENCE,
        "profiles": profile_versions(profiles),
        "waivers": {"undefined_behaviour": undefined_behaviour_waivers(), "cases_without_expected_state": waived},
        "cases": cases,
    }


def write(suite: dict, path: str | os.PathLike) -> None:
    Path(path).write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")


def programs(suite: dict) -> list[Program]:
    """The suite's programs, drawn again (those of its list, in its order); SuiteError when this
    installation no longer draws them (a changed generator or Hypothesis)."""
    from tcgen05_conformance.harness import runner

    drawn = {p.case_id: p for p in runner.generate_programs(suite["draw"]["count"], suite["draw"]["seed"])}
    missing = [c["id"] for c in suite["cases"] if c["id"] not in drawn]
    if missing:
        raise SuiteError(f"this installation does not draw suite {suite['suite']}: {len(missing)} of its cases are "
                         f"missing (first {missing[0]}); its generator or Hypothesis changed")
    return [drawn[c["id"]] for c in suite["cases"]]


def required(suite: dict) -> list[str]:
    """The ids of the cases a backend must pass: every case but the waived ones."""
    return [c["id"] for c in suite["cases"] if "waived" not in c]


def check(folder: str | os.PathLike, suite: dict) -> dict:
    """A run's report folder (summary.json) judged against the suite: per backend under test (every
    one but the reference), the required cases it passed, failed (or errored) and skipped, and the
    required cases the run lacks; `passes` when there is a backend under test and each passed
    every required case."""
    summary_path = Path(folder) / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        ran = set(summary["case_profiles"])
        backends, failures, reference = summary["backends"], summary["failures"], summary.get("reference")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SuiteError(f"{summary_path}: not a run's summary.json ({type(e).__name__}: {e})") from None
    need = required(suite)
    missing = [i for i in need if i not in ran]
    verdicts = {}
    for name, b in backends.items():
        if name == reference:  # its states are the expected ones: it is compared with nothing
            continue
        failed = sorted({f["case_id"] for f in failures if f["backend"] == name} & set(need))
        skipped = sorted({i for group in b.get("skips", []) for i in group["case_ids"]} & set(need))
        passed = len([i for i in need if i in ran and i not in failed and i not in skipped])
        verdicts[name] = {"passed": passed, "failed": failed, "skipped": skipped,
                          "passes": not missing and passed == len(need)}
    return {"suite": suite["suite"], "folder": str(folder), "required": len(need),
            "waived": len(suite["cases"]) - len(need), "missing": missing, "backends": verdicts,
            "passes": bool(verdicts) and all(v["passes"] for v in verdicts.values())}
