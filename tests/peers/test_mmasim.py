"""The oracle's tcgen05.mma arithmetic against MMA-Sim (conformance/peers/mmasim.py, docs/peers.md).

Without torch (CI), the committed sample of MMA-Sim's answers (at least 2,000 per combination)
is compared with the oracle: no unexplained difference, and the comparison has teeth (the
mma.sync reading of the B200 recordings differs on every fp8/fp6/fp4 combination). Where mmasim
and torch are installed, a live run over fresh vectors also gives no difference.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.peers import mmasim


@pytest.fixture(scope="module")
def sample_report() -> dict:
    return mmasim.run_sample()


def test_every_combination_both_model_is_compared(sample_report):
    names = [r["combination"] for r in sample_report["combinations"]]
    assert len(names) == len(set(names)) == 4 + 50 + 25 + 4
    assert all(r["vectors"] >= mmasim.SAMPLE_VECTORS for r in sample_report["combinations"])


def test_the_sample_shows_no_unexplained_difference(sample_report):
    assert sample_report["unexplained"] == 0, [r for r in sample_report["combinations"] if r["unexplained"]][:3]


def test_the_mma_sync_reading_is_caught():
    """The B200 mma.sync datapaths (the oracle's tcgen05 reading before MMA-Sim) differ from MMA-Sim
    on every f8f6f4, mxf8f6f4 and mxf4* combination and agree on f16/bf16/tf32."""
    report = mmasim.run_sample(profile="sm_100a.mma_sync")
    for r in report["combinations"]:
        if r["combination"].split(".")[0] in ("tf32", "f16"):
            assert r["unexplained"] == 0, r["combination"]
        else:
            assert r["unexplained"] > 0, r["combination"]


def test_the_sample_holds_block_gaps_and_mixed_pairs():
    with np.load(mmasim.SAMPLE) as data:
        scales = data["mxf4.f32.e2m1.e2m1.block32.ue8m0/a_scale"].astype(int) + \
            data["mxf4.f32.e2m1.e2m1.block32.ue8m0/b_scale"].astype(int)
        gaps = np.abs(scales[:, 0] - scales[:, 1])
        assert ((gaps >= 30) & (gaps <= 44)).sum() >= 100  # the ladder crosses the 35-bit alignment width
        assert "f8f6f4.f16.e2m1.e4m3/a" in data.files


def test_cli_sample_exit_status_and_json(capsys):
    assert main(["peers", "--mmasim-sample", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unexplained"] == 0 and report["peer"] == "MMA-Sim"


def test_cli_bad_sample_is_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a sample")
    assert main(["peers", "--mmasim-sample", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.npz" in err[0]


def test_cli_out_sample_needs_mmasim(tmp_path, capsys):
    assert main(["peers", "--out-sample", str(tmp_path / "s.npz")]) == 2
    assert "--out-sample needs --mmasim" in capsys.readouterr().err
    assert main(["peers", "--mmasim-sample", "--out-sample", str(tmp_path / "s.npz")]) == 2


def test_live_run_agrees(tmp_path):
    try:
        mmasim._mmasim()
    except mmasim.MmasimUnavailable as e:
        pytest.skip(str(e))
    report = mmasim.run_live(300, seed=7, write_sample=tmp_path / "s.npz")
    assert report["unexplained"] == 0
    assert mmasim.run_sample(tmp_path / "s.npz")["unexplained"] == 0
