"""Loader and checker for the recorded tensor-core vector folders.

Layout (see the data folder's README): ``<GPU>/<input format>/`` holding
``a_<GPU>_<fmt>.txt`` and ``b_<GPU>_<fmt>.txt`` (K hex binary32 words per line),
``c_<GPU>_fp32.txt`` (one 32-character binary string per line), and the result files its
format records (``RECORDED_OUTPUTS``): ``d_<GPU>_fp32.txt`` and, for fp16 and fp8 inputs,
``d_<GPU>_fp16.txt`` (fp16 results are binary16 values written as binary32).  Line i of every
file belongs to vector i. Every file must be a regular file: a missing result, a broken link, a
directory or a FIFO in its place is an error, so a check never counts fewer vectors than the
folder holds.

How each result file was recorded (the instruction family, and how c was fed: as recorded,
rounded to binary16, or zero) is part of the data: a GPU folder describes itself in a
``recording.json`` manifest (:data:`MANIFEST`), or is one of the publishers' recordings whose
harness and validation script fix the conventions (:data:`PUBLISHED`, with the source named).
A folder with neither is refused, never checked under a guessed convention. Where a profile
has a variant for the recording's instruction family (``sm_90a.mma_sync``: measured on H100,
warp-level MMA differs from wgmma for fp8), that variant checks the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tcgen05_conformance.core.inputs import InputError, parse_json, printable, read_file, read_text

from .convert import NotRepresentable, f32_to_f16_rne, from_binary32, to_binary32
from .model import inner_product
from .profiles import Profile, for_instruction, get_profile

#: Folder name -> input format name of the model.
FOLDER_FORMATS = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "E4M3": "e4m3", "E5M2": "e5m2"}
#: Output file tag -> accumulator format name.
OUTPUTS = {"fp32": "f32", "fp16": "f16"}
#: Folder format -> the result files every such folder holds (README of the recordings: d_fp16
#: "fp16, E4M3, E5M2 only"); a folder without one of them is refused, never checked short.
RECORDED_OUTPUTS = {"fp16": ("fp32", "fp16"), "bf16": ("fp32",), "tf32": ("fp32",), "E4M3": ("fp32", "fp16"),
                    "E5M2": ("fp32", "fp16")}
#: The largest vector file read: the recorded ones are under 1.5 MB (5,000 lines of 32 words).
MAX_FILE_BYTES = 256 * 1024 * 1024

#: The development split of the publishers' recordings shipped with the project (BSD-2-Clause,
#: LICENCE and README beside the data), each GPU folder with its manifest.
RECORDINGS = Path(__file__).with_name("recordings") / "tensor-core-vectors"
MANIFEST = "recording.json"  # in a GPU folder: how its result files were recorded
MAX_MANIFEST_BYTES = 1024 * 1024  # the shipped manifests are under 2 KB
INSTRUCTIONS = ("mma_sync", "wgmma")  # the recording instruction family (numeric-profile variants)
#: How c reached the GPU: the c file's binary32 value, rounded to binary16 (round to nearest
#: even, on the GPU) for a binary16 accumulator, or zero (D = A*B) whatever the c file says.
C_FEEDS = ("binary32", "binary16_rne", "zero")


@dataclass(frozen=True)
class Recording:
    """How one result file (input format, output) was recorded."""

    instruction: str
    c: str


@dataclass(frozen=True)
class Convention:
    """A GPU folder's recording conventions: one Recording per (input format, output tag), and
    where they come from (a manifest file or the publishers' harness)."""

    gpu: str
    source: str
    results: dict  # (folder format, output tag) -> Recording

    def recording(self, folder_format: str, output: str, where: Path) -> Recording:
        try:
            return self.results[(folder_format, output)]
        except KeyError:
            raise VectorFileError(f"{where}: {self.source} declares no recording for {folder_format}/{output}; "
                                  f"add it to {MANIFEST}") from None


def _published(gpu: str, fp8_fp32: Recording) -> Convention:
    """The conventions of the publishers' recordings (Khattak and Mikaitis, arXiv:2512.07004;
    github.com/north-numerical-computing/MATLAB-tensor-core, model_validation/): fp16, bf16 and tf32
    through wmma (CUDA/wmma_fp16_bf16_tf32_input.cu), fp8 through mma.sync m16n8k32
    (CUDA/mma_fp8_output_fp32.cu, mma_fp8_output_fp16.cu), c fed as binary32, or as
    __float2half(c) (round to nearest even) for a binary16 accumulator; fp8 binary32 results as
    `fp8_fp32` says."""
    results = {}
    for fmt in FOLDER_FORMATS:
        fp8 = fmt in ("E4M3", "E5M2")
        results[(fmt, "fp32")] = fp8_fp32 if fp8 else Recording("mma_sync", "binary32")
        results[(fmt, "fp16")] = Recording("mma_sync", "binary16_rne")
    return Convention(gpu, f"the publishers' harness for {gpu} (MATLAB-tensor-core model_validation/CUDA and "
                           "Validate_TC_models.m)", results)


#: The publishers' recordings by GPU. Their validation script (model_validation/Validate_TC_models.m)
#: treats H100 and H200 alike: for fp8 inputs it takes "D=A*B+D where D is made zero initially"
#: (wgmma), ignoring the c file; the binary16-output fp8 files were recorded with c (the
#: development vectors show it in every result).
PUBLISHED = {
    "B200": _published("B200", Recording("mma_sync", "binary32")),
    "H100": _published("H100", Recording("wgmma", "zero")),
    "H200": _published("H200", Recording("wgmma", "zero")),
}


def _manifest_error(path: Path, what: str) -> VectorFileError:
    return VectorFileError(f"{printable(str(path))}: {what}")


def read_manifest(path: Path) -> Convention:
    """A recording.json: {"gpu": NAME, "source": TEXT, "results": {FORMAT: {OUTPUT: {"instruction":
    one of INSTRUCTIONS, "c": one of C_FEEDS}}}}, read as bounded, depth-limited JSON."""
    try:
        text = read_text(str(path), MAX_MANIFEST_BYTES)
    except InputError as e:
        raise VectorFileError(str(e)) from None
    try:
        data = parse_json(text)
    except InputError as e:
        raise _manifest_error(path, f"not a JSON manifest ({e})") from None
    if not (isinstance(data, dict) and isinstance(data.get("gpu"), str) and isinstance(data.get("source"), str)
            and isinstance(data.get("results", {}), dict)):
        raise _manifest_error(path, 'needs "gpu" and "source" strings and a "results" object')
    results = {}
    for fmt, outputs in data.get("results", {}).items():
        if fmt not in FOLDER_FORMATS or not isinstance(outputs, dict):
            raise _manifest_error(path, f"results: {fmt!r} is not an input format folder ({', '.join(FOLDER_FORMATS)})")
        for output, entry in outputs.items():
            if output not in OUTPUTS or not isinstance(entry, dict):
                raise _manifest_error(path, f"results.{fmt}: {output!r} is not an output ({', '.join(OUTPUTS)})")
            instruction, c = entry.get("instruction"), entry.get("c")
            if instruction not in INSTRUCTIONS or c not in C_FEEDS:
                raise _manifest_error(path, f"results.{fmt}.{output}: instruction must be one of {INSTRUCTIONS} and c one of {C_FEEDS}")
            if c == "binary16_rne" and output != "fp16":
                raise _manifest_error(path, f"results.{fmt}.{output}: c rounded to binary16 needs a binary16 output")
            results[(fmt, output)] = Recording(instruction, c)
    if not results:
        raise _manifest_error(path, "declares no results")
    return Convention(data["gpu"], f"{printable(str(path))} ({printable(data['source'])})", results)


def convention_for(gpu_folder: Path, gpu: str) -> Convention:
    """The folder's manifest, else the publishers' conventions for a GPU they recorded; a folder
    with neither is refused with what to declare."""
    manifest = gpu_folder / MANIFEST
    if os.path.lexists(manifest):  # a manifest there that cannot be read is an error, not absent
        convention = read_manifest(manifest)
        if convention.gpu != gpu:
            raise VectorFileError(f"{printable(str(manifest))}: declares GPU {convention.gpu!r} but the files are {gpu!r}")
        return convention
    if gpu in PUBLISHED:
        return PUBLISHED[gpu]
    raise VectorFileError(
        f"{gpu_folder}: no {MANIFEST} and no published convention for GPU {gpu!r} (known: {', '.join(PUBLISHED)}); "
        f"declare per input format and output the instruction ({'/'.join(INSTRUCTIONS)}) and how c was fed "
        f"({'/'.join(C_FEEDS)}) in {MANIFEST}")


MAX_REPORTED = 5


class VectorFileError(ValueError):
    """A malformed vector file; the message is one line naming the file and line number."""


@dataclass(frozen=True)
class FormatFolder:
    """One ``<GPU>/<fmt>/`` folder: its files and the formats they hold."""

    path: Path
    gpu: str
    folder_format: str
    a: Path
    b: Path
    c: Path
    outputs: dict  # output tag -> Path of the d file
    convention: Convention


def _error(path: Path, line: int, what: str) -> VectorFileError:
    return VectorFileError(f"{printable(str(path))}:{line}: {what}")


def _lines(path: Path) -> list[str]:
    try:
        data = read_file(str(path), MAX_FILE_BYTES)
    except InputError as e:
        raise VectorFileError(str(e)) from None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise _error(path, data[: e.start].count(b"\n") + 1, "non-ASCII byte") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip("\r") for ln in lines]


