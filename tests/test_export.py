"""`export`: programs with their expected states (the reference's) as files a simulator reads
without Python. The files are read back here with plain json and numpy, as docs/simulators.md
describes them, and compared with a fresh oracle run; cases the reference cannot compute are
listed as skipped; the layout of the state files follows from the program alone."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core import program as program_model
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Ld, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.export import SCHEMA, VectorsError, export, read_state, state_layout
from tcgen05_conformance.harness.runner import generate_programs, reference_observations
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run


def _read_words(path: str, shape: list[int]) -> np.ndarray:
    """A raw little-endian uint32 file, as a simulator in C would read it."""
    assert os.path.getsize(path) == 4 * int(np.prod(shape))
    return np.fromfile(path, dtype="<u4").reshape(shape)


def _mixed_programs() -> list[Program]:
    """Two generated tcgen05 programs, a wgmma with operands in shared memory, a 4-bit mma.sp (not
    modelled) and a tcgen05.st / ld / ld.red program (register results)."""
    hopper = draw_examples(hopper_programs(), 200, 2)
    wgmma = next(p for p in hopper if isinstance(p.ops[0], WgmmaMma) and not p.ops[0].a_in_registers and not p.ops[0].sparse)
    mma_sp = next(p for p in hopper if isinstance(p.ops[0], MmaSp) and p.ops[0].atype in ("s4", "u4"))
    loads = Program(target="sm_100a", tmem_columns=32, label="st-ld",
                    ops=(Tcgen05St(shape="16x64b", num=2, values_seed=9), Tcgen05Ld(shape="16x64b", num=2),
                         Tcgen05Ld(shape="32x32b", num=2, red_op="min", red_type="u32")))
    return [*generate_programs(2, 5), wgmma, mma_sp, loads]


def test_exported_files_round_trip_against_the_oracle(tmp_path):
    programs = _mixed_programs()
    index = export(programs, *reference_observations(programs, "oracle", "exact"), str(tmp_path), {"seed": 5})
    on_disk = json.loads((tmp_path / "index.json").read_text())
    assert on_disk == index and on_disk["schema"] == SCHEMA == "tcgen05-conformance/vectors/1"
    assert [c["case_id"] for c in on_disk["cases"]] == [p.case_id for p in programs]
    assert (on_disk["exported"], on_disk["skipped"]) == (4, 1)
    skipped = on_disk["cases"][3]
    assert skipped["status"] == "skipped" and skipped["reason"].startswith("not modelled: mma.sp")
    parts_seen = set()
    for entry, p in zip(on_disk["cases"], programs):
        if entry["status"] == "skipped":
            continue
        case_path = tmp_path / entry["case"]
        case = json.loads(case_path.read_text())
        assert case["schema"] == SCHEMA and case["case_id"] == p.case_id and case["profile"] == "exact"
        assert program_model.from_json(case["program"]).case_id == p.case_id
        expected = run(p, "exact")
        assert case["expected_digest"] == expected.digest()
        folder = case_path.parent / case["expected"]
        state = case["state"]
        np.testing.assert_array_equal(_read_words(folder / state["tmem"]["file"], state["tmem"]["shape"]), expected.tmem)
        assert len(state["loads"]) == len(expected.loads)
        for part, words in zip(state["loads"], expected.loads):
            assert isinstance(p.ops[part["op"]], Tcgen05Ld)
            np.testing.assert_array_equal(_read_words(folder / part["file"], part["shape"]), words)
            parts_seen.add("ld")
        if expected.hopper_d is None:
            assert state["hopper_d"] is None
        else:
            d = state["hopper_d"]
            assert d["shape"] == [64, p.ops[0].n]
            np.testing.assert_array_equal(_read_words(folder / d["file"], d["shape"]), expected.hopper_d)
            parts_seen.add("d")
    assert parts_seen == {"ld", "d"}


def test_export_command_draws_the_programs_of_run(tmp_path, capsys):
    assert main(["export", "--count", "3", "--seed", "7", "--out", str(tmp_path)]) == 0
    index = json.loads((tmp_path / "index.json").read_text())
    assert [c["case_id"] for c in index["cases"]] == [p.case_id for p in generate_programs(3, 7)]
    assert index["seed"] == 7 and index["examples"] == 3 and index["reference"] == "oracle" and index["profile"] is None
    assert [c["profile"] for c in index["cases"]] == ["exact"] * 3 and index["profiles"] == {"exact": 3}  # tcgen05: exact by default
    assert "exported 3 cases" in capsys.readouterr().out


def test_a_simulator_as_the_reference_exports_the_states_it_computes(tmp_path):
    """The example adapter computes with the oracle: exported from it, the states are the oracle's."""
    programs = _mixed_programs()[2:4] + generate_programs(1, 5)  # a wgmma, the 4-bit mma.sp, a tcgen05 program
    adapter = Path(__file__).resolve().parents[1] / "examples" / "sim_adapter" / "oracle_sim.py"
    index = export(programs, *reference_observations(programs, "sim:" + shlex.join([sys.executable, str(adapter)])), str(tmp_path), {})
    assert [c["status"] for c in index["cases"]] == ["exported", "skipped", "exported"]
    assert index["cases"][1]["reason"].startswith("simulator: unsupported: mma.sp with s4")
    assert index["cases"][0]["profile"] == "sm_90a" and index["cases"][2]["profile"] == "exact"  # each architecture's own
    for entry, p in zip(index["cases"][::2], programs[::2]):
        case = json.loads((tmp_path / entry["case"]).read_text())
        assert case["expected_digest"] == run(p, entry["profile"]).digest()


