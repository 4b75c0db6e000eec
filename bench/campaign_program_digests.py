"""Digests of every program a campaign draws and of what the host makes of it, to show that a
change to the host stages leaves programs and results byte-identical: run it before and after
the change, then compare the two files.

    python3 bench/campaign_program_digests.py write OUT.json
    python3 bench/campaign_program_digests.py compare BEFORE.json AFTER.json

For seeds and data sets (3, 8), (11, 8), (2024, 8), (5, 32), chunks 0-19 of a 4,000-program run
(16,000 programs): per program its case id (from the observation, the program and `case_id`), a
hash of its JSON, label and meta, judging profile, the reference's observation (state digest,
skip, error, data) and the hash of its kernel text; per kernel form of a chunk, the hashes of the
packed images, control records and registers. Exit status 0 when the two files agree."""

from __future__ import annotations

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.core.program import case_id, dumps  # noqa: E402
from conformance.tools.campaign import Settings, draw_chunk, expected_states  # noqa: E402
from device.hopper_batch import pack  # noqa: E402
from device.ptx.kernels import UnsupportedProgram, hopper_form, hopper_kernel  # noqa: E402

CONFIGS = [(3, 8), (11, 8), (2024, 8), (5, 32)]  # (seed, data sets)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _kernel(p) -> str:
    try:
        return _hash(hopper_kernel(hopper_form(p)).encode())
    except UnsupportedProgram as e:
        return f"unsupported: {e}"


def digests() -> dict:
    out = {}
    for seed, data_sets in CONFIGS:
        settings = Settings(programs=4000, seed=seed, data_sets=data_sets)
        for chunk in range(20):
            inputs, programs = draw_chunk(chunk, settings)
            profiles, observations = expected_states(programs)
            rows = [[o.case_id, p.case_id, case_id(p), _hash(dumps(p).encode()), p.label, repr(p.meta), profile,
                     None if o.state is None else o.state.digest(), o.skip, o.error, repr(o.data), _kernel(p)]
                    for p, profile, o in zip(programs, profiles, observations)]
            forms: dict[str, list[int]] = {}
            for i, (p, o) in enumerate(zip(programs, observations)):
                if o.state is not None and not _kernel(p).startswith("unsupported"):
                    forms.setdefault(hopper_kernel(hopper_form(p)), []).append(i)
            packs = []
            for members in forms.values():
                try:
                    b = pack([programs[i] for i in members])
                    packs.append([members, b.smem_bytes, _hash(b.images.tobytes()), _hash(b.control.tobytes()),
                                  _hash(b.registers.tobytes())])
                except UnsupportedProgram as e:
                    packs.append([members, str(e)])
            out[f"{seed}/{data_sets}/{chunk}"] = {"inputs": inputs, "rows": rows, "packs": packs}
    return out


def compare(before: dict, after: dict) -> int:
    differing = [k for k in before if before[k] != after.get(k)] + [k for k in after if k not in before]
    programs = sum(len(v["rows"]) for v in before.values())
    print(f"{len(before)} chunks, {programs} programs, {len(differing)} differing chunks{': ' if differing else ''}"
          f"{', '.join(differing[:5])}")
    return 1 if differing else 0


def main() -> int:
    if sys.argv[1:2] == ["write"] and len(sys.argv) == 3:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(digests(), f)
        return 0
    if sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        before, after = (json.load(open(path, encoding="utf-8")) for path in sys.argv[2:4])
        return compare(before, after)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
