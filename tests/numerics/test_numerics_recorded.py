"""Recorded B200/H100 vectors reproduce bit for bit; malformed files give one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tcgen05_conformance.oracles.numerics import VectorFileError, check_vectors
from tcgen05_conformance.oracles.numerics.vectors import MANIFEST, PUBLISHED, RECORDINGS

# The development split shipped with the project (package data), with its licence.
DATA = RECORDINGS

EXPECTED_FILES = {
    ("E4M3", "fp32"),
    ("E4M3", "fp16"),
    ("E5M2", "fp32"),
    ("E5M2", "fp16"),
    ("bf16", "fp32"),
    ("fp16", "fp32"),
    ("fp16", "fp16"),
    ("tf32", "fp32"),
}


@pytest.mark.parametrize("gpu,profile", [("B200", "sm_100a"), ("H100", "sm_90a")])
def test_recorded_vectors_reproduce(gpu, profile):
    assert (DATA / "LICENCE").is_file() and (DATA / "README.md").is_file()
    result = check_vectors(DATA / gpu, profile)
    json.dumps(result)  # JSON-able
    per_file = {(f["format"], f["output"]): f for f in result["files"]}
    assert set(per_file) == EXPECTED_FILES
    for f in result["files"]:
        assert f["vectors"] == 2500 and f["first_mismatches"] == [], f
    assert result["vectors"] == 8 * 2500
    assert result["mismatches"] == 0


def test_other_profiles_do_not_reproduce():
    """The check can fail: the exact profile and the other GPU's profile miss many vectors."""
    exact = check_vectors(DATA / "B200" / "fp16", "exact")
    f32 = next(f for f in exact["files"] if f["output"] == "fp32")
    assert f32["mismatches"] > 500
    assert 1 <= len(f32["first_mismatches"]) <= 5
    first = f32["first_mismatches"][0]
    assert set(first) == {"line", "expected_bits", "actual_bits"} and first["line"] >= 1
    cross = check_vectors(DATA / "H100" / "E4M3", "sm_100a")
    assert cross["mismatches"] > 500


def _copy_folder(tmp_path: Path, fmt: str = "fp16", lines: int = 6) -> Path:
    """A small copy of one recorded folder (first lines of every file)."""
    src = DATA / "B200" / fmt
    dst = tmp_path / "B200" / fmt
    dst.mkdir(parents=True)
    for f in src.iterdir():
        with f.open() as fh:
            head = [next(fh) for _ in range(lines)]
        (dst / f.name).write_text("".join(head))
    return dst


def _replace_line(path: Path, line: int, text: str) -> None:
    rows = path.read_text().split("\n")
    rows[line - 1] = text
    path.write_text("\n".join(rows))


def test_small_copy_reproduces(tmp_path):
    folder = _copy_folder(tmp_path)
    result = check_vectors(folder, "sm_100a")
    assert result["vectors"] == 12 and result["mismatches"] == 0
    gpu_level = check_vectors(folder.parent, "sm_100a")
    assert gpu_level["vectors"] == 12


def _assert_one_line(err: pytest.ExceptionInfo, name: str, line: int) -> None:
    msg = str(err.value)
    assert "\n" not in msg
    assert name in msg and f":{line}:" in msg, msg
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "target,line,text",
    [
        ("a_B200_fp16.txt", 3, "3f7aa000 zz 3f80a000"),  # bad hex word
        ("a_B200_fp16.txt", 2, "3f7aa000 3f87c000"),  # wrong word count
        ("b_B200_fp16.txt", 4, " ".join(["3f800001"] * 16)),  # not an fp16 value
        ("c_B200_fp32.txt", 5, "0011111101101100011001001001011"),  # 31 characters
        ("d_B200_fp32.txt", 2, "00111111011100100000000000000002"),  # not binary
        ("d_B200_fp16.txt", 6, "00111111011100100000000000000001"),  # not a binary16 value
    ],
)
def test_malformed_files_raise_one_line_error(tmp_path, target, line, text):
    folder = _copy_folder(tmp_path)
    _replace_line(folder / target, line, text)
    with pytest.raises(VectorFileError) as err:
        check_vectors(folder, "sm_100a")
    _assert_one_line(err, target, line)


def test_short_file_raises_one_line_error(tmp_path):
    folder = _copy_folder(tmp_path)
    c = folder / "c_B200_fp32.txt"
    c.write_text("\n".join(c.read_text().split("\n")[:4]) + "\n")
    with pytest.raises(VectorFileError) as err:
        check_vectors(folder, "sm_100a")
    msg = str(err.value)
    assert "\n" not in msg and ":5:" in msg and "c_B200_fp32.txt" in msg


