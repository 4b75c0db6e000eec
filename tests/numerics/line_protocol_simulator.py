"""A numeric simulator speaking the line protocol of docs/numerics.md ("Numeric simulators"): the
numeric model under the profile named on the command line. The tests drive `numerics infer`
through it; it is also the smallest example of the protocol. With a second argument ACC it
refuses (`error ...`) every request whose accumulator is ACC, as a model that cannot produce
that format would.

    python tests/numerics/line_protocol_simulator.py sm_100a [f16]
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, when run as a script

from tcgen05_conformance.oracles.numerics import inner_product  # noqa: E402
from tcgen05_conformance.oracles.numerics.profiles import get_profile  # noqa: E402

PAIRS = ("f16->f32", "f16->f16", "bf16->f32", "tf32->f32", "e4m3->f32", "e4m3->f16", "e5m2->f32", "e5m2->f16")
DTYPES = {"f16": np.uint16, "bf16": np.uint16, "tf32": np.uint32, "e4m3": np.uint8, "e5m2": np.uint8,
          "f32": np.uint32}


def main() -> None:
    profile = get_profile(sys.argv[1])
    refused = sys.argv[2] if len(sys.argv) > 2 else None
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["hello"]:
            reply = f"ok model-{profile.name}"
        elif words == ["pairs"]:
            reply = "pairs " + " ".join(PAIRS)
        elif words[:1] == ["ip"] and len(words) == 6 and words[2] == refused:
            reply = f"error this simulator does not produce {refused}"
        elif words[:1] == ["ip"] and len(words) == 6:
            _, fi, fa, a, b, c = words
            row = lambda text, fmt: np.array([int(x, 16) for x in text.split(",")], DTYPES[fmt])[None]  # noqa: E731
            d = inner_product(row(a, fi), row(b, fi), np.array([int(c, 16)], DTYPES[fa]), fi, fa, profile)[0]
            reply = f"d {int(d):x}"
        elif words == ["sync"]:
            reply = "ok"
        else:
            reply = f"error cannot parse {line.strip()[:40]!r}"
        print(reply, flush=True)


if __name__ == "__main__":
    main()