_HEX = re.compile(r"^[0-9a-fA-F]{1,8}$")
_BIN = re.compile(r"^[01]{32}$")


def read_hex_words(path: Path) -> np.ndarray:
    """A file of K whitespace-separated hex binary32 words per line -> uint32 (lines, K)."""
    rows: list[list[int]] = []
    k = None
    for i, line in enumerate(_lines(path), 1):
        toks = line.split()
        if not toks:
            raise _error(path, i, "empty line")
        if k is None:
            k = len(toks)
        elif len(toks) != k:
            raise _error(path, i, f"expected {k} hex words (as on line 1), got {len(toks)}")
        for tok in toks:
            if not _HEX.match(tok):
                raise _error(path, i, f"{tok!r} is not a hexadecimal binary32 word")
        rows.append([int(tok, 16) for tok in toks])
    if not rows:
        raise _error(path, 1, "file is empty")
    return np.array(rows, dtype=np.uint32)


def read_binary_words(path: Path) -> np.ndarray:
    """A file of one 32-character binary string per line -> uint32 (lines,)."""
    out = []
    for i, line in enumerate(_lines(path), 1):
        tok = line.strip()
        if not _BIN.match(tok):
            raise _error(path, i, f"expected a 32-character binary string, got {tok[:40]!r}")
        out.append(int(tok, 2))
    if not out:
        raise _error(path, 1, "file is empty")
    return np.array(out, dtype=np.uint32)


