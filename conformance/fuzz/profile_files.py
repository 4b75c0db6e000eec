"""Damaged profile files through `vectors check --profile`: a built-in profile written as a file
(`Profile.as_dict()`, what `numerics infer --out` writes), then damaged
(`tcgen05_conformance.fuzz.json_damage`): parameters out of their range (k_step 10**6,
align_frac_bits 10**400), of the wrong type, missing or unknown, the file cut or not a file.
Refused on one line (exit 2), or loaded and used to check recorded vectors (exit 0 or 1); never a
traceback, never a hang or gigabytes asked for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import strategies as st

from tcgen05_conformance.fuzz.command_calls import Main, call, refusal
from tcgen05_conformance.fuzz.json_damage import damage_file, damages
from tcgen05_conformance.oracles.numerics.profiles import PROFILES

ACCEPTED, REFUSED = "accepted", "refused"


def inputs() -> st.SearchStrategy[tuple]:
    """(which built-in profile, the damage)."""
    return st.tuples(st.sampled_from(sorted(PROFILES)), damages())


def profile_outcome(main: Main, folder: Path, drawn: tuple, work: Path) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what happened) for one damaged profile file checking `folder`."""
    name, damage = drawn
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    path = work / "profile.json"
    path.write_text(json.dumps(PROFILES[name].as_dict()), encoding="utf-8")
    damage_file(path, damage)
    called = call(main, ["vectors", "check", str(folder), "--profile", str(path)])
    if called.status == 2:
        return REFUSED, refusal(called)
    if called.status not in (0, 1):
        raise AssertionError(f"exit {called.status}: {called.err.strip()[-300:]}")
    return ACCEPTED, f"exit {called.status}"
