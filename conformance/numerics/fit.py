"""One-parameter-at-a-time sweeps around a profile, the `numerics fit` subcommand: the evidence
behind the profiles' provenance strings.

For each recorded result file (a folder of recorded vectors) or each combination of a samples file
(`numerics measure --samples`), every structural parameter of the profile's datapath is varied
alone over a small range and the mismatch count is reported, so a reader can see which values the
recordings accept and which they reject. The sweep fits *behaviour* (a few structural parameters);
it never looks at single vectors.
"""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path
from typing import Iterator

import numpy as np

from tcgen05_conformance.oracles.numerics.model import inner_product
from tcgen05_conformance.oracles.numerics.profiles import Datapath, Profile, get_profile
from tcgen05_conformance.oracles.numerics.vectors import FOLDER_FORMATS, OUTPUTS, check_folder, find_folders, recorded_profile

#: Values tried for each parameter (the profile's own value is always included).
CANDIDATES = {
    "align_frac_bits": [12, 13, 14, 18, 22, 23, 24, 25, 26, 27, 30, None],
    "align_floor": [None, -149, -150, -152, -154, -156, -157, -158, -159, -160],
    "k_step": [2, 4, 8, 16, 32],
    "group_rounding": ["rz", "rne"],
    "c_entry": ["first_group", "final_add"],
    "group_precision": [None, 13, 14, 15],
    "split": [(1, 1), (2, 1), (2, 2), (2, 4), (2, 8), (4, 2)],
}
SAMPLES_SUFFIX = ".npz"


class FitInputError(ValueError):
    """A path that holds neither recorded vectors nor measured samples; the message is one line."""


def _variants(dp: Datapath, k: int) -> Iterator[tuple[str, Datapath]]:
    for name, values in CANDIDATES.items():
        for v in values:
            if name == "split":
                ways, stride = v
                step = dp.k_step or k
                if step % ways or (ways, stride) == (dp.split_ways, dp.split_stride):
                    continue
                yield (
                    f"split_ways={ways},split_stride={stride}",
                    dataclasses.replace(dp, split_ways=ways, split_stride=stride),
                )
                continue
            if name == "k_step":
                if v > k or v % dp.split_ways or v == dp.k_step:
                    continue
            elif getattr(dp, name) == v:
                continue
            yield f"{name}={v}", dataclasses.replace(dp, **{name: v})


def _only(base: Profile, fmt: str, acc: str, dp: Datapath) -> Profile:
    """`base` with the datapath of `fmt` -> `acc` replaced by `dp` (the rest kept: a mixed
    product takes its A format's datapath and needs its B format's to exist, and an operand the
    profile widens is widened for every variant)."""
    return dataclasses.replace(base, description="sweep", datapaths={**base.datapaths, (fmt, acc): dp})


def sweep(path: str, profile_name: str) -> list[dict]:
    """Mismatch counts of the profile and of each one-parameter variant, per recorded result file, each
    under the profile's variant for the instruction that recorded the file."""
    rows = []
    for folder in find_folders(path):
        fmt = FOLDER_FORMATS[folder.folder_format]
        for tag in folder.outputs:
            acc = OUTPUTS[tag]
            base = get_profile(recorded_profile(folder, tag, profile_name))
            dp = base.datapath(fmt, acc)
            only = dataclasses.replace(folder, outputs={tag: folder.outputs[tag]})
            entry = check_folder(only, _only(base, fmt, acc, dp))[0]  # a malformed file stops here
            results: dict[str, int | str] = {"profile": entry["mismatches"]}
            for label, variant in _variants(dp, 32):
                try:
                    results[label] = check_folder(only, _only(base, fmt, acc, variant))[0]["mismatches"]
                except ValueError as e:  # a variant that does not apply (e.g. K too small)
                    results[label] = f"n/a ({e})"
            rows.append({"gpu": folder.gpu, "format": folder.folder_format, "output": tag, "profile": base.name,
                         "vectors": entry["vectors"], "mismatches": results})
    return rows


def sweep_samples(path: str, profile_name: str) -> list[dict]:
    """The same sweep over the silicon samples that `numerics measure --samples` keeps (arrays
    `<combination>/a|b|c|silicon`), per combination, each under its instruction's profile variant."""
    from tcgen05_conformance.numerics.measure import COMBINATIONS, HOPPER_COMBINATIONS

    try:
        data = np.load(path)
        files = set(data.files)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise FitInputError(f"{path}: not a samples file of numerics measure ({' '.join(str(e).split())})") from None
    rows = []
    for c in HOPPER_COMBINATIONS:
        if f"{c.id}/silicon" not in files:
            continue
        missing = [f"{c.id}/{x}" for x in ("a", "b", "c") if f"{c.id}/{x}" not in files]
        if missing:
            raise FitInputError(f"{path}: {c.id} has silicon results but no {', '.join(missing)}")
        a, b, acc_in, silicon = (data[f"{c.id}/{x}"] for x in ("a", "b", "c", "silicon"))
        base = get_profile(c.profile(profile_name))
        dp = base.datapath(c.in_fmt, c.acc)
        results = {}
        for label, variant in [("profile", dp), *_variants(dp, c.k)]:
            # mixed inputs take A's datapath (`tcgen05_conformance.oracles.numerics.model.datapath_of`): the one varied
            got = inner_product(a, b, acc_in, c.inputs, c.acc, _only(base, c.in_fmt, c.acc, variant), saturate=c.saturate)
            results[label] = int((got.view(silicon.dtype) != silicon).sum())
        rows.append({"combination": c.id, "profile": base.name, "vectors": int(silicon.size), "mismatches": results})
    if not rows:
        raise FitInputError(f"{path}: no combination's samples (<combination>/silicon, e.g. {COMBINATIONS[0].id}/silicon)")
    return rows


def fit(path: str, profile_name: str) -> dict:
    """The sweeps of a samples file (`.npz`) or of a folder of recorded vectors, as a JSON-able report."""
    if not Path(path).exists():
        raise FitInputError(f"{path}: no such file or folder")
    if not (Path(path).is_dir() or path.endswith(SAMPLES_SUFFIX)):
        raise FitInputError(f"{path}: neither a folder of recorded vectors nor a samples file ({SAMPLES_SUFFIX})")
    run = sweep_samples if path.endswith(SAMPLES_SUFFIX) else sweep
    return {"profile": profile_name, "path": path, "sweeps": run(path, profile_name)}
