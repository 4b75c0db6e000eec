"""The campaign's scheduling without a GPU: producers, GPU workers (stand-ins from
tests/fake_launchers.py, in processes of their own as real ones), per-GPU accounting, a fault,
a crash and a hang each costing only the cases of the launch they hit, a GPU whose worker cannot
start, shards, and the stage profile. Expected counts come from drawing the run's chunks here."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from tcgen05_conformance.core.program import load
from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.campaign.stream import count_idle
from tcgen05_conformance.device.ptx.kernels import hopper_form, hopper_kernel
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError

pytest.importorskip("cuda.bindings.nvjitlink", reason="the producers assemble kernels with nvJitLink")

SMALL = dict(programs=48, seed=4, data_sets=4, chunk=12)  # 4 chunks, 3 instructions each


@pytest.fixture
def settings(tmp_path, monkeypatch) -> tool.Settings:
    monkeypatch.setenv("FAKE_LAUNCHER_MARKERS", str(tmp_path))
    return tool.Settings(**SMALL, cache_dir=str(tmp_path / "kernels"))


def expected_run(settings: tool.Settings) -> dict:
    """What the run must count, from its chunks drawn here: programs, inner products, and the
    launch groups (case ids of each kernel form of each chunk, in the order a worker runs them)."""
    programs, inner_products, groups = 0, 0, []
    for c in settings.chunks():
        _, drawn = tool.draw_chunk(c, settings)
        forms: dict[str, list] = {}
        for p in drawn:
            forms.setdefault(hopper_kernel(hopper_form(p)), []).append(p)
            programs += 1
            inner_products += 64 * p.ops[0].n if p.ops[0].OP == "wgmma.mma_async" else 16 * 8  # D's elements
        groups += [sorted(p.case_id for p in members) for members in forms.values()]
    return {"programs": programs, "inner_products": inner_products, "groups": groups}


def run(settings: tool.Settings, launcher: str, workers: int, timeout_s: float = 120.0, cases=None) -> dict:
    log = io.StringIO()
    report = tool.campaign(settings, 1, [None] * workers, launcher, cases, timeout_s, log=log)
    assert "programs/s" in log.getvalue()
    return report


def test_two_workers_share_the_chunks_and_account_per_gpu(settings):
    want = expected_run(settings)
    report = run(settings, "tests.fake_launchers:well", 2)
    assert (report["programs"], report["inner_products_total"]) == (want["programs"], want["inner_products"])
    assert (report["mismatches"], report["errors"], report["not_run"]) == (0, 0, 0)
    gpus = report["gpus"]
    assert [g["name"] for g in gpus] == ["stand-in GPU 0", "stand-in GPU 1"]
    assert sum(g["programs"] for g in gpus) == want["programs"] and all(g["programs"] > 0 for g in gpus)
    assert sum(g["launches"] for g in gpus) == report["launches"] == len(want["groups"])
    assert all(g["restarts"] == 0 and not g["incidents"] for g in gpus)
    assert report["instructions"] == SMALL["programs"] // SMALL["data_sets"]
    startup = report["startup"]  # a first dispatch needs a prepared chunk and a ready worker
    assert 0 < startup["first_chunk_prepared_s"] <= startup["first_dispatch_s"] == report["startup_seconds"]
    assert 0 < startup["first_worker_ready_s"] <= startup["first_dispatch_s"]
    for stage in ("draw", "reference", "kernel text", "assemble", "pack", "spool"):
        assert report["stages"]["producers"][stage]["seconds"] > 0, stage
    for stage in ("read", "compare"):
        assert report["stages"]["gpu_workers"][stage]["seconds"] > 0, stage
    assert all(tool.GC_STAGE in report["stages"][where] for where in ("producers", "gpu_workers", "main"))
    cache = report["kernel_cache"]
    assert cache["assembled"] == len({text for text in _texts(settings)}) and cache["hits"] + cache["assembled"] == report["launches"]


def test_idle_time_between_batches_is_reported_and_not_counted_as_busy(settings):
    """The GPU's seconds between batches are the worker's fault, not the GPU's work: reported per
    GPU apart from busy time, which alone gives the GPU-side rate."""
    from tests.fake_launchers import Timed

    report = run(settings, "tests.fake_launchers:timed", 1)
    gpu, launches = report["gpus"][0], report["launches"]
    assert gpu["launch_seconds"] == gpu["busy_seconds"] == report["gpu_seconds"] == round(launches * Timed.LAUNCH_S, 3)
    assert gpu["idle_between_batches_seconds"] == round(launches * Timed.IDLE_S, 3)
    assert gpu["idle_between_batches_by_gap_seconds"] == {"<0.1 ms": 0, "0.1-1 ms": 0, "1-10 ms": 0,
                                                          ">=10 ms": round(launches * Timed.IDLE_S, 3)}
    gpu_rate = report["programs"] / (launches * Timed.LAUNCH_S)
    assert report["throughput"]["programs_per_s_gpu"] == round(gpu_rate, 1)
    # The ratio is computed from the unrounded wall time; the report gives it to the millisecond.
    ratio_bounds = sorted(report["programs"] / (report["seconds"] + e) / gpu_rate for e in (-5e-4, 5e-4))
    assert ratio_bounds[0] - 5e-5 <= report["throughput"]["end_to_end_over_gpu"] <= ratio_bounds[1] + 5e-5


def test_the_first_workers_start_is_reported_in_its_parts(settings):
    """Spawned, then its spawn and imports, then its launcher opening: the parts of the first GPU
    worker's start, which together take it to ready."""
    from tests.fake_launchers import SlowToOpen

    startup = run(settings, "tests.fake_launchers:slow_to_open", 1)["startup"]
    first = startup["first_worker"]
    assert first["spawned_s"] >= 0 and first["spawn_and_imports_s"] > 0 and first["launcher_s"] >= SlowToOpen.OPEN_S
    clocks = 0.01  # the parts are read off the epoch clock, ready off the performance counter
    assert first["spawned_s"] + first["spawn_and_imports_s"] + first["launcher_s"] <= startup["first_worker_ready_s"] + clocks


