"""MMA-Sim's Hopper models against Hopper silicon (H100 or H200), on the very inner products the project's GPU path ran.

Step 1 (on an H100 or H200, the project's GPU checker):

    tcgen05-conformance numerics measure --checker gpu --count 1e7 --seed 29 --out silicon-measure.json

draws every Hopper combination's operands on the GPU from the operand stream
(generators/numeric_stream.h), runs them through mma.sync and wgmma, and checks every silicon result
against the `sm_90a` profiles (the integer checker, cross-checked with the Python model on a
sample). 0 mismatches there means silicon equals `sm_90a` on every one of those inner products.

Step 2 (on any CPU with the mmasim extra; this script):

    python mmasim_vs_silicon.py --measure silicon-measure.json --out mmasim-vs-silicon.json

regenerates the same inner products on the host (`gpu_checker.tile_vectors`: the stream is
reproducible bit for bit) and runs them through MMA-Sim's Hopper models (WGMMA and MMA, arch
"Hopper") and through the Python model of `sm_90a`: MMA-Sim equal to the model on every one, and the
model equal to silicon on every one (step 1), make MMA-Sim equal to Hopper silicon on those inner
products. MMA-Sim has no Hopper fp8 mma.sync model; those combinations are listed as not modelled.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from tcgen05_conformance.numerics.gpu_checker import tile_vectors
from tcgen05_conformance.numerics.measure import HOPPER_COMBINATIONS
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.peers.mmasim import MmasimUnavailable, _mmasim, mmasim_version, operand_tensor

CHUNK_TILES = 256


def mmasim_op(nv_ptx, c):
    """MMA-Sim's Hopper model of combination `c` (its isa_wgmma.py / isa_mma.py strings), or None."""
    b = c.b_fmt or c.in_fmt
    if c.in_fmt in ("s8", "u8"):
        return None  # MMA-Sim lists no integer wgmma or mma.sync for Hopper (isa_wgmma.py, isa_mma.py)
    if c.family == "wgmma":
        return nv_ptx.WGMMA("Hopper", f"m64n8k{c.k}.{c.acc}.{c.in_fmt}.{b}")
    if c.in_fmt in ("e4m3", "e5m2") or c.acc not in ("f32", "f16"):
        return None  # MMA-Sim lists no fp8 (or integer) mma.sync for Hopper
    return nv_ptx.MMA("Hopper", f"m16n8k{c.k}.{c.acc}.{c.in_fmt}.{b}.{c.acc}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", required=True, help="the report of step 1 (numerics measure --checker gpu --out)")
    parser.add_argument("--out", required=True, help="where this comparison's report goes (JSON)")
    args = parser.parse_args(argv)
    measured = json.loads(open(args.measure, encoding="utf-8").read())
    seed = int(measured["seed"])
    try:
        torch, nv_ptx = _mmasim()
    except MmasimUnavailable as e:
        print(f"mmasim_vs_silicon: {e}", file=sys.stderr)
        return 5
    rows = []
    for entry in measured["combinations"]:
        c = next(x for x in HOPPER_COMBINATIONS if x.id == entry["id"])
        row = {"id": c.id, "silicon_mismatches_vs_sm_90a": entry["mismatches"]}
        op = mmasim_op(nv_ptx, c)
        if op is None:
            rows.append({**row, "mmasim": "not modelled"})
            continue
        m, n = c.tile
        tiles = -(-int(entry["inner_products"]) // (m * n))
        differ, done, t0 = 0, 0, time.perf_counter()
        for lo in range(0, tiles, CHUNK_TILES):
            a, b, cc = tile_vectors(c, seed, np.arange(lo, min(lo + CHUNK_TILES, tiles)))
            ours = checker.model_codes(a, b, cc, c.in_fmt, c.acc, c.profile("sm_90a"), c.saturate, c.b_fmt)
            d = op.dpa(operand_tensor(torch, a, c.in_fmt, "hopper"), operand_tensor(torch, b, c.b_fmt or c.in_fmt, "hopper"),
                       operand_tensor(torch, cc, c.acc, "hopper"))
            theirs = d.view(torch.int32 if c.acc == "f32" else torch.int16).numpy()
            theirs = theirs.view(np.dtype(f"u{theirs.dtype.itemsize}")).astype(np.uint32)
            differ += int((theirs != ours).sum())
            done += len(ours)
        rows.append({**row, "inner_products": done, "mmasim_differs_from_sm_90a": differ,
                     "mmasim_equals_silicon": differ == 0 and entry["mismatches"] == 0,
                     "seconds": round(time.perf_counter() - t0, 1)})
        print(f"{c.id}: {done} inner products, MMA-Sim differs from sm_90a on {differ}, silicon on "
              f"{entry['mismatches']}", file=sys.stderr)
    report = {"seed": seed, "mmasim": mmasim_version(), "measure_report": args.measure, "combinations": rows}
    open(args.out, "w", encoding="utf-8").write(json.dumps(report, indent=1) + "\n")
    return 0 if all(r.get("mmasim_equals_silicon", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
