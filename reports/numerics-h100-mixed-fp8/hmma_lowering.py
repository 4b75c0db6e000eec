"""A-MMA-SP-MIXED-FP8: does warp-level fp8 MMA on sm_90a compute what ptxas lowers it to?

ptxas (nvJitLink 13.5, `sass/`) lowers mma.sync m16n8k32 with fp8 inputs, same-type or mixed, to:
each operand register unpacked to f16 pairs (F2FP.F16.E4M3/E5M2.UNPACK_B, exact: every e4m3 and
e5m2 value is an f16 value), HMMA.16816 over the elements of k % 4 in {0, 1} (the low halves)
from C = 0, HMMA.16816 over k % 4 in {2, 3} accumulating onto that, then C added by FADD (f32)
or HADD2 (f16). This script computes that composition with the model's own f16 datapath of
`sm_90a.mma_sync` and compares it with silicon:

    python3 reports/numerics-h100-mixed-fp8/hmma_lowering.py SAMPLES.npz ...      # kept vectors (numerics measure --samples)
    python3 reports/numerics-h100-mixed-fp8/hmma_lowering.py --gpu --count N       # every vector, on an sm_90 GPU

A second reading stays within the model's datapath parameters: the fitted fp8 datapath of
`sm_90a.mma_sync` (two interleaved groups of 16, RZ, C added after with RNE) applied to the
operands widened to f16 first, which is what F2FP does. Only e4m3's subnormals change: they
become f16 normal numbers, and the alignment exponent of their products falls.

Prints one JSON object: per mma.sync combination, vectors compared, and for each reading how many
differ and, of those, how many are NaN in both results. The composition adds C with numpy, so it
does not model a NaN's payload; the widened reading is the model's own, NaNs included."""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from conformance.core.formats import values  # noqa: E402
from oracles.numerics import inner_product  # noqa: E402
from oracles.numerics.profiles import Profile, get_profile  # noqa: E402

LOW = np.array([k for k in range(32) if k % 4 in (0, 1)])  # the first HMMA's products
HIGH = LOW + 2  # the second's
FLOAT = {"f32": np.float32, "f16": np.float16}


def lowered(a: np.ndarray, b: np.ndarray, c: np.ndarray, a_fmt: str, b_fmt: str, acc: str) -> np.ndarray:
    """Codes of D for fp8 codes a, b [n, 32] and C codes [n] as the lowering computes it."""
    a16, b16 = (values(x.astype(np.uint32), f).astype(np.float16).view(np.uint16) for x, f in ((a, a_fmt), (b, b_fmt)))
    dtype = FLOAT[acc]
    zero = np.zeros(len(a), np.uint32 if acc == "f32" else np.uint16)
    first = inner_product(a16[:, LOW], b16[:, LOW], zero, "f16", acc, "sm_90a.mma_sync")
    second = inner_product(a16[:, HIGH], b16[:, HIGH], first, "f16", acc, "sm_90a.mma_sync")
    with np.errstate(all="ignore"):
        return (second.view(dtype) + c.astype(zero.dtype).view(dtype)).astype(dtype).view(zero.dtype)


def widened(a: np.ndarray, b: np.ndarray, c: np.ndarray, a_fmt: str, b_fmt: str, acc: str) -> np.ndarray:
    """Codes of D: the fitted fp8 datapath of `sm_90a.mma_sync` (A's format's) over the operands
    widened to f16."""
    base = get_profile("sm_90a.mma_sync")
    profile = Profile(name="sm_90a.mma_sync, fp8 widened to f16", description="",
                      datapaths={**base.datapaths, ("f16", acc): base.datapath(a_fmt, acc)})
    a16, b16 = (values(x.astype(np.uint32), f).astype(np.float16).view(np.uint16) for x, f in ((a, a_fmt), (b, b_fmt)))
    return inner_product(a16, b16, c, "f16", acc, profile)


READINGS = {"lowering": lowered, "widened": widened}


def differing(got: np.ndarray, silicon: np.ndarray, acc: str) -> tuple[int, int]:
    """Vectors whose codes differ, and of those the ones where both are NaN."""
    bad = got != silicon.view(got.dtype)
    nan = np.isnan(got.view(FLOAT[acc])) & np.isnan(silicon.view(got.dtype).view(FLOAT[acc]))
    return int(bad.sum()), int((bad & nan).sum())


def formats(cid: str) -> tuple[str, str, str]:
    _, _, inputs, acc = cid.split(".")[:4]
    a_fmt, b_fmt = inputs.split("x") if "x" in inputs else (inputs, inputs)
    return a_fmt, b_fmt, acc


def from_samples(paths: list[str]) -> dict:
    out = {}
    for path in paths:
        data = np.load(path)
        for cid in sorted({k.split("/")[0] for k in data.files if k.startswith("mma.sync.e")}):
            a_fmt, b_fmt, acc = formats(cid)
            a, b, c, silicon = (data[f"{cid}/{x}"] for x in ("a", "b", "c", "silicon"))
            out[cid] = {"file": os.path.basename(path), "vectors": int(silicon.size),
                        "model_mismatches_kept": int(data[f"{cid}/mismatch"].sum())}
            for name, reading in READINGS.items():
                bad, nan = differing(reading(a, b, c, a_fmt, b_fmt, acc), silicon, acc)
                out[cid][name] = {"differ": bad, "both_nan": nan}
    return out


def on_gpu(count: int, seed: int) -> dict:
    from conformance.tools.hopper_gpu import hopper_gpu
    from conformance.tools.numerics_measure import COMBINATIONS, MIXED_FP8, kernel_source, prepare, run_chunk, unpack_d
    from conformance.tools.stages import Stages

    gpu = hopper_gpu("hmma_lowering.py")
    out = {}
    for ci, c in enumerate(x for x in MIXED_FP8 + COMBINATIONS if x.family == "mma.sync" and x.in_fmt in ("e4m3", "e5m2")):
        kernels = {c.id: gpu.load(kernel_source(c), c.arch).get_kernel(c.entry)}
        out[c.id] = {"vectors": 0, **{name: {"differ": 0, "both_nan": 0} for name in READINGS}}
        for i in range(-(-count // (8192 * 16 * 8))):
            chunk = prepare(c, 8192, seed * 1_000_003 + ci * 10_007 + i)
            got = unpack_d(c, run_chunk(gpu, kernels, c, chunk, Stages())).reshape(-1)
            tiles, m, n = chunk["c"].shape
            a = np.broadcast_to(chunk["a"][:, :, None, :], (tiles, m, n, c.k)).reshape(-1, c.k)
            b = np.broadcast_to(chunk["b"][:, None, :, :], (tiles, m, n, c.k)).reshape(-1, c.k)
            out[c.id]["vectors"] += got.size
            for name, reading in READINGS.items():
                d, both = differing(reading(a, b, chunk["c"].reshape(-1), c.in_fmt, c.b_fmt or c.in_fmt, c.acc), got, c.acc)
                out[c.id][name]["differ"] += d
                out[c.id][name]["both_nan"] += both
        print(c.id, out[c.id], file=sys.stderr, flush=True)
    return {"gpu": gpu.name, "driver": gpu.driver, "combinations": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="*")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--count", type=float, default=4e6)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    report = on_gpu(int(args.count), args.seed) if args.gpu else {"combinations": from_samples(args.samples)}
    report["command"] = "python3 reports/numerics-h100-mixed-fp8/hmma_lowering.py " + " ".join(sys.argv[1:])
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
