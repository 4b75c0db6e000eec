"""The tool subcommands (campaign, numerics measure|fit|catch-rates|probes, bench, mutants, legality):
their help, one-line errors on bad usage, the clean skip of the GPU commands where cuda-core or an
sm_90 GPU is missing, small real runs, and the docs naming only commands that exist."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tcgen05_conformance.cli import main, parser

ROOT = Path(__file__).resolve().parents[1]
#: The tool packages of the top floors (docs/architecture.md): long-running and measuring commands.
TOOL_PACKAGES = ("campaign", "numerics", "peers", "mutation", "fuzz", "lint", "assumptions", "bench")
TOOL_MODULES = tuple(f"tcgen05_conformance.{package}" for package in TOOL_PACKAGES)
SUBCOMMANDS = [["run"], ["replay"], ["export"], ["legality"], ["decode"], ["vectors", "check"], ["numerics"],
               ["numerics", "measure"], ["numerics", "infer"], ["numerics", "proof"], ["numerics", "agree"], ["numerics", "fit"],
               ["numerics", "sweep"],
               ["numerics", "catch-rates"], ["numerics", "probes"], ["probe"],
               ["campaign"], ["cache"], ["cache", "info"], ["cache", "clear"], ["cache", "fill"], ["report"], ["report", "merge"], ["bench"],
               ["mutants"], ["fuzz"], ["lint"], ["import"], ["spellings"], ["lint-agreement"], ["peers"], ["completion"],
               ["suite"], ["suite", "show"], ["suite", "check"], ["suite", "freeze"]]
SUBNORMAL_SAMPLES = ROOT / "reports" / "numerics-h100-f32-subnormal-floor" / "h100-subnormal-samples.npz"
SUBNORMAL_FIT = ROOT / "reports" / "numerics-h100-f32-subnormal-floor" / "h100-subnormal-fit.json"


def _status(argv: list[str]) -> int:
    """main's return value, or the status argparse exits with."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction)), {})


def _subparser(words: list[str]) -> argparse.ArgumentParser:
    p = parser()
    for w in words:
        p = _subparsers(p)[w]
    return p


