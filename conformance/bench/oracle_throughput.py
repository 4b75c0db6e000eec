"""Oracle throughput, the `bench` subcommand: the vectorised inner-product model per format beside
the pure-Python reference, and whole MMAs.

Inner products: for each (profile, input format, accumulator, K) case the vectorised
``inner_product`` runs on a batch of inner products (best of a few repeats, after a warm-up that
builds the decode tables) and the loop-and-Fraction reference (``datapath_reference`` or, for the
exact profile and integers, ``exact_reference``) on up to a few hundred of the same inputs in the
same process, which must agree bit for bit; results are microseconds per inner product and their
ratio. Target: at most 0.5 us per K=16 fp16 inner product on one core.

MMAs: milliseconds per tcgen05.mma of a given shape (best of a few runs on one core); target: at
most 20 ms for a 128x256x16 f16 MMA.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Callable

import numpy as np

from tcgen05_conformance.core.encoding import idesc, sdesc
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa.mma import TYPE_BITS
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.core.program import Program, SmemSegment
from tcgen05_conformance.generators.operand_images import exact_codes, write_bits
from tcgen05_conformance.oracles import mma
from tcgen05_conformance.oracles.numerics import PROFILES, inner_product
from tcgen05_conformance.oracles.numerics.reference import datapath_reference, exact_reference
from tcgen05_conformance.oracles.numerics.sampling import random_bits
from tcgen05_conformance.oracles.state import initial_state

INNER_PRODUCT_CASES = [  # (profile, input, accumulator, K)
    ("sm_100a", "f16", "f32", 16),
    ("sm_100a", "f16", "f16", 16),
    ("sm_100a", "bf16", "f32", 16),
    ("sm_100a", "tf32", "f32", 8),
    ("sm_100a", "e4m3", "f32", 32),
    ("sm_100a", "e4m3", "f16", 32),
    ("sm_100a", "e5m2", "f32", 32),
    ("sm_100a", "e2m1", "f32", 64),
    ("sm_90a", "f16", "f32", 16),
    ("sm_90a", "e4m3", "f32", 32),
    ("sm_100a", "s8", "s32", 32),
    ("exact", "f16", "f32", 16),
]
INNER_PRODUCT_TARGET_US = 0.5

MMA_CASES = [  # (kind, input, accumulator, M, N, profile)
    ("f16", "f16", "f32", 128, 256, "exact"),
    ("f16", "f16", "f32", 128, 256, "sm_100a"),
    ("f8f6f4", "e4m3", "f32", 128, 256, "exact"),
    ("i8", "s8", "s32", 128, 256, "exact"),
]
MMA_TARGET_MS = 20.0
K_OF = {"f16": 16, "f8f6f4": 32, "i8": 32}


def _best_of(repeats: int, run: Callable[[], object], setup: Callable[[], object] = lambda: None) -> float:
    """The shortest of `repeats` timings of `run` in seconds, each after an untimed `setup`."""
    best = float("inf")
    for _ in range(repeats):
        setup()
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _reference(profile: str, fi: str, fo: str, a, b, c) -> Callable[[int], int]:
    """The pure-Python reference for one case: row index -> result bits."""
    if profile == "exact" or fo == "s32":  # integers are exact under every profile
        return lambda i: exact_reference(a[i], b[i], int(c[i]), fi, fo)
    dp = PROFILES[profile].datapath(fi, fo)
    return lambda i: datapath_reference(a[i], b[i], int(c[i]), fi, fo, dp)


def bench_inner_products(batch: int, reference_rows: int, repeats: int, seed: int) -> list[dict]:
    """One row per case of INNER_PRODUCT_CASES: microseconds per inner product, vectorised and reference."""
    rng = np.random.default_rng(seed)
    rows = []
    for profile, fi, fo, k in INNER_PRODUCT_CASES:
        a = random_bits(fi, (batch, k), rng, 4)
        b = random_bits(fi, (batch, k), rng, 4)
        c = random_bits(fo, (batch,), rng, 4)
        inner_product(a[:64], b[:64], c[:64], fi, fo, profile)  # warm-up: decode tables
        t_vec = _best_of(repeats, lambda: inner_product(a, b, c, fi, fo, profile)) / batch
        ref = _reference(profile, fi, fo, a, b, c)
        n_ref = min(reference_rows, batch)
        started = time.perf_counter()
        expected = [ref(i) for i in range(n_ref)]
        t_ref = (time.perf_counter() - started) / n_ref
        got = inner_product(a[:n_ref], b[:n_ref], c[:n_ref], fi, fo, profile)
        rows.append({"profile": profile, "input": fi, "accumulator": fo, "K": k,
                     "vectorised_us": round(t_vec * 1e6, 4), "reference_us": round(t_ref * 1e6, 2),
                     "speedup": round(t_ref / t_vec, 1),
                     "reference_agrees": all(int(g) == int(e) for g, e in zip(got, expected))})
    return rows


def mma_program(kind: str, atype: str, dtype: str, m: int, n: int, seed: int = 0) -> Program:
    """One MMA with both operands K-major and 128B-swizzled in shared memory, exact inputs."""
    rng = np.random.default_rng(seed)
    k = K_OF[kind]
    image = np.zeros(65536, np.uint8)
    descriptors = []
    for start, rows in ((0, m), (32768, n)):
        desc = sdesc.SmemDescriptor(start, 16, 1024, "128B")
        storage = storage_for(TYPE_BITS[atype], False)
        addresses = element_bit_addresses(desc, True, rows, k, storage)
        write_bits(image, addresses, rng.choice(exact_codes(atype), addresses.shape), storage.bits)
        descriptors.append(sdesc.encode(desc))
    d = idesc.InstrDescriptor(m=m, n=n, atype=atype, btype=atype, dtype=dtype)
    op = Tcgen05Mma(kind=kind, idesc=idesc.encode(kind, d), a_desc=descriptors[0], b_desc=descriptors[1])
    return Program(target="sm_100a", ops=(op,), tmem_columns=256, smem=(SmemSegment(0, image.tobytes()),))


def bench_mma(repeats: int) -> dict:
    """Milliseconds per MMA of each case of MMA_CASES, beside the 128x256x16 f16 target."""
    rows = []
    for kind, atype, dtype, m, n, profile in MMA_CASES:
        p = mma_program(kind, atype, dtype, m, n)
        state = None

        def fresh() -> None:
            nonlocal state
            state = initial_state(p)

        seconds = _best_of(repeats, lambda: mma.execute(state, p.ops[0], profile), fresh)
        rows.append({"kind": kind, "input": atype, "accumulator": dtype, "shape": f"{m}x{n}x{K_OF[kind]}",
                     "profile": profile, "ms": round(seconds * 1e3, 2)})
    f16 = rows[0]
    return {"repeats": repeats, "cases": rows,
            "target": {"case": "f16 128x256x16 exact", "limit_ms": MMA_TARGET_MS, "measured_ms": f16["ms"],
                       "met": f16["ms"] <= MMA_TARGET_MS}}


def bench(batch: int = 100_000, reference_rows: int = 300, repeats: int = 3, mma_repeats: int = 5,
          seed: int = 0) -> dict:
    """Both measurements as one JSON-able report: the inner-product cases at the top, MMAs under "mma"."""
    rows = bench_inner_products(batch, reference_rows, repeats, seed)
    f16 = next(r for r in rows if (r["profile"], r["input"], r["accumulator"]) == ("sm_100a", "f16", "f32"))
    return {
        "batch": batch,
        "reference_rows": reference_rows,
        "repeats": repeats,
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()},
        "target": {"case": "sm_100a f16->f32 K=16", "limit_us": INNER_PRODUCT_TARGET_US,
                   "measured_us": f16["vectorised_us"], "met": f16["vectorised_us"] <= INNER_PRODUCT_TARGET_US},
        "cases": rows,
        "mma": bench_mma(mma_repeats),
    }
