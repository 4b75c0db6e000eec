"""The line protocol of `tcgen05-conformance numerics infer` (docs/numerics.md, "Numeric
simulators") in front of the Khattak-Mikaitis MATLAB models run by GNU Octave: requests are
collected until `sync`, answered by one Octave run of khattak_mikaitis.m over the batch, then
`ok`. (Octave reads a pipe in large blocks, so it cannot answer one line at a time.)

    python examples/numeric_simulators/khattak_mikaitis.py MODELS_DIR B200TC

MODELS_DIR is the models/ folder of github.com/north-numerical-computing/MATLAB-tensor-core
(fetched separately; not part of this project); the model is a function there (B200TC, H100TC, ...).
"""

import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).with_suffix(".m")
PAIRS = "f16->f32 f16->f16 bf16->f32 tf32->f32 e4m3->f32 e4m3->f16 e5m2->f32 e5m2->f16"


def answer(batch: list[str], models: str, model: str) -> list[str]:
    """Replies to a batch of `ip` requests, from one Octave run."""
    with tempfile.TemporaryDirectory() as folder:
        requests, replies = Path(folder) / "requests.txt", Path(folder) / "replies.txt"
        requests.write_text("".join(line + "\n" for line in batch))
        run = subprocess.run(["octave-cli", "-q", "--no-init-file", str(SCRIPT), models, model, str(requests), str(replies)],
                             capture_output=True, text=True, cwd=folder)
        lines = replies.read_text().splitlines() if replies.exists() else []
    if len(lines) != len(batch):
        detail = " ".join((run.stderr or run.stdout).split())[:200]
        return [f"error octave answered {len(lines)} of {len(batch)} requests: {detail}"] * len(batch)
    return lines


def main() -> None:
    models, model = sys.argv[1], sys.argv[2]
    batch: list[str] = []
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["hello"]:
            print(f"ok {model} (Khattak-Mikaitis MATLAB model in GNU Octave)", flush=True)
        elif words == ["pairs"]:
            print(f"pairs {PAIRS}", flush=True)
        elif words[:1] == ["ip"]:
            batch.append(line.strip())
        elif words == ["sync"]:
            for reply in answer(batch, models, model):
                print(reply)
            print("ok", flush=True)
            batch = []
        else:
            print(f"error cannot parse {line.strip()[:40]!r}", flush=True)


if __name__ == "__main__":
    main()