def test_the_gpu_workers_start_before_the_producers(settings, monkeypatch):
    """A GPU worker's start (imports, then a CUDA context) is the longer: it goes first."""
    started = []
    monkeypatch.setattr(tool.Run, "connect", lambda self, target, args, worker: started.append(target) or (None, None))
    tool.Run(settings, 3, [None, None], "host-only", 60.0, io.StringIO()).start("spool")
    assert started == [tool.gpu_worker] * 2 + [tool.producer] * 3


@pytest.mark.parametrize("seconds, key", [(0.0, "idle <0.1 ms"), (0.99e-4, "idle <0.1 ms"), (1e-4, "idle 0.1-1 ms"),
                                          (0.9e-3, "idle 0.1-1 ms"), (2e-3, "idle 1-10 ms"), (0.01, "idle >=10 ms"),
                                          (3.0, "idle >=10 ms")])
def test_an_idle_gap_is_counted_by_its_length(seconds, key):
    counted = Counter()
    count_idle(counted, seconds)
    assert counted == Counter({"idle": seconds, key: seconds})


def _texts(settings: tool.Settings) -> list[str]:
    return [hopper_kernel(hopper_form(p)) for c in settings.chunks() for p in tool.draw_chunk(c, settings)[1]]


def test_a_second_run_takes_every_kernel_from_the_cache(settings):
    first = run(settings, "tests.fake_launchers:well", 1)
    second = run(settings, "tests.fake_launchers:well", 1)
    assert first["kernel_cache"]["assembled"] > 0
    assert second["kernel_cache"]["assembled"] == 0 and second["kernel_cache"]["hits"] == second["launches"]
    assert second["programs"] == first["programs"]


def _charged(report: dict, want: dict) -> list[list[str]]:
    """The launch groups whose every case the report charged as an error."""
    errors = {f["case_id"] for f in report["failures"] if f["status"] == "error"}
    return [g for g in want["groups"] if set(g) <= errors]


def test_a_fault_and_a_crash_cost_only_the_cases_of_their_launch(settings):
    want = expected_run(settings)
    report = run(settings, "tests.fake_launchers:raise_on_0_exit_on_1", 2)
    charged = _charged(report, want)
    assert len(charged) == 2, "exactly one launch per misbehaving worker is charged"
    assert report["errors"] == sum(map(len, charged)) and report["programs"] + report["errors"] == want["programs"]
    assert report["mismatches"] == 0
    details = [f["detail"] for f in report["failures"] if f["status"] == "error"]
    assert any(d.startswith("GPU 0 (stand-in GPU 0): the launch raised RuntimeError: CUDA driver error") for d in details)
    assert any(d.startswith("GPU 1 (stand-in GPU 1): its worker died (exit status 3)") for d in details)
    assert [g["restarts"] for g in report["gpus"]] == [1, 1]
    assert all(len(g["incidents"]) == 1 for g in report["gpus"])