def test_the_state_layout_follows_from_the_program_and_fits_the_oracles_states():
    mma_sp = [p for p in draw_examples(hopper_programs(forms="modelled"), 60, 4) if isinstance(p.ops[0], MmaSp)][:3]
    programs = _mixed_programs() + generate_programs(40, 3)[-12:] + mma_sp
    assert mma_sp and any(op.OP == "tcgen05.ld" and op.red_op for p in programs for op in p.ops)
    for p in programs:
        try:
            state = run(p)
        except ValueError:  # not modelled, undefined: no state to compare
            continue
        layout = state_layout(p)
        assert layout["tmem"]["shape"] == list(state.tmem.shape)
        assert [part["shape"] for part in layout["loads"]] == [list(words.shape) for words in state.loads]
        assert [p.ops[part["op"]].OP for part in layout["loads"]] == ["tcgen05.ld"] * len(state.loads)
        d = layout["hopper_d"]
        assert (None if d is None else d["shape"]) == (None if state.hopper_d is None else list(state.hopper_d.shape))


def test_export_to_a_file_is_one_line_exit_2(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("")
    assert main(["export", "--count", "1", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a directory" in err


def test_read_state_names_the_file_that_is_missing_or_of_the_wrong_size(tmp_path):
    p = _mixed_programs()[4]
    layout = state_layout(p)
    with pytest.raises(VectorsError, match="^tmem.bin: cannot read"):
        read_state(str(tmp_path), layout)
    (tmp_path / "tmem.bin").write_bytes(bytes(4 * 128 * 32))
    (tmp_path / "ld0.bin").write_bytes(bytes(7))
    with pytest.raises(VectorsError, match=r"^ld0.bin: holds 7 bytes, expected 256 \(uint32 32x2\)$"):
        read_state(str(tmp_path), layout)
    # issue 15: a 3 GiB or endless state file was read whole before its size was checked.
    (tmp_path / "ld0.bin").unlink()
    (tmp_path / "ld0.bin").symlink_to("/dev/zero")
    with pytest.raises(VectorsError, match=r"^ld0.bin: not a regular file \(a character device\)$"):
        read_state(str(tmp_path), layout)
    (tmp_path / "ld0.bin").unlink()
    with open(tmp_path / "ld0.bin", "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    with pytest.raises(VectorsError, match=r"^ld0.bin: larger than 256 bytes$"):
        read_state(str(tmp_path), layout)


def test_an_export_folder_another_export_is_writing_is_refused_on_one_line(tmp_path, capsys):
    """Issue 32: two `export --out D` at once both exited 0, and one index silently replaced the other."""
    from tcgen05_conformance.harness.report import ReportDir

    out = tmp_path / "exported"
    holder = ReportDir(str(out))  # what a running export (or run) holds on its folder
    try:
        assert main(["export", "--examples", "1", "--out", str(out)]) == 2
    finally:
        holder.close()
    err = [line for line in capsys.readouterr().err.splitlines() if "deprecated" not in line]
    assert err == [f"tcgen05-conformance: error: --out: report directory {out} is in use by another run"]
    assert not (out / "index.json").exists()
    assert main(["export", "--examples", "1", "--out", str(out)]) == 0  # released: the next export goes ahead
