"""Conformance vectors for simulators: programs with their expected states (the reference's),
as files a simulator reads without Python (schema `tcgen05-conformance/vectors/1`, described
field by field in docs/simulators.md).

    DIR/index.json                        the run: seed, reference, profiles, every case (exported or skipped, why)
    DIR/cases/<case id>/case.json         the program JSON, its PTX and where each part of its state is
    DIR/cases/<case id>/expected/*.bin    the expected state: raw little-endian uint32 arrays

A state is the files `tmem.bin` (every CTA's TMEM image, [ctas, 128, columns]), `ld<i>.bin` (the
registers of the i-th tcgen05.ld, [32 threads, registers]) and `d.bin` (Hopper D, [64, N] or
[16, 8], 16-bit types in the low half of each word), as `case.json` lists them; their shapes
follow from the program (`tcgen05_conformance.core.state.state_shape`). A simulator driven by the
`sim:CMD` backend gets a case.json without an expected state and writes its state in the same files.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Sequence

import numpy as np

from tcgen05_conformance import __version__
from tcgen05_conformance.core import program as program_model
from tcgen05_conformance.core.inputs import InputError, printable, quoted, read_file
from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES
from tcgen05_conformance.core.program import Program, ProgramError, to_json
from tcgen05_conformance.core.state import MachineState, state_shape
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.device.ptx.kernels import ptx_text

SCHEMA = "tcgen05-conformance/vectors/1"
WORD = np.dtype("<u4")
EXPECTED_DIR = "expected"
CASE_FILE = "case.json"
INDEX_FILE = "index.json"


class VectorsError(ValueError):
    """A state file that does not match its case: the message names the file and what is wrong."""


def state_layout(program: Program) -> dict:
    """The `state` object of case.json: file name and shape of each part of the program's state."""
    shape = state_shape(program)
    return {
        "tmem": {"file": "tmem.bin", "shape": list(shape.tmem)},
        "loads": [{"file": f"ld{i}.bin", "shape": list(words), "op": op} for i, (op, words) in enumerate(shape.loads)],
        "hopper_d": None if shape.hopper_d is None else {"file": "d.bin", "shape": list(shape.hopper_d)},
    }


def _parts(layout: dict) -> list[dict]:
    return [layout["tmem"], *layout["loads"], *([layout["hopper_d"]] if layout["hopper_d"] else [])]


def write_state(directory: str, layout: dict, state: MachineState) -> None:
    """The state's arrays as the raw little-endian uint32 files `layout` names, in `directory`."""
    os.makedirs(directory, exist_ok=True)
    arrays = [state.tmem, *state.loads, *([state.hopper_d] if state.hopper_d is not None else [])]
    shapes = [tuple(part["shape"]) for part in _parts(layout)]
    if [np.shape(words) for words in arrays] != shapes:
        raise VectorsError(f"the state's parts have shapes {[np.shape(w) for w in arrays]}, the program's state {shapes}")
    for part, words in zip(_parts(layout), arrays):
        with open(os.path.join(directory, part["file"]), "wb") as f:
            f.write(np.ascontiguousarray(words, dtype=WORD).tobytes())


def read_state(directory: str, layout: dict) -> MachineState:
    """The state in the files `layout` names in `directory`; VectorsError naming a file that is
    missing, not a regular file or of the wrong size (never reading more than the right size)."""
    arrays = []
    for part in _parts(layout):
        path = os.path.join(directory, part["file"])
        shape = tuple(part["shape"])
        size = WORD.itemsize * int(np.prod(shape))
        try:
            data = read_file(path, size, part["file"])
        except InputError as e:
            raise VectorsError(str(e)) from None
        if len(data) != size:
            raise VectorsError(f"{part['file']}: holds {len(data)} bytes, expected {size} "
                               f"(uint32 {'x'.join(map(str, shape))})")
        arrays.append(np.frombuffer(data, dtype=WORD).reshape(shape).astype(np.uint32))
    loads = arrays[1:1 + len(layout["loads"])]
    return MachineState(arrays[0], loads, arrays[-1] if layout["hopper_d"] else None)


def write_case(directory: str, program: Program, profile: str, expected: MachineState | None = None) -> str:
    """`directory`/case.json, and the `expected` state under `directory`/expected when given; the
    case.json path. `profile`: the numeric profile the case is judged by."""
    layout = state_layout(program)
    case = {
        "schema": SCHEMA,
        "case_id": program.case_id,
        "label": program.label,
        "profile": profile,
        "program": to_json(program),
        "state": layout,
        "ptx": dict(zip(("form", "text"), ptx_text(program))),
    }
    if expected is not None:
        write_state(os.path.join(directory, EXPECTED_DIR), layout, expected)
        case.update(expected=EXPECTED_DIR, expected_digest=expected.digest())
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, CASE_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    return path


def load_case(path: str) -> tuple[Program, str | None]:
    """The program in a program file or in a case.json (`export`'s, or the sim backend's), and the
    numeric profile to ask for to judge it as it was (None for a program file): the case's profile
    by name, sm_90a for its instruction-family variant sm_90a.mma_sync, which the judge derives
    again (`tcgen05_conformance.harness.judge.profile_for`). ProgramError naming the file and the JSON path
    of the first problem. Everything the tool writes, `replay` reads."""
    obj = program_model.read(path)
    if not (isinstance(obj, dict) and obj.get("schema") == SCHEMA):
        try:
            return program_model.from_json(obj), None
        except ProgramError as e:
            raise ProgramError(f"{printable(path)}: {e}") from None
    try:
        p = program_model.from_json(obj.get("program"), "$.program")
    except ProgramError as e:
        raise ProgramError(f"{printable(path)}: {e}") from None
    if obj.get("case_id") != p.case_id:
        raise ProgramError(f"{printable(path)}: $.case_id: {quoted(obj.get('case_id'))} is not the id of "
                           f"its program ({p.case_id})")
    profile = obj.get("profile")
    named = profile.split(".")[0] if isinstance(profile, str) else None  # a variant is NAME.FAMILY
    if named in PROFILE_NAMES:
        return p, named
    if isinstance(profile, str) and profile.endswith(".json"):  # a profile file, which the judge loads (or refuses)
        return p, profile
    raise ProgramError(f"{printable(path)}: $.profile: {quoted(profile)} is not one of {', '.join(PROFILE_NAMES)}, "
                       "a variant of one or a profile file (.json)")


def export(programs: Sequence[Program], references: Sequence[Observation], profiles: Sequence[str], out: str,
           run_facts: dict) -> dict:
    """Write every program with its expected state, the reference's observation of it, judged by
    its profile, under `out`, and the index (returned); `run_facts` (command, seed, examples,
    reference, profile asked for) go into the index as they are."""
    entries = []
    for p, expected, profile in zip(programs, references, profiles, strict=True):
        entry = {"case_id": p.case_id, "label": p.label, "profile": profile}
        if expected.state is None:
            entry.update(status="skipped", reason=expected.skip or expected.error)
        else:
            write_case(os.path.join(out, "cases", p.case_id), p, profile, expected.state)
            entry.update(status="exported", case=f"cases/{p.case_id}/{CASE_FILE}")
        entries.append(entry)
    index = {
        "schema": SCHEMA,
        "tool": "tcgen05-conformance",
        "version": __version__,
        **run_facts,
        "profiles": dict(Counter(profiles)),
        "exported": sum(e["status"] == "exported" for e in entries),
        "skipped": sum(e["status"] == "skipped" for e in entries),
        "cases": entries,
    }
    with open(os.path.join(out, INDEX_FILE), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return index
