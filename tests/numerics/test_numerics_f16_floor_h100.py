"""f16 -> f16 results measured on the H100 near the binary16 subnormal unit: the sm_90a profiles
reproduce every silicon result that the GPU checker recorded (the 1e10 check that found the
profile without a grid floor wrong, and the align_floor sweep that fitted -46), and those results
tell the floor apart. Expected values are the silicon's (reports/numerics-h100-f16-subnormal-floor/)."""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest

from tcgen05_conformance.numerics.measure import COMBINATIONS
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import ALIGN_FLOOR_F16, Profile, get_profile

REPORTS = pathlib.Path(__file__).parents[2] / "reports" / "numerics-h100-f16-subnormal-floor"
CHECK = REPORTS / "h100-1e10-seed19.json"
SWEEP = REPORTS / "h100-sweep-f16-floor-seed20.json"
MEASURED = {c.id: c for c in COMBINATIONS if c.id.endswith("f16.f16") and c.in_fmt == "f16"}


def _silicon_records() -> dict[str, list[dict]]:
    """Every recorded silicon result of the f16 -> f16 combinations, per combination id."""
    records: dict[str, list[dict]] = {cid: [] for cid in MEASURED}
    for entry in json.loads(CHECK.read_text())["combinations"]:
        if entry["id"] in MEASURED:
            records[entry["id"]] += entry["mismatch_records"]
    for entry in json.loads(SWEEP.read_text())["combinations"]:
        for row in entry["values"]:
            records[entry["id"]] += row["first_mismatches"]
    return records


def _arrays(records: list[dict]):
    codes = lambda key: np.array([[int(x, 16) for x in r[key]] for r in records], np.uint16)  # noqa: E731
    return (codes("a"), codes("b"), np.array([int(r["c"], 16) for r in records], np.uint16),
            np.array([int(r["silicon"], 16) for r in records], np.uint16))


def _with_floor(combination, floor) -> Profile:
    base = get_profile(combination.profile("sm_90a"))
    dp = dataclasses.replace(base.datapath("f16", "f16"), align_floor=floor)
    return Profile(name="sweep", description="align_floor variant", datapaths={("f16", "f16"): dp})


def _wrong(profile_for) -> int:
    wrong = 0
    for cid, records in _silicon_records().items():
        a, b, c, silicon = _arrays(records)
        got = inner_product(a, b, c, "f16", "f16", profile_for(MEASURED[cid]))
        wrong += int((got.view(np.uint16) != silicon).sum())
    return wrong


def test_the_reports_hold_silicon_results_of_both_instructions():
    records = _silicon_records()
    assert sorted(records) == ["mma.sync.f16.f16", "wgmma.f16.f16"]
    assert all(len(r) >= 40 for r in records.values())


def test_profile_reproduces_every_recorded_silicon_result():
    assert get_profile("sm_90a").datapath("f16", "f16").align_floor == ALIGN_FLOOR_F16
    assert _wrong(lambda c: c.profile("sm_90a")) == 0


@pytest.mark.parametrize("floor", [None, -42, -43, -44, -45, -47, -48, -50])
def test_recorded_results_reject_other_floors(floor):
    """No floor, or any other floor near -46, leaves some silicon result off (so the test above can fail)."""
    assert _wrong(lambda c: _with_floor(c, floor)) > 0


def test_loop_reference_agrees_with_silicon():
    """The Fraction reference (an independent implementation) gives the silicon's results too."""
    from tcgen05_conformance.oracles.numerics.reference import datapath_reference

    for cid, records in _silicon_records().items():
        dp = get_profile(MEASURED[cid].profile("sm_90a")).datapath("f16", "f16")
        a, b, c, silicon = _arrays(records)
        for i in range(len(c)):
            assert datapath_reference(a[i], b[i], int(c[i]), "f16", "f16", dp) == int(silicon[i]), (cid, i)
