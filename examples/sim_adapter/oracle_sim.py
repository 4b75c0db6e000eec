"""An example simulator for the `sim:CMD` backend, built on the project's oracle: it speaks the
protocol of docs/simulators.md exactly as a simulator in C, C++ or Rust would (read a request
line, read case.json, compute under the profile it names, write the raw state files, answer one
line). It computes; the harness compares its states with the reference's.

    tcgen05-conformance run --backend 'sim:python examples/sim_adapter/oracle_sim.py'
    tcgen05-conformance run --backend 'sim:python examples/sim_adapter/oracle_sim.py --mutant NAME'
    tcgen05-conformance run --reference 'sim:python examples/sim_adapter/oracle_sim.py' --backend hopper

`--mutant NAME` plants one of the realistic bugs of `conformance/mutation/mutants.py` (docs/mutants.md)
in the oracle it computes with: the run must then fail, naming the first wrong word.
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

from tcgen05_conformance.core.program import from_json  # noqa: E402
from tcgen05_conformance.core.state import NotModelled, UndefinedBehaviour  # noqa: E402
from tcgen05_conformance.mutation.mutants import MUTANTS  # noqa: E402
from tcgen05_conformance.oracles.execute import run  # noqa: E402


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
    parser.add_argument("--mutant", choices=sorted(MUTANTS), metavar="NAME", help="plant this bug (conformance/mutation/mutants.py)")
    args = parser.parse_args(argv)
    with MUTANTS[args.mutant].applied() if args.mutant else contextlib.nullcontext():
        for line in sys.stdin:  # one request per line, until the harness closes stdin
            print(json.dumps(answer(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