def test_a_hang_costs_its_launch_and_the_rest_runs(settings):
    want = expected_run(settings)
    report = run(settings, "tests.fake_launchers:hang_on_0", 1, timeout_s=8)
    charged = _charged(report, want)
    assert len(charged) == 1 and report["errors"] == len(charged[0])
    assert report["programs"] + report["errors"] == want["programs"]
    assert all("no result after 8 s (a hang)" in f["detail"] for f in report["failures"])
    assert report["gpus"][0]["restarts"] == 1


def test_a_gpu_whose_worker_cannot_start_is_given_up(settings):
    want = expected_run(settings)
    report = run(settings, "tests.fake_launchers:unusable_1", 2)
    assert report["programs"] == want["programs"] and report["errors"] == 0
    assert report["gpus"][0]["programs"] == want["programs"] and report["gpus"][1]["programs"] == 0
    assert report["gpus"][1]["incidents"] and all("could not start: RuntimeError: stand-in GPU 1 is sm_100" in i
                                                  for i in report["gpus"][1]["incidents"])
    with pytest.raises(tool.NoWorkerCouldRun, match="no GPU worker could run: GPU 0: .*sm_100"):
        run(settings, "tests.fake_launchers:unusable", 1)


def test_a_planted_difference_is_decoded_and_written_for_replay(settings, tmp_path):
    cases = tmp_path / "cases"
    report = run(settings, "tests.fake_launchers:flip_on_0", 1, cases=str(cases))
    assert (report["mismatches"], report["mismatched_words"], report["errors"]) == (1, 1, 0)
    failure = report["failures"][0]
    assert failure["status"] == "fail" and failure["diff"]["mismatched"] == 1 and "program" not in failure
    written = sorted(cases.iterdir())
    assert [p.name for p in written] == [f"{failure['case_id']}.json"] and load(str(written[0])).case_id == failure["case_id"]


def test_shards_divide_the_chunks_and_draw_them_alike():
    whole = tool.Settings(programs=1000, seed=3, chunk=100)
    shards = [tool.Settings(programs=1000, seed=3, chunk=100, shard=(i, 3)) for i in (1, 2, 3)]
    parts = [s.chunks() for s in shards]
    assert sorted(c for part in parts for c in part) == whole.chunks() == list(range(10))
    assert all(not set(a) & set(b) for a in parts for b in parts if a is not b)
    small = tool.Settings(programs=8, seed=3, data_sets=4, chunk=4)
    assert [p.case_id for p in tool.draw_chunk(1, small)[1]] == \
           [p.case_id for p in tool.draw_chunk(1, tool.Settings(programs=8, seed=3, data_sets=4, chunk=4, shard=(2, 2)))[1]]


def test_data_sets_share_an_instruction_and_differ_in_data():
    _, programs = tool.draw_chunk(0, tool.Settings(programs=8, seed=9, data_sets=4, chunk=8))
    for first in (0, 4):
        ops = {p.ops[0] for p in programs[first:first + 4]}
        assert len(ops) == 1
        assert len({p.case_id for p in programs[first:first + 4]}) == 4


def test_the_batched_reference_equals_the_one_by_one_reference():
    _, programs = tool.draw_chunk(1, tool.Settings(programs=48, seed=2, data_sets=4, chunk=24))
    _, programs_exact = tool.draw_chunk(0, tool.Settings(programs=48, seed=2, data_sets=4, chunk=24))
    together_profiles, together = tool.expected_states(programs + programs_exact, together=True)
    alone_profiles, alone = tool.expected_states(programs + programs_exact, together=False)
    assert together_profiles == alone_profiles
    for a, b in zip(together, alone):
        assert np.array_equal(a.state.hopper_d, b.state.hopper_d)


def test_cli_host_only_reports_stages_and_rates(tmp_path, capsys, monkeypatch):
    from tcgen05_conformance.cli import main

    monkeypatch.setenv("TCGEN05_CACHE", str(tmp_path / "kernels"))
    report = tmp_path / "report.json"
    argv = ["campaign", "--host-only", "--gpus", "2", "--count", "16", "--data-sets", "4", "--jobs", "1", "--seed", "1",
            "--out", str(report)]
    assert main(argv) == 0
    written = json.loads(report.read_text())
    assert written["programs"] == 16 and len(written["gpus"]) == 2 and written["settings"]["launcher"] == "host-only"
    assert written["throughput"]["programs_per_s_gpu"] is None and written["throughput"]["programs_per_s_end_to_end"] > 0
    err = capsys.readouterr().err
    assert "producers    draw" in err and "16 programs" in err


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the checker's CPU build needs g++")