# --- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize("words", [[], *SUBCOMMANDS], ids=lambda w: " ".join(w) or "top")
def test_help_describes_each_subcommand(words, capsys):
    assert _status([*words, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {' '.join(['tcgen05-conformance', *words])}")
    if words in (["campaign"], ["numerics", "measure"], ["numerics", "infer"], ["numerics", "proof"]):
        assert "5 when nothing could run here" in " ".join(out.split()) and "sm_90" in out


def test_every_subcommand_is_listed_and_tested():
    """A new subcommand must be added to SUBCOMMANDS (help, docs check) and to docs/running.md's list of what each command is for."""
    found = []

    def walk(p, words):
        for name, child in _subparsers(p).items():
            found.append([*words, name])
            walk(child, [*words, name])

    walk(parser(), [])
    assert sorted(found) == sorted([*SUBCOMMANDS, ["vectors"]])
    running = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    leaves = [w for w in found if not _subparsers(_subparser(w))]
    assert [w for w in leaves if f"`tcgen05-conformance {' '.join(w)}" not in running] == []


def test_help_does_not_import_the_tools():
    """--help stays fast: building the parser loads no tool, device code, generator or GPU library."""
    heavy = TOOL_MODULES + ("tcgen05_conformance.device", "tcgen05_conformance.generators",
                            "tcgen05_conformance.oracles.execute", "tcgen05_conformance.oracles.mma")
    code = ("import sys; from tcgen05_conformance.cli import parser; parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cuda', 'hypothesis', 'tabulate') or "
            f"m.startswith({heavy!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- docs name commands that exist ------------------------------------------------------------


def _doc_texts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}


def test_documented_command_lines_parse_as_documented():
    """Every `tcgen05-conformance ...` in README and docs names a subcommand whose parser takes each option shown."""
    checked = 0
    for name, text in _doc_texts().items():
        for line in re.findall(r"`tcgen05-conformance ([^`]+)`", text):
            words = line.split()
            p, path = parser(), []
            while words and words[0] in _subparsers(p):
                path.append(words[0])
                p = _subparsers(p)[words.pop(0)]
            assert path or all(w.startswith("--") for w in words), f"{name}: `tcgen05-conformance {line}` names no subcommand"
            options = {o for a in p._actions for o in a.option_strings}
            for word in words:
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", word):
                    assert option in options, f"{name}: `tcgen05-conformance {line}`: {' '.join(path)} has no {option}"
            checked += 1
    assert checked > 40


def test_documented_python_m_entry_points_exist():
    """A `python -m X` in README or docs names a module that runs as a program (the tools are subcommands now)."""
    for name, text in _doc_texts().items():
        for module in re.findall(r"python3? -m ([\w.]+)", text):
            spec = importlib.util.find_spec(module)
            assert spec is not None, f"{name}: python -m {module}: no such module"
            if spec.submodule_search_locations:
                assert importlib.util.find_spec(f"{module}.__main__") is not None, f"{name}: {module} has no __main__"
            else:
                assert 'if __name__ == "__main__"' in Path(spec.origin).read_text(encoding="utf-8"), \
                    f"{name}: python -m {module} does not run as a program"
            assert not module.startswith(TOOL_MODULES + ("tcgen05_conformance.oracles.numerics.fit", "device.measure", "device.hopper_c"))


def test_no_tool_module_has_a_python_m_entry_point():
    for path in sorted(p for package in TOOL_PACKAGES for p in (ROOT / "conformance" / package).glob("*.py")):
        assert "__main__" not in path.read_text(encoding="utf-8"), path.name


# --- bad usage: one line, exit status 2, before any work ---------------------------------------


def _bad_usage_cases(tmp: Path) -> list[list[str]]:
    report = str(tmp / "report.json")
    a_file = tmp / "file.txt"
    a_file.write_text("x\n")
    not_samples = tmp / "broken.npz"
    not_samples.write_bytes(b"not a zip")
    empty_samples = tmp / "empty.npz"
    np.savez(empty_samples, unrelated=np.zeros(3))
    no_inputs = tmp / "no-inputs.npz"
    np.savez(no_inputs, **{"wgmma.f16.f32/silicon": np.zeros(3, np.float32)})
    return [
        ["campaign"],
        ["campaign", "--out", report, "--count", "0"],
        ["campaign", "--out", report, "--count", "1.5"],
        ["campaign", "--out", report, "--count", "many"],
        ["campaign", "--out", report, "--count", "1e10"],
        ["campaign", "--out", report, "--count", "nan"],
        ["campaign", "--out", str(tmp)],
        ["campaign", "--out", str(tmp / "missing" / "report.json")],
        ["campaign", "--out", report, "--seed", "-1"],
        ["campaign", "--out", report, "--seed", str(2**32)],
        ["campaign", "--out", report, "--jobs", "0"],
        ["campaign", "--out", report, "--out-cases", str(a_file)],
        ["campaign", "--out", report, "--reference", "no such backend"],
        ["campaign", "--out", report, "--reference", "sim:/nonexistent/simulator"],
        ["campaign", "--out", report, "--gpus", "0"],
        ["campaign", "--out", report, "--gpus", "some"],
        ["campaign", "--out", report, "--data-sets", "0"],
        ["campaign", "--out", report, "--timeout", "0"],
        ["campaign", "--out", report, "--timeout", "nan"],
        ["campaign", "--out", report, "--shard", "0/3"],
        ["campaign", "--out", report, "--shard", "4/3"],
        ["campaign", "--out", report, "--shard", "2"],
        ["cache"],
        ["cache", "trim"],
        ["report"],
        ["report", "merge", str(tmp)],
        ["report", "merge", str(a_file), "--out", str(tmp / "merged")],
        ["numerics"],
        ["numerics", "measure"],
        ["numerics", "measure", "--out", report, "--count", "0"],
        ["numerics", "measure", "--out", report, "--profile", "sm_99"],
        ["numerics", "measure", "--out", report, "--only", "wgmma.f64"],
        ["numerics", "measure", "--out", report, "--out-samples", str(tmp / "samples.txt")],
        ["numerics", "measure", "--out", report, "--tiny", "-1"],
        ["numerics", "measure", "--out", report, "--checker", "gpu", "--tiny", "3"],
        ["numerics", "measure", "--out", report, "--checker", "cpu"],
        ["numerics", "measure", "--out", report, "--cross-check", "0"],
        ["numerics", "measure", "--out", report, "--out-markdown", str(tmp / "table.md")],
        ["numerics", "measure", "--out", report, "--mixed-fp8", "--tcgen05", "sm_100a"],
        ["numerics", "measure", "--out", report, "--mixed-fp8", "--only", "bf16"],
        ["numerics", "fit", str(SUBNORMAL_SAMPLES)],
        ["numerics", "fit", "--profile", "sm_90a"],
        ["numerics", "fit", str(tmp / "missing"), "--profile", "sm_90a"],
        ["numerics", "fit", str(a_file), "--profile", "sm_90a"],
        ["numerics", "fit", str(tmp), "--profile", "sm_90a"],
        ["numerics", "fit", str(not_samples), "--profile", "sm_90a"],
        ["numerics", "fit", str(empty_samples), "--profile", "sm_90a"],
        ["numerics", "fit", str(no_inputs), "--profile", "sm_90a"],
        ["numerics", "catch-rates", "f16"],
        ["numerics", "catch-rates", "f99:f32"],
        ["numerics", "catch-rates", "e2m1:f32", "--profile", "sm_90a"],
        ["numerics", "catch-rates", "--profile", "exact"],
        ["numerics", "catch-rates", "--count", "0"],
        ["numerics", "probes", "--count", "3"],
        ["bench", "--batch", "0"],
        ["bench", "--batch", "1e8"],
        ["bench", "--batch", "x"],
        ["mutants", "--only", "no-such-mutant"],
        ["legality", "--arch", "sm_99a"],
    ]


def test_bad_usage_is_one_line_and_exit_2(tmp_path, capsys):
    for argv in _bad_usage_cases(tmp_path):
        assert _status(argv) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert err.startswith("tcgen05-conformance") and ": error: " in err and "\n" not in err, (argv, err)
        assert "Traceback" not in err and captured.out == "", argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.npz", "empty.npz", "file.txt", "no-inputs.npz"]


# --- the GPU commands skip cleanly where they cannot run ---------------------------------------

GPU_COMMANDS = [["campaign", "--count", "3"], ["numerics", "measure", "--count", "1000", "--only", "wgmma.f16"]]


def _fake_cuda_core(monkeypatch, device_class) -> None:
    """Make `from cuda.core import Device` give `device_class`, whatever is installed here."""
    if "cuda" not in sys.modules and importlib.util.find_spec("cuda") is None:
        monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    fake = types.ModuleType("cuda.core")
    fake.Device = device_class
    monkeypatch.setitem(sys.modules, "cuda.core", fake)


class _NoDevice:
    def __init__(self, ordinal: int):
        raise RuntimeError("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")


class _B200:
    name = "NVIDIA B200"
    compute_capability = (10, 0)

    def __init__(self, ordinal: int):
        pass

    def set_current(self) -> None:
        pass

    def create_stream(self) -> object:
        return object()


def _skip_line(argv: list[str], tmp_path: Path, capsys) -> str:
    report = tmp_path / "report.json"
    assert _status([*argv, "--out", str(report)]) == 5
    captured = capsys.readouterr()
    assert captured.out == "" and not report.exists()
    err = captured.err.strip()
    assert err.startswith("tcgen05-conformance: nothing ran: ") and "\n" not in err
    return err


@pytest.mark.parametrize("argv", GPU_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_gpu_commands_say_cuda_core_is_missing(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.core", None)  # import fails as when it is not installed
    err = _skip_line(argv, tmp_path, capsys)
    assert "cuda-core is not installed" in err and ("campaign" in err if argv[0] == "campaign" else "numerics measure" in err)


@pytest.mark.parametrize("argv", GPU_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_gpu_commands_say_there_is_no_gpu(argv, tmp_path, capsys, monkeypatch):
    _fake_cuda_core(monkeypatch, _NoDevice)
    err = _skip_line(argv, tmp_path, capsys)
    assert "no CUDA device" in err and "CUDA_ERROR_NO_DEVICE" in err


@pytest.mark.parametrize("argv", GPU_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_gpu_commands_say_the_gpu_is_not_sm_90(argv, tmp_path, capsys, monkeypatch):
    _fake_cuda_core(monkeypatch, _B200)
    err = _skip_line(argv, tmp_path, capsys)
    assert "NVIDIA B200 is sm_100" in err and "sm_90a" in err


@pytest.mark.skipif(importlib.util.find_spec("cuda.core") is not None, reason="cuda-core is installed: this would run")
def test_campaign_on_this_machine_skips_in_one_line(tmp_path):
    """The real thing, in a process of its own: no cuda-core here, so one line and status 5, no traceback."""
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "tcgen05_conformance", "campaign", "--count", "3", "--out", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 5 and done.stdout == "" and not report.exists()
    assert done.stderr.count("\n") == 1 and "cuda-core is not installed" in done.stderr


# --- the GPU commands end to end, with a stand-in for the GPU ------------------------------------


class _FakeGpu:
    name, arch = "stand-in H100", "sm_90"

    def load(self, ptx: str, arch: str):
        return types.SimpleNamespace(get_kernel=lambda entry: (entry, arch))


def test_campaign_finds_a_planted_difference_and_writes_its_report(tmp_path, capsys, monkeypatch):
    """campaign as the CLI runs it on a host with two stand-in GPUs (tests/fake_launchers.py, in
    worker processes of their own) that return the oracle's D, except for one bit of one program
    (the run's one chunk goes to either): exactly that program is reported, decoded and written
    for replay."""
    pytest.importorskip("cuda.bindings.nvjitlink", reason="the producers assemble kernels with nvJitLink")
    import tcgen05_conformance.cli.campaign as cli_campaign
    import tcgen05_conformance.campaign.run as tool
    import tcgen05_conformance.device.launch

    monkeypatch.setattr(cli_campaign, "hopper_gpu_or_skip", lambda command: None)
    monkeypatch.setattr(tcgen05_conformance.device.launch, "visible_devices", lambda: ["0", "1"])
    monkeypatch.setattr(tool, "GPU_LAUNCHER", "tests.fake_launchers:flip_on_each")  # 6 programs: one chunk, one worker
    monkeypatch.setenv("FAKE_LAUNCHER_MARKERS", str(tmp_path))
    monkeypatch.setenv("TCGEN05_CACHE", str(tmp_path / "kernels"))
    report, cases = tmp_path / "report.json", tmp_path / "cases"
    # the default --numerics checker runs, in the stand-ins, on the CPU: it needs g++
    model = ["--numerics", "model"] if shutil.which("g++") is None else []
    argv = ["campaign", "--count", "6", "--seed", "5", "--jobs", "1", "--data-sets", "2", *model, "--out", str(report),
            "--out-cases", str(cases)]
    assert main(argv) == 1
    written = json.loads(report.read_text())
    assert written["command"] == "tcgen05-conformance " + " ".join(argv) and "CPUs" in written["machine"]
    assert (written["gpu"], written["reference"], written["programs"], written["mismatches"]) == (
        "stand-in GPU 0, stand-in GPU 1", "oracle", 6, 1)
    # wgmma judged by sm_90a, warp-level mma.sp by its measured mma.sync variant (the judge's choice)
    assert set(written["profiles"]) <= {"sm_90a", "sm_90a.mma_sync"} and sum(written["profiles"].values()) == 6
    assert written["profile"] == ", ".join(sorted(written["profiles"]))
    assert [g["device"] for g in written["gpus"]] == ["0", "1"] and written["instructions"] == 3
    assert written["errors"] == 0 and written["mismatched_words"] == 1 and written["launches"] > 0
    failure = written["failures"][0]
    assert failure["status"] == "fail" and failure["diff"]["mismatched"] == 1
    assert sorted(p.name for p in cases.iterdir()) == [f"{failure['case_id']}.json"]
    err = capsys.readouterr().err
    assert "6 programs" in err and "gpu_workers  launch" in err


def _model_words(c, chunk: dict) -> np.ndarray:
    """A stand-in GPU's D fragment words for a chunk of `numerics measure`: the model's own results
    under the combination's formats and profile (sm_90a's variant), packed as the kernel stores them."""
    import tcgen05_conformance.numerics.measure as tool
    from tcgen05_conformance.core.formats import get_format, storage_dtype
    from tcgen05_conformance.device.registers import pack_registers
    from tcgen05_conformance.oracles.numerics import inner_product

    tiles, m, n = chunk["c"].shape
    a = np.broadcast_to(chunk["a"][:, :, None, :], (tiles, m, n, c.k)).reshape(-1, c.k)
    b = np.broadcast_to(chunk["b"][:, None, :, :], (tiles, m, n, c.k)).reshape(-1, c.k)
    d = inner_product(a, b, chunk["c"].reshape(-1), c.inputs, c.acc, c.profile("sm_90a"), saturate=c.saturate)
    return pack_registers(d.view(storage_dtype(get_format(c.acc))).reshape(tiles, m, n), *tool.d_fragment(c),
                          tool.ACC_BITS[c.acc])


def test_numerics_measure_end_to_end_with_a_stand_in_gpu(tmp_path, capsys, monkeypatch):
    """numerics measure as the CLI runs it, the GPU replaced by the model's own results packed into
    the D fragment: 0 mismatches; one flipped bit in a D register: exactly one mismatch, kept in the
    samples. Every stage is timed in the report and printed."""
    import tcgen05_conformance.cli.numerics as cli_numerics
    import tcgen05_conformance.numerics.measure as tool

    flips = []

    def run_chunk(gpu, kernels, c, chunk, stages):
        words = _model_words(c, chunk)
        if flips:
            words[0, 0, 0] ^= 1 << 3
        return words

    monkeypatch.setattr(cli_numerics, "hopper_gpu_or_skip", lambda command, target: _FakeGpu())
    monkeypatch.setattr(tool, "run_chunk", run_chunk)
    report, samples = tmp_path / "run.json", tmp_path / "samples.npz"
    argv = ["numerics", "measure", "--count", "1000", "--seed", "5", "--only", "wgmma.bf16.f32", "--jobs", "1",
            "--out", str(report), "--out-samples", str(samples)]
    assert main(argv) == 0, capsys.readouterr().err
    written = json.loads(report.read_text())
    assert written["command"] == "tcgen05-conformance " + " ".join(argv) and written["mismatches"] == 0
    assert written["inner_products"] == {"wgmma.bf16.f32": 256 * 64 * 64}  # one chunk of 256 tiles
    stages = written["stages"]
    assert {where: set(timed) for where, timed in stages.items()} == {
        "workers": {"draw", "pack", "unpack", "model", "compare"}, "gpu": set(),  # the stand-in times no GPU stage
        "main": {"wait for chunks", "wait for comparisons"}}
    assert stages["workers"]["model"]["seconds"] > 0 and written["combinations"][0]["stages"] == stages  # one combination
    assert stages["workers"]["model"]["ns_per_inner_product"] == pytest.approx(
        1e9 * stages["workers"]["model"]["seconds"] / (256 * 64 * 64), rel=0.01, abs=0.002)
    assert "workers  model" in capsys.readouterr().err
    flips.append(True)
    assert main(argv) == 1
    written = json.loads(report.read_text())
    assert written["mismatches"] == 1 and "1 mismatches" in capsys.readouterr().err
    kept = np.load(samples)  # the first tile's 4096 vectors, the mismatching one among them, each once
    mismatch = kept["wgmma.bf16.f32/mismatch"]
    assert mismatch.size == 4096 and int(mismatch.sum()) == 1
    assert (kept["wgmma.bf16.f32/silicon"] != kept["wgmma.bf16.f32/model"]).tolist() == mismatch.tolist()


def test_numerics_measure_mixed_fp8_and_fit_with_a_stand_in_gpu(tmp_path, capsys, monkeypatch):
    """--mixed-fp8 measures e4m3 x e5m2 (the GPU replaced by the model's results under the mixed
    formats): the report names both inputs, and numerics fit sweeps the kept vectors, the profile's
    own datapath accepting all of them."""
    import tcgen05_conformance.cli.numerics as cli_numerics
    import tcgen05_conformance.numerics.measure as tool

    monkeypatch.setattr(cli_numerics, "hopper_gpu_or_skip", lambda command, target: _FakeGpu())
    monkeypatch.setattr(tool, "run_chunk", lambda gpu, kernels, c, chunk, stages: _model_words(c, chunk))
    report, samples = tmp_path / "run.json", tmp_path / "samples.npz"
    argv = ["numerics", "measure", "--mixed-fp8", "--only", "mma.sync.e4m3xe5m2.f32", "--count", "1000", "--jobs", "1",
            "--out", str(report), "--out-samples", str(samples)]
    assert main(argv) == 0, capsys.readouterr().err
    entry, = json.loads(report.read_text())["combinations"]
    assert (entry["id"], entry["input"], entry["b_input"], entry["profile"]) == (
        "mma.sync.e4m3xe5m2.f32", "e4m3", "e5m2", "sm_90a.mma_sync")
    assert entry["mismatches"] == 0 and entry["inner_products"] == 8192 * 16 * 8
    capsys.readouterr()
    assert main(["numerics", "fit", str(samples), "--profile", "sm_90a", "--json"]) == 0
    sweep, = json.loads(capsys.readouterr().out)["sweeps"]
    assert sweep["combination"] == "mma.sync.e4m3xe5m2.f32" and sweep["mismatches"]["profile"] == 0
    assert any(v for k, v in sweep["mismatches"].items() if k != "profile"), "some variant must reject the vectors"


# --- small real runs ---------------------------------------------------------------------------


def test_numerics_fit_reproduces_the_h100_subnormal_sweep(capsys):
    """The sweep over the committed H100 samples: the recorded finding (align_floor -158 is the only
    floor with 0 mismatches in all four combinations) and the recorded counts, variant for variant."""
    argv = ["numerics", "fit", str(SUBNORMAL_SAMPLES), "--profile", "sm_90a", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["command"] == "tcgen05-conformance " + " ".join(argv)
    sweeps = {s["combination"]: s["mismatches"] for s in report["sweeps"]}
    assert set(sweeps) == {"mma.sync.bf16.f32", "mma.sync.tf32.f32", "wgmma.bf16.f32", "wgmma.tf32.f32"}
    floors = {k for k in next(iter(sweeps.values())) if k.startswith("align_floor=")}
    assert all(s["profile"] == 0 for s in sweeps.values())  # the profile's floor is -158
    assert [f for f in floors if all(s[f] == 0 for s in sweeps.values())] == []
    assert all(any(s[f] for s in sweeps.values()) for f in ("align_floor=-157", "align_floor=-159", "align_floor=None"))
    recorded = {s["combination"]: s["mismatches"] for s in json.loads(SUBNORMAL_FIT.read_text())["sweeps"]}
    assert sweeps == recorded


def test_numerics_fit_prints_a_table(capsys):
    assert main(["numerics", "fit", str(SUBNORMAL_SAMPLES), "--profile", "sm_90a"]) == 0
    out = capsys.readouterr().out
    assert "wgmma.tf32.f32" in out and "align_floor=-159" in out and "4 of 4 sweeps without a mismatch" in out


def test_numerics_fit_judges_each_instruction_by_its_own_variant(tmp_path, capsys):
    """Samples of mma.sync and wgmma fp8 -> f32, whose sm_90a datapaths differ (docs/numerics.md), each
    reproduced by the profile's variant for its instruction: fit --profile sm_90a finds 0 mismatches for
    both, and swapping the two sets of results gives mismatches for both."""
    from tcgen05_conformance.oracles.numerics import inner_product
    from tcgen05_conformance.oracles.numerics.sampling import random_bits

    rng = np.random.default_rng(3)
    a, b, c = (random_bits(f, shape, rng, 4) for f, shape in (("e4m3", (4000, 32)), ("e4m3", (4000, 32)), ("f32", (4000,))))
    results = {variant: inner_product(a, b, c, "e4m3", "f32", variant) for variant in ("sm_90a.mma_sync", "sm_90a")}
    assert (results["sm_90a.mma_sync"] != results["sm_90a"]).sum() > 0
    for name, swap in (("own.npz", False), ("swapped.npz", True)):
        mma_sync, wgmma = (results["sm_90a"], results["sm_90a.mma_sync"]) if swap else (results["sm_90a.mma_sync"], results["sm_90a"])
        np.savez(tmp_path / name, **{f"{i}/{k}": v for i, d in (("mma.sync.e4m3.f32", mma_sync), ("wgmma.e4m3.f32", wgmma))
                                     for k, v in (("a", a), ("b", b), ("c", c), ("silicon", d))})
        status = main(["numerics", "fit", str(tmp_path / name), "--profile", "sm_90a", "--json"])
        sweeps = {s["combination"]: s for s in json.loads(capsys.readouterr().out)["sweeps"]}
        assert sweeps["mma.sync.e4m3.f32"]["profile"] == "sm_90a.mma_sync" and sweeps["wgmma.e4m3.f32"]["profile"] == "sm_90a"
        assert [bool(s["mismatches"]["profile"]) for s in sweeps.values()] == [swap, swap]
        assert status == (1 if swap else 0)


def test_numerics_fit_over_recorded_vectors(capsys):
    from tests.numerics.test_numerics_recorded import DATA

    if not (DATA / "B200" / "fp16").is_dir():
        pytest.skip(f"recorded vectors not found at {DATA}")
    assert main(["numerics", "fit", str(DATA / "B200" / "fp16"), "--profile", "sm_100a", "--json"]) == 0
    sweeps = json.loads(capsys.readouterr().out)["sweeps"]
    assert [(s["gpu"], s["format"], s["vectors"]) for s in sweeps] == [("B200", "fp16", 2500)] * 2
    assert all(s["mismatches"]["profile"] == 0 and s["profile"] == "sm_100a.mma_sync" for s in sweeps)  # the recordings are mma.sync
    f32 = next(s for s in sweeps if s["output"] != "fp16")["mismatches"]
    # docs/numerics.md: 24 and 26 alignment bits both mismatch on every f32-output file, so do RNE
    # groups, c added after the group and groups of 8 (the recordings have K = 16)
    assert all(f32[v] > 0 for v in ("align_frac_bits=24", "align_frac_bits=26", "group_rounding=rne", "c_entry=final_add",
                                   "k_step=8"))
    assert f32["k_step=32"] == 0


def test_bench_with_a_tiny_batch(capsys):
    argv = ["bench", "--batch", "20", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["command"] == "tcgen05-conformance bench --batch 20 --json" and report["batch"] == 20
    assert len(report["cases"]) == 12 and all(r["reference_agrees"] and r["vectorised_us"] > 0 for r in report["cases"])
    assert [r["shape"] for r in report["mma"]["cases"]] == ["128x256x16", "128x256x16", "128x256x32", "128x256x32"]
    assert report["mma"]["target"]["measured_ms"] == report["mma"]["cases"][0]["ms"] > 0


def test_catch_rates_and_probes(capsys):
    assert main(["numerics", "catch-rates", "e4m3:f32", "--count", "100", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rates = report["rates"]["e4m3:f32"]
    assert report["command"].startswith("tcgen05-conformance numerics catch-rates") and report["seed"] == 11
    assert all(0 <= r <= 1 for family in rates.values() for r in family.values())
    assert rates["c_entry"]["cancellation"] > 0  # the family built for that change exposes it
    assert main(["numerics", "catch-rates", "e4m3:f32", "--count", "100"]) == 0
    assert "| **targeted** |" in capsys.readouterr().out
    assert main(["numerics", "probes", "--json"]) == 0
    probes = json.loads(capsys.readouterr().out)["probes"]
    f16_rz = next(p for p in probes if p["name"] == "f16-rz")["predictions"]
    # 1 + 2^-24 + 2^-25: truncation keeps 1.0, round-to-nearest gives the next binary32 up (docs/numerics.md)
    assert (f16_rz["tcgen05"], f16_rz["recorded-rne"]) == ("0x3f800000", "0x3f800001")