def test_missing_folder_is_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        check_vectors(tmp_path / "nowhere", "sm_100a")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        check_vectors(tmp_path / "empty", "sm_100a")


def test_unknown_profile(tmp_path):
    folder = _copy_folder(tmp_path)
    with pytest.raises(ValueError, match="unknown profile"):
        check_vectors(folder, "sm_42")


def _copy_gpu_folder(tmp_path: Path, lines: int = 6) -> Path:
    """A small copy of the whole B200 folder: every format folder, its first lines."""
    for fmt in sorted(p.name for p in (DATA / "B200").iterdir() if p.is_dir()):
        _copy_folder(tmp_path, fmt, lines)
    return tmp_path / "B200"


def _remove(p: Path) -> None:
    p.unlink()


def _broken_link(p: Path) -> None:
    p.unlink()
    p.symlink_to(p.parent / "nowhere")


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _device(p: Path) -> None:
    p.unlink()
    p.symlink_to("/dev/zero")


@pytest.mark.parametrize("damage, what", [
    (_remove, "missing"), (_broken_link, "cannot read (No such file or directory)"),
    (_directory, "not a regular file (a directory)"), (_fifo, "not a regular file (a FIFO)"),
    (_device, "not a regular file (a character device)"),
])
@pytest.mark.parametrize("name", ["d_B200_fp16.txt", "d_B200_fp32.txt", "c_B200_fp32.txt"])
def test_a_result_the_folder_cannot_read_is_an_error_never_fewer_vectors(tmp_path, damage, what, name):
    """issue 15: `vectors check` skipped such a result file and reported success over 17,500
    vectors instead of 20,000."""
    gpu = _copy_gpu_folder(tmp_path)
    assert check_vectors(gpu, "sm_100a")["vectors"] == 8 * 6  # the eight result files of B200, 6 lines each
    damage(gpu / "E4M3" / name)
    for path in (gpu, gpu / "E4M3"):
        with pytest.raises(VectorFileError) as err:
            check_vectors(path, "sm_100a")
        assert str(err.value) == f"{gpu / 'E4M3' / name}: {what}"


def test_a_format_folder_that_lost_its_a_file_is_an_error_at_gpu_level(tmp_path):
    gpu = _copy_gpu_folder(tmp_path)
    (gpu / "bf16" / "a_B200_bf16.txt").rename(gpu / "bf16" / "was_a.txt")
    with pytest.raises(VectorFileError, match=r"bf16: expected one a_<GPU>_<fmt>\.txt file, found 0$"):
        check_vectors(gpu, "sm_100a")


def _renamed_gpu(tmp_path: Path, source: str, gpu: str, fmt: str, lines: int = 200) -> Path:
    """The first lines of a shipped format folder, its files renamed to another GPU (no manifest)."""
    dst = tmp_path / gpu / fmt
    dst.mkdir(parents=True)
    for f in (DATA / source / fmt).iterdir():
        with f.open() as fh:
            head = [next(fh) for _ in range(lines)]
        (dst / f.name.replace(source, gpu)).write_text("".join(head))
    return dst.parent


def test_shipped_folders_carry_manifests_that_match_the_published_conventions():
    for gpu in ("B200", "H100"):
        manifest = json.loads((DATA / gpu / MANIFEST).read_text())
        assert manifest["gpu"] == gpu and "north-numerical-computing/MATLAB-tensor-core" in manifest["source"]
        declared = {(fmt, out): (e["instruction"], e["c"]) for fmt, outs in manifest["results"].items() for out, e in outs.items()}
        published = {key: (r.instruction, r.c) for key, r in PUBLISHED[gpu].results.items() if key in declared}
        assert declared == published


def test_h200_recordings_are_checked_under_the_publishers_h100_h200_convention(tmp_path):
    # The publishers' validation script treats H100 and H200 alike: fp8 binary32 results from wgmma with
    # D zero. The H100 recordings renamed H200 (no manifest) reproduce only under that convention.
    folder = _renamed_gpu(tmp_path, "H100", "H200", "E4M3")
    result = check_vectors(folder, "sm_90a")
    per_output = {f["output"]: f for f in result["files"]}
    assert per_output["fp32"]["recorded_with"] == "wgmma" and per_output["fp32"]["c"] == "zero"
    assert "H200" in per_output["fp32"]["convention"]
    assert result["vectors"] == 400 and result["mismatches"] == 0
    (folder / MANIFEST).write_text(json.dumps({"gpu": "H200", "source": "a guess", "results": {
        "E4M3": {"fp32": {"instruction": "mma_sync", "c": "binary32"}, "fp16": {"instruction": "mma_sync", "c": "binary16_rne"}}}}))
    guessed = check_vectors(folder, "sm_90a")
    assert {f["output"]: f["mismatches"] for f in guessed["files"]}["fp32"] > 100  # the mma.sync reading misses