@needs_gxx
def test_the_checker_run_equals_the_model_run(settings):
    """With the integer checker (built for the CPU) computing D, a run counts what the model's run
    counts and finds nothing; the model evaluated every 3rd program of each chunk."""
    checker = dataclasses.replace(settings, numerics=tool.CHECKER, cross_check_every=3)
    want = expected_run(settings)
    report = run(checker, "tests.fake_launchers:well", 1)
    model = run(settings, "tests.fake_launchers:well", 1)
    for key in ("programs", "inner_products_total", "inner_products", "launches", "mismatches", "errors", "not_run"):
        assert report[key] == model[key], key
    assert report["programs"] == want["programs"] and report["mismatches"] == 0
    assert report["cross_checked"]["programs"] == sum(-(-checker.chunk_programs(c) // 3) for c in checker.chunks())
    assert model["cross_checked"]["programs"] == 0
    assert report["stages"]["producers"]["model"]["seconds"] > 0


@needs_gxx
def test_a_planted_difference_is_judged_by_the_model_with_the_checker(settings):
    report = run(dataclasses.replace(settings, numerics=tool.CHECKER), "tests.fake_launchers:flip_on_0", 1)
    assert (report["mismatches"], report["mismatched_words"], report["errors"]) == (1, 1, 0)
    assert report["failures"][0]["status"] == "fail" and report["failures"][0]["diff"]["mismatched"] == 1


@needs_gxx
@pytest.mark.parametrize("launcher, message", [
    ("checker_wrong_in_sample", r"the integer checker's D differs from the Python model's in 1 element\(s\)"),
    ("checker_wrong_outside_sample", r"the integer checker's D differs from the Python model's, which the GPU's D equals"),
])
def test_a_wrong_checker_stops_the_run(settings, launcher, message):
    """A checker wrong on a program the model sampled is caught before judging; one wrong on a
    program outside the sample shows as a mismatch the model then clears, and is caught too."""
    with pytest.raises(CrossCheckError, match=message):
        run(dataclasses.replace(settings, numerics=tool.CHECKER, cross_check_every=4), f"tests.fake_launchers:{launcher}", 1)


def test_spool_files_give_back_what_was_written_with_arrays_mapped_read_only(tmp_path):
    """A prepared chunk's arrays come back equal, as read-only views of the mapped file (no copy),
    which outlive the file; objects and non-contiguous arrays come back too."""
    value = {"words": np.arange(1000, dtype=np.uint32).reshape(10, 100), "strided": np.arange(9, dtype=np.uint64)[::2],
             "bytes": [np.full(7, 3, np.uint8), "a label", (1, 2.5)]}
    path = str(tmp_path / "chunk")
    tool.write_pickle(path, value)
    back = tool.read_pickle(path)
    (tmp_path / "chunk").unlink()
    assert np.array_equal(back["words"], value["words"]) and not back["words"].flags.writeable
    assert np.array_equal(back["strided"], value["strided"]) and np.array_equal(back["bytes"][0], value["bytes"][0])
    assert back["bytes"][1:] == ["a label", (1, 2.5)]
    assert back["words"].ctypes.data % tool.SPOOL_ALIGN == 0


@pytest.mark.parametrize("argv, gxx, want", [
    ([], "/usr/bin/g++", "checker"),
    (["--host-only"], "/usr/bin/g++", "checker"),
    (["--host-only"], None, "model"),
    (["--reference", "tests.alternative_backends:ZcmaskFieldReading"], "/usr/bin/g++", "model"),
    (["--numerics", "model"], "/usr/bin/g++", "model"),
])
def test_the_numerics_default_follows_the_reference_and_the_compiler(monkeypatch, argv, gxx, want):
    """The checker needs the oracle's operands, and with --host-only a C++ compiler."""
    import argparse

    import tcgen05_conformance.cli.campaign as cli_campaign

    monkeypatch.setattr(cli_campaign.shutil, "which", lambda name: gxx)
    parser = argparse.ArgumentParser()
    cli_campaign.add(parser.add_subparsers())
    assert cli_campaign.numerics_for(parser.parse_args(["campaign", "--json", "r.json", *argv])) == want


def test_the_checker_with_another_reference_is_refused_in_one_line(tmp_path, capsys):
    """Refused before anything runs, and before the GPU is looked for (none here)."""
    from tcgen05_conformance.cli import main

    argv = ["campaign", "--numerics", "checker", "--reference", "tests.alternative_backends:ZcmaskFieldReading",
            "--out", str(tmp_path / "r.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--numerics checker computes D from the oracle's operands: it needs --reference oracle" in err[0]
    assert not (tmp_path / "r.json").exists()
