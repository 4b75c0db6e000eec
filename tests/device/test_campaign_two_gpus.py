"""A GPU that hangs in a campaign on two GPUs (`campaign`): the planted hanging kernel queued behind
one launch group of the worker on GPU 1 (`planted_kernels.hang_on_gpu_1`) costs that group's cases
alone, each charged as a hang, and GPU 0 keeps working meanwhile. Needs two sm_90 GPUs."""

from __future__ import annotations

import io

import pytest

from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.device.launch import visible_devices
from tests.test_campaign_stream import _charged, _stream_groups

WATCHDOG_S = 20.0


@pytest.fixture
def two_gpus(hopper_gpu, tmp_path, monkeypatch) -> list[str]:
    devices = visible_devices()
    if len(devices) < 2:
        pytest.skip(f"{len(devices)} GPU visible: the hang on one GPU of two needs two")
    monkeypatch.setenv("FAKE_LAUNCHER_MARKERS", str(tmp_path))
    return devices[:2]


def test_a_hang_on_one_gpu_of_two_costs_its_launch_and_the_other_gpu_works_on(two_gpus, tmp_path):
    settings = tool.Settings(programs=2_000, seed=33, data_sets=4, chunk=100, numerics=tool.CHECKER,
                             draw=tool.GPU_DRAW, cache_dir=str(tmp_path / "kernels"))
    groups = _stream_groups(settings)
    report = tool.campaign(settings, 4, two_gpus, "tests.device.planted_kernels:hang_on_gpu_1", None, WATCHDOG_S,
                           log=io.StringIO())
    [charged] = _charged(report, groups)
    assert report["errors"] == len(charged) and report["mismatches"] == 0
    assert all(f"no result after {WATCHDOG_S:g} s (a hang)" in f["detail"] for f in report["failures"])
    assert report["programs"] + report["errors"] == sum(map(len, groups))
    first, second = report["gpus"]
    assert second["restarts"] >= 1
    # GPU 0 worked on while GPU 1 hung: it ran more than its half of the programs
    assert first["programs"] > report["programs"] / 2
