"""The H100 proof command (`numerics proof`, `tcgen05_conformance.numerics.proof`) without an H100: the whole path with
the numeric model answering the inference and standing in for silicon, the stand-in's packing
against the driver's unpacking, and the exit status where there is no GPU."""

from __future__ import annotations

import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.numerics import measure
from tcgen05_conformance.numerics import proof
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.launch import GpuUnavailable


def test_the_whole_proof_passes_with_the_model_standing_in_for_the_h100(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "CHUNK_TILES", {"mma.sync": 16, "wgmma": 1})  # chunks of 2,048 / 4,096 products
    assert main(["numerics", "proof", "--backend", "oracle", "--out", str(tmp_path), "--per-format", "5000", "--jobs", "1"]) == 0
    report = json.loads((tmp_path / "h100-inference-proof.json").read_text())
    assert report["passed"] is True
    for family, reference in proof.FAMILIES.items():
        entry = report["profiles"][family]
        assert entry["reference"] == reference and entry["differences"] == [] and entry["errors"] == {}
        assert (tmp_path / entry["file"]).is_file()
    formats = {c.in_fmt for c in measure.COMBINATIONS} | {f"{c.in_fmt} x {c.b_fmt}" for c in measure.MIXED_FP8}
    assert set(report["measurement"]["per_format"]) == formats
    assert report["profiles"]["mma.sync"]["widened_inputs"]["value"] == {"e4m3": "f16", "e5m2": "f16"}
    assert report["profiles"]["wgmma"]["widened_inputs"]["value"] == {}
    assert all(v["inner_products"] >= 5000 and v["mismatches"] == 0 for v in report["measurement"]["per_format"].values())
    assert "| e4m3 |" in (tmp_path / "h100-inference-proof.md").read_text()


@pytest.mark.parametrize("combination", ["wgmma.e4m3.f32", "mma.sync.e4m3.f32", "mma.sync.s8.s32.satfinite", "wgmma.f16.f16",
                                         "mma.sync.e4m3xe5m2.f32", "wgmma.e5m2xe4m3.f32"])
def test_the_stand_in_gives_what_the_driver_reads_back_as_the_committed_profile(combination):
    """Packed by the stand-in, unpacked by the driver: no mismatch against the committed profile, and
    the other family's profile (fp8 differs between wgmma and mma.sync on H100) is caught."""
    [c] = [c for c in proof.PROVED if c.id == combination]
    chunk = measure.prepare(c, 4, seed=3)
    words = proof.model_silicon(c, chunk, Stages())
    assert measure.compare(c, chunk, words, proof.FAMILIES)["mismatches"] == 0
    if c.in_fmt == "e4m3":
        swapped = {"wgmma": "sm_90a.mma_sync", "mma.sync": "sm_90a"}
        assert measure.compare(c, chunk, words, swapped)["mismatches"] > 0


def test_without_an_sm_90_gpu_nothing_runs_and_nothing_is_written(tmp_path, capsys):
    from tcgen05_conformance.device.target_gpu import hopper_gpu

    try:
        hopper_gpu("numerics proof")
    except GpuUnavailable as e:
        reason = str(e)
    else:
        pytest.skip("an sm_90 GPU is here")
    out = tmp_path / "proof"
    assert main(["numerics", "proof", "--out", str(out)]) == 5  # nothing ran (conformance/cli/common.py)
    assert capsys.readouterr().err.strip() == f"tcgen05-conformance: nothing ran: {reason}"
    assert not out.exists()
