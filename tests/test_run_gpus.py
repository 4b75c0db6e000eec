"""`run --gpus N|all`: a backend that runs on a GPU has its batches run in child processes, one per
GPU at a time, each pinned to its GPU through CUDA_VISIBLE_DEVICES; the verdicts are those of a
one-GPU run. No GPU here: stand-in GPU backends (tests/gpu_backends.py) log the device each child
saw, and the visible GPUs are planted (`tcgen05_conformance.device.launch.visible_devices`)."""

import json
import os
from collections import defaultdict

import pytest

import tcgen05_conformance.device.launch
from tcgen05_conformance.cli import main
from tcgen05_conformance.harness.backends.registry import uses_gpu
from tcgen05_conformance.harness.judge import ERROR, PASS
from tcgen05_conformance.harness.runner import execute, generate_programs
from tests.fault_backends import planted_programs
from tests.gpu_backends import NO_DEVICE

PLANTED_GPU = "tests.gpu_backends:PlantedGpu"
PERTURBED_GPU = "tests.gpu_backends:PerturbedGpu"
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"
# when, where and how long: what two runs of the same cases may differ in
UNCOMPARED = ("command", "gpus", "finished_utc", "duration_s")


@pytest.fixture
def gpu_log(tmp_path, monkeypatch):
    """The stand-ins' log, in a process that sees no CUDA_VISIBLE_DEVICES of its own."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    log = tmp_path / "gpu.log"
    monkeypatch.setenv("GPU_LOG", str(log))
    return log


def _devices_by_child(log) -> dict[int, set[str]]:
    """The CUDA_VISIBLE_DEVICES values each process that observed a case saw, by pid."""
    seen = defaultdict(set)
    for line in log.read_text().splitlines():
        device, pid, _ = line.split()
        seen[int(pid)].add(device)
    return seen


def _device_of_case(log) -> dict[str, str]:
    return {case: device for device, _, case in (line.split() for line in log.read_text().splitlines())}


def _verdicts(outcome) -> dict:
    return {name: [(r.case_id, r.status, r.detail, r.data) for r in rs] for name, rs in outcome.results.items()}


def test_the_gpu_backends_are_those_whose_factory_says_so():
    assert [uses_gpu(spec) for spec in ("hopper", "blackwell", PLANTED_GPU, PERTURBED_GPU)] == [True] * 4
    assert not any(uses_gpu(spec) for spec in ("oracle", "ptxas", "sim:/bin/true", "tests.fault_backends:Planted",
                                               "no_such_module:Factory", "tests.gpu_backends:Missing"))


@pytest.mark.parametrize("gpus", [["0", "1"], ["3", "GPU-5f0e", "7"]])
def test_each_child_sees_one_gpu_every_gpu_gets_work_and_the_verdicts_are_one_gpus(gpus, gpu_log, monkeypatch):
    monkeypatch.setenv("PERTURBED_KINDS", "tf32")
    programs = generate_programs(22, 5)[14:]  # Table 39 classes 9-16 (after one of each family): six f16 (pass), two tf32 (the planted bug: fail)
    one = execute(programs, ["oracle", PERTURBED_GPU], "exact", gpus=["0"])
    assert set().union(*_devices_by_child(gpu_log).values()) == {NO_DEVICE}  # one GPU: no child pinned, as ever
    gpu_log.unlink()
    spread = execute(programs, ["oracle", PERTURBED_GPU], "exact", gpus=gpus)
    children = _devices_by_child(gpu_log)
    assert os.getpid() not in children and all(len(seen) == 1 for seen in children.values())
    assert set().union(*children.values()) == set(gpus)  # every GPU ran a batch, pinned to it alone
    assert sorted(_device_of_case(gpu_log)) == sorted(p.case_id for p in programs)  # each case observed once
    assert _verdicts(spread) == _verdicts(one)
    assert {r.status for r in one.results[PERTURBED_GPU]} == {"pass", "fail"}
    assert (one.gpus, spread.gpus) == (["0"], gpus)


def test_a_crash_costs_its_case_alone_as_on_one_gpu(gpu_log, tmp_path, monkeypatch):
    programs = planted_programs("ok", "segv", "ok", "crash-once", "ok", "ok")
    outcomes, devices = [], []
    for gpus in (["0"], ["0", "1", "2"]):
        monkeypatch.setenv("PLANTED_DIR", str(tmp_path / str(len(gpus))))
        (tmp_path / str(len(gpus))).mkdir()
        outcome = execute(programs, [PLANTED_GPU], reference=PLANTED_REFERENCE, timeout_s=60, gpus=gpus)
        outcomes.append([(r.case_id, r.status, r.detail) for r in outcome.results[PLANTED_GPU]])
        devices.append(set(_device_of_case(gpu_log).values()))
        gpu_log.unlink()
    assert outcomes[0] == outcomes[1]
    assert [status for _, status, _ in outcomes[1]] == [PASS, ERROR, PASS, PASS, PASS, PASS]
    assert "crash: child was killed by SIGSEGV" in outcomes[1][1][2]
    assert devices == [{NO_DEVICE}, {"0", "1", "2"}]  # one GPU: children as with --timeout alone, unpinned


def test_a_hang_on_one_gpu_costs_its_case_while_the_other_gpu_runs_the_rest(gpu_log):
    programs = planted_programs("hang", "ok", "ok", "ok")
    outcome = execute(programs, [PLANTED_GPU], reference=PLANTED_REFERENCE, timeout_s=15, batch_size=1, gpus=["0", "1"])
    results = outcome.results[PLANTED_GPU]
    assert results[0].status == ERROR and results[0].detail.startswith("timeout: batch of 1 case exceeded 15 s")
    assert [r.status for r in results[1:]] == [PASS] * 3
    device = _device_of_case(gpu_log)
    hung_on = device[programs[0].case_id]
    assert {device[p.case_id] for p in programs[1:]} == {"1" if hung_on == "0" else "0"}  # all while the hang held its GPU


# --- the command line -------------------------------------------------------------------------------


RUN = ["run", "--backend", PLANTED_GPU, "--reference", PLANTED_REFERENCE, "--count", "6"]


def _run_summary(argv: list[str], out) -> tuple[int, dict]:
    status = main([*argv, "--out", str(out)])
    return status, json.loads((out / "summary.json").read_text())


def _compared(summary: dict, out) -> dict:
    """The summary but for what two runs of the same cases may differ in, replay commands naming
    no report folder."""
    s = {k: v for k, v in summary.items() if k not in UNCOMPARED}
    s["backends"] = {name: {k: v for k, v in b.items() if k != "duration_s"} for name, b in s["backends"].items()}
    s["failures"] = [{**f, "replay": f["replay"].replace(str(out), "OUT")} for f in s["failures"]]
    return s


def test_run_uses_every_visible_gpu_by_default_and_reports_them(gpu_log, tmp_path, monkeypatch, capsys):
    ids = [p.case_id for p in generate_programs(6, 0)]
    monkeypatch.setenv("PLANTED_VERDICTS", f"{ids[1]}=fail {ids[4]}=error")
    monkeypatch.setattr(tcgen05_conformance.device.launch, "visible_devices", lambda: ["0", "1", "2"])
    status, every = _run_summary(RUN, tmp_path / "every")
    assert status == 1 and every["gpus"] == ["0", "1", "2"]
    assert "GPUs: 0, 1, 2" in capsys.readouterr().out
    assert "GPUs (CUDA_VISIBLE_DEVICES): 0, 1, 2" in (tmp_path / "every" / "report.md").read_text()
    children = _devices_by_child(gpu_log)
    assert os.getpid() not in children and set().union(*children.values()) == {"0", "1", "2"}
    gpu_log.unlink()
    status, one = _run_summary([*RUN, "--gpus", "1"], tmp_path / "one")
    assert status == 1 and one["gpus"] == ["0"]
    assert set().union(*_devices_by_child(gpu_log).values()) == {NO_DEVICE}
    assert _compared(every, tmp_path / "every") == _compared(one, tmp_path / "one")
    assert (every["backends"][PLANTED_GPU]["failed"], every["backends"][PLANTED_GPU]["errors"]) == (1, 1)


def test_run_without_a_gpu_runs_as_it_always_has(gpu_log, tmp_path, monkeypatch):
    def no_driver():
        raise tcgen05_conformance.device.launch.GpuUnavailable("no CUDA device: no driver")

    monkeypatch.setattr(tcgen05_conformance.device.launch, "visible_devices", no_driver)
    status, summary = _run_summary(RUN, tmp_path / "out")
    assert status == 0 and summary["gpus"] == [] and summary["backends"][PLANTED_GPU]["passed"] == 6
    assert set().union(*_devices_by_child(gpu_log).values()) == {NO_DEVICE}


def test_a_run_without_a_gpu_backend_asks_no_driver(tmp_path, monkeypatch):
    monkeypatch.setattr(tcgen05_conformance.device.launch, "visible_devices", lambda: pytest.fail("the driver was asked for GPUs"))
    argv = ["run", "--backend", "tests.fault_backends:Planted", "--reference", PLANTED_REFERENCE, "--count", "2"]
    status, summary = _run_summary(argv, tmp_path / "out")
    assert status == 0 and summary["gpus"] == []
    assert "GPUs" not in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("argv, visible, status, message", [
    (["--gpus", "0"], ["0"], 2, "tcgen05-conformance run: error: argument --gpus: 0 is out of range: from 1 to 4,096"),
    (["--gpus", "some"], ["0"], 2, "tcgen05-conformance run: error: argument --gpus: 'some' is not a GPU count"),
    (["--gpus", "3"], ["0"], 2, "tcgen05-conformance: error: --gpus 3: only 1 GPU is visible"),
    (["--gpus", "3", "--backend", "oracle"], ["0", "1"], 2, "tcgen05-conformance: error: --gpus 3: only 2 GPUs are visible"),
    (["--gpus", "2"], None, 5, "tcgen05-conformance: nothing ran: no CUDA device: no driver"),
])
def test_bad_gpu_counts_are_one_line(argv, visible, status, message, tmp_path, monkeypatch, capsys):
    def listed():
        if visible is None:
            raise tcgen05_conformance.device.launch.GpuUnavailable("no CUDA device: no driver")
        return visible

    monkeypatch.setattr(tcgen05_conformance.device.launch, "visible_devices", listed)
    assert _exit_status([*RUN, *argv, "--out", str(tmp_path / "out")]) == status
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_gpus_without_a_gpu_backend_is_bad_usage(tmp_path, capsys):
    assert _exit_status(["run", "--count", "1", "--gpus", "2", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tcgen05-conformance: error: --gpus goes with a backend that runs on a GPU") and err.count("\n") == 1


def _exit_status(argv: list[str]) -> int:
    """main's return value, or the status argparse exits with on bad usage."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code