def find_folders(path: str | Path) -> list[FormatFolder]:
    """The format folders under ``path`` (a GPU folder or a single format folder). In a GPU
    folder, every folder named as a format (fp16, bf16, ...) must be a vector folder."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{printable(str(root))}: not a directory")
    if list(root.glob("a_*_*.txt")):
        return [_folder(root, root.resolve().parent)]
    subs = sorted(p for p in root.iterdir() if p.is_dir() and (p.name in FOLDER_FORMATS or list(p.glob("a_*_*.txt"))))
    if not subs:
        raise FileNotFoundError(f"{printable(str(root))}: no vector folder (a_<GPU>_<fmt>.txt) found")
    return [_folder(p, root) for p in subs]


def _folder(path: Path, gpu_folder: Path) -> FormatFolder:
    """A format folder's files: a, b and c, the result files its format records, and any other
    result file it holds (each checked when read: a result that cannot be read is an error), with
    the conventions of its GPU folder (`convention_for`)."""
    a_files = sorted(path.glob("a_*_*.txt"))
    if len(a_files) != 1:
        raise VectorFileError(f"{printable(str(path))}: expected one a_<GPU>_<fmt>.txt file, found {len(a_files)}")
    m = re.fullmatch(r"a_(.+)_([^_]+)\.txt", a_files[0].name)
    if not m or m.group(2) not in FOLDER_FORMATS:
        raise VectorFileError(f"{printable(str(a_files[0]))}: cannot tell GPU and input format from the file name")
    gpu, fmt = m.group(1), m.group(2)
    files = {n: path / f"{n}_{gpu}_{fmt}.txt" for n in ("a", "b")}
    files["c"] = path / f"c_{gpu}_fp32.txt"
    outputs = {tag: path / f"d_{gpu}_{tag}.txt" for tag in OUTPUTS
               if tag in RECORDED_OUTPUTS[fmt] or os.path.lexists(path / f"d_{gpu}_{tag}.txt")}
    for p in (*files.values(), *outputs.values()):
        if not os.path.lexists(p):
            raise VectorFileError(f"{printable(str(p))}: missing")
    convention = convention_for(gpu_folder, gpu)
    for tag in outputs:
        convention.recording(fmt, tag, outputs[tag])
    return FormatFolder(path, gpu, fmt, files["a"], files["b"], files["c"], outputs, convention)


def _to_format(words: np.ndarray, fmt: str, path: Path) -> np.ndarray:
    try:
        return from_binary32(words, fmt)
    except NotRepresentable as e:
        line = e.index // words.shape[-1] + 1 if words.ndim == 2 else e.index + 1
        raise _error(path, line, str(e)) from None


def _same_length(arrays: dict[Path, np.ndarray]) -> int:
    n = min(len(v) for v in arrays.values())
    for p, v in arrays.items():
        if len(v) != n:
            short = min(arrays, key=lambda q: len(arrays[q]))
            raise _error(p, n + 1, f"has {len(v)} lines but {short.name} has {n}")
    return n


def recorded_profile(folder: FormatFolder, tag: str, profile_name: str) -> str:
    """The variant of profile `profile_name` for the instruction family that recorded result file
    `tag` of `folder` (`sm_90a.mma_sync` for the H100's warp-level recordings)."""
    return for_instruction(profile_name, folder.convention.recording(folder.folder_format, tag, folder.outputs[tag]).instruction)


@dataclass(frozen=True)
class RecordedFile:
    """One result file of a format folder as inner products the model takes: raw input codes
    a, b (n, K), the accumulator codes c the GPU used (its recording's c feed applied), the
    recorded results d as accumulator codes, and how the file was recorded."""

    folder: FormatFolder
    tag: str
    in_fmt: str
    acc_fmt: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    d_words: np.ndarray  # the results as the file writes them (binary32 words)
    recording: Recording

    @property
    def path(self) -> Path:
        return self.folder.outputs[self.tag]


def load_folder(folder: FormatFolder) -> list[RecordedFile]:
    """Every result file of a format folder, checked for shape and exactness (VectorFileError
    names the file and line of the first problem)."""
    fmt = FOLDER_FORMATS[folder.folder_format]
    a_words = read_hex_words(folder.a)
    b_words = read_hex_words(folder.b)
    c_words = read_binary_words(folder.c)
    d_words = {tag: read_binary_words(p) for tag, p in folder.outputs.items()}
    _same_length(
        {
            folder.a: a_words,
            folder.b: b_words,
            folder.c: c_words,
            **{folder.outputs[t]: w for t, w in d_words.items()},
        }
    )
    if a_words.shape[1] != b_words.shape[1]:
        raise _error(
            folder.b,
            1,
            f"has {b_words.shape[1]} words per line but {folder.a.name} has {a_words.shape[1]}",
        )
    a_bits = _to_format(a_words, fmt, folder.a)
    b_bits = _to_format(b_words, fmt, folder.b)
    files = []
    for tag, expected in d_words.items():
        acc = OUTPUTS[tag]
        recording = folder.convention.recording(folder.folder_format, tag, folder.outputs[tag])
        if recording.c == "zero":
            c_bits = np.zeros(len(c_words), dtype=np.uint32 if acc == "f32" else np.uint16)
        elif recording.c == "binary16_rne":
            c_bits = f32_to_f16_rne(c_words)
        elif acc == "f16":
            raise VectorFileError(f"{folder.outputs[tag]}: a binary16 result needs c declared binary16_rne or zero")
        else:
            c_bits = c_words
        d_bits = _to_format(expected, "f16", folder.outputs[tag]) if acc == "f16" else expected
        files.append(RecordedFile(folder, tag, fmt, acc, a_bits, b_bits, c_bits, d_bits, expected, recording))
    return files


def check_folder(folder: FormatFolder, profile_name: "str | Profile") -> list[dict]:
    """Compare one format folder's recorded results with the model; one entry per d file. A profile
    given by name is taken in its variant for the instruction that recorded each file; a Profile
    object (a sweep's variant) is used as it is."""
    profile = get_profile(profile_name)
    entries = []
    for rec in load_folder(folder):
        used = for_instruction(profile_name, rec.recording.instruction) if isinstance(profile_name, str) else profile
        d_bits = inner_product(rec.a, rec.b, rec.c, rec.in_fmt, rec.acc_fmt, used)
        actual = to_binary32(d_bits, rec.acc_fmt) if rec.acc_fmt != "f32" else d_bits.astype(np.uint32)
        expected = rec.d_words
        bad = np.nonzero(actual != expected)[0]
        entries.append(
            {
                "file": str(rec.path),
                "format": folder.folder_format,
                "output": rec.tag,
                "recorded_with": rec.recording.instruction,
                "c": rec.recording.c,
                "convention": folder.convention.source,
                "vectors": int(len(expected)),
                "mismatches": int(len(bad)),
                "first_mismatches": [
                    {
                        "line": int(i) + 1,
                        "expected_bits": f"0x{int(expected[i]):08x}",
                        "actual_bits": f"0x{int(actual[i]):08x}",
                    }
                    for i in bad[:MAX_REPORTED]
                ],
            }
        )
    return entries


def check_vectors(path: str | Path, profile_name: str) -> dict:
    """Check every recorded result under ``path`` (GPU folder or format folder) against a profile.

    Returns a JSON-able dict: ``profile``, ``path``, ``vectors`` and ``mismatches`` (totals) and
    ``files`` (one entry per result file: file, format, output, vectors, mismatches and up to
    five ``first_mismatches`` with 1-based line numbers and binary32 bit patterns in hex).
    Malformed files raise :class:`VectorFileError`.
    """
    files = []
    for folder in find_folders(path):
        files.extend(check_folder(folder, profile_name))
    return {
        "profile": get_profile(profile_name).name,
        "path": str(path),
        "vectors": sum(f["vectors"] for f in files),
        "mismatches": sum(f["mismatches"] for f in files),
        "files": files,
    }