def test_unknown_gpu_folder_is_refused_with_what_to_declare(tmp_path):
    folder = _renamed_gpu(tmp_path, "B200", "RTX9000", "fp16", lines=5)
    with pytest.raises(VectorFileError) as err:
        check_vectors(folder, "sm_100a")
    message = str(err.value)
    assert "\n" not in message and MANIFEST in message and "RTX9000" in message and "instruction" in message
    with pytest.raises(VectorFileError, match="no published convention"):
        check_vectors(folder / "fp16", "sm_100a")  # a format folder looks in its GPU folder


def test_a_manifest_makes_an_unknown_folder_checkable(tmp_path):
    folder = _renamed_gpu(tmp_path, "B200", "RTX9000", "fp16", lines=5)
    (folder / MANIFEST).write_text(json.dumps({"gpu": "RTX9000", "source": "our own harness", "results": {
        "fp16": {"fp32": {"instruction": "mma_sync", "c": "binary32"}, "fp16": {"instruction": "mma_sync", "c": "binary16_rne"}}}}))
    result = check_vectors(folder, "sm_100a")
    assert result["mismatches"] == 0 and all("our own harness" in f["convention"] for f in result["files"])


@pytest.mark.parametrize("manifest,fragment", [
    ("not json", "not a JSON manifest"),
    ({"gpu": "RTX9000"}, '"source"'),
    ({"gpu": "RTX9000", "source": "x", "results": {"fp8": {}}}, "'fp8' is not an input format"),
    ({"gpu": "RTX9000", "source": "x", "results": {"fp16": {"fp32": {"instruction": "hmma", "c": "binary32"}}}}, "instruction must be"),
    ({"gpu": "RTX9000", "source": "x", "results": {"fp16": {"fp32": {"instruction": "wgmma", "c": "binary16_rne"}}}}, "needs a binary16 output"),
    ({"gpu": "RTX9000", "source": "x", "results": {"fp16": {"fp32": {"instruction": "wgmma", "c": "zero"}}}}, "no recording for fp16/fp16"),
    ({"gpu": "B200", "source": "x", "results": {"fp16": {"fp32": {"instruction": "wgmma", "c": "zero"}}}}, "declares GPU 'B200'"),
    # found by fuzzing the manifest: each was a traceback or a message on two lines
    ("[" * 100_000, "not a JSON manifest (not accepted: JSON nested more than 64 levels deep"),
    ({"gpu": "RTX9000", "source": "x", "results": "fp16"}, 'a "results" object'),
    ({"gpu": "RTX9000", "source": "x", "results": 7}, 'a "results" object'),
    ({"gpu": "RTX9000", "source": "two\nlines", "results": {"fp16": {"fp32": {"instruction": "wgmma", "c": "zero"}}}},
     "(two\\nlines) declares no recording for fp16/fp16"),
])
def test_bad_manifests_are_refused_on_one_line(tmp_path, manifest, fragment):
    folder = _renamed_gpu(tmp_path, "B200", "RTX9000", "fp16", lines=5)
    (folder / MANIFEST).write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    with pytest.raises(VectorFileError) as err:
        check_vectors(folder, "sm_100a")
    assert "\n" not in str(err.value) and fragment in str(err.value), str(err.value)


@pytest.mark.parametrize("damage, what", [(_directory, "not a regular file (a directory)"), (_fifo, "not a regular file (a FIFO)"),
                                          (_broken_link, "cannot read (No such file or directory)")])
def test_a_manifest_that_cannot_be_read_is_an_error_not_absent(tmp_path, damage, what):
    """A recording.json in the GPU folder that is not a readable file was passed over silently,
    and the publishers' conventions used instead."""
    gpu = _copy_gpu_folder(tmp_path)
    (gpu / MANIFEST).write_text((DATA / "B200" / MANIFEST).read_text())
    damage(gpu / MANIFEST)
    with pytest.raises(VectorFileError) as err:
        check_vectors(gpu, "sm_100a")
    assert str(err.value) == f"{gpu / MANIFEST}: {what}"
