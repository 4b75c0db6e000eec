"""An example simulator for the `sim:CMD` backend, built on the project's oracle: it speaks the
protocol of docs/simulators.md exactly as a simulator in C, C++ or Rust would (read a request
line, read case.json, compute, write the raw state files, answer one line).

    tcgen05-conformance run --backend 'sim:python examples/sim_adapter/oracle_sim.py'
    tcgen05-conformance run --backend 'sim:python examples/sim_adapter/oracle_sim.py --mutant NAME'

`--mutant NAME` injects one known bug: the run must then fail, naming the first wrong word.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for any Python with numpy / ml_dtypes

from conformance.program import from_json  # noqa: E402
from oracles import smem_operand  # noqa: E402
from oracles.execute import run  # noqa: E402
from oracles.state import NotModelled, UndefinedBehaviour  # noqa: E402


def _swizzle_phase_bits_swapped(addresses, mode, base_offset):
    """smem_operand.swizzle with bits 0 and 1 of the row phase swapped (a plausible decoder bug:
    64B and 128B swizzles permute the wrong 16-byte chunks)."""
    b, m = smem_operand.SWIZZLE_BITS[mode]
    if b < 2:
        return ORIGINAL_SWIZZLE(addresses, mode, base_offset)
    phase = ((addresses >> 7) - base_offset) & ((1 << b) - 1)
    swapped = (phase & ~3) | ((phase & 1) << 1) | ((phase >> 1) & 1)
    return addresses ^ (swapped << m)


ORIGINAL_SWIZZLE = smem_operand.swizzle
LOCAL_MUTANTS = {"swizzle-phase-bits-swapped": (smem_operand, "swizzle", _swizzle_phase_bits_swapped)}


@contextlib.contextmanager
def mutant_applied(name: str | None):
    """The oracle with mutant `name` patched in, for the duration."""
    if name is None:
        yield
        return
    module, attribute, replacement = LOCAL_MUTANTS[name]
    original = getattr(module, attribute)
    setattr(module, attribute, replacement)
    try:
        yield
    finally:
        setattr(module, attribute, original)


def write_state(out: str, layout: dict, state) -> None:
    """Each part of the state as the raw little-endian uint32 file case.json's `state` names."""
    parts = [(layout["tmem"], state.tmem), *zip(layout["loads"], state.loads)]
    if layout["hopper_d"] is not None:
        parts.append((layout["hopper_d"], state.hopper_d))
    for part, words in parts:
        np.asarray(words, dtype="<u4").tofile(os.path.join(out, part["file"]))


def answer(request: dict) -> dict:
    """The answer to one request, after writing the state into request["out"]."""
    case_id = request["case_id"]
    with open(request["case"], encoding="utf-8") as f:
        case = json.load(f)
    try:
        state = run(from_json(case["program"]), case["profile"])
    except NotModelled as e:
        return {"case_id": case_id, "status": "unsupported", "reason": str(e)}
    except (UndefinedBehaviour, ValueError) as e:
        return {"case_id": case_id, "status": "error", "reason": str(e)}
    write_state(request["out"], case["state"], state)
    return {"case_id": case_id, "status": "ok"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutant", choices=sorted(LOCAL_MUTANTS), help="inject this bug into the oracle")
    args = parser.parse_args(argv)
    with mutant_applied(args.mutant):
        for line in sys.stdin:  # one request per line, until the harness closes stdin
            print(json.dumps(answer(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
