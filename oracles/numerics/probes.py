"""Probe vectors that would settle the untested assumptions on B200 silicon.

Each :class:`Probe` is one inner product (inputs as exact Python floats) and the competing
hypotheses it separates, each hypothesis being a :class:`~tcgen05_conformance.oracles.numerics.profiles.Datapath`.
:func:`predictions` runs the model under every hypothesis, so a run of the same vector through
``tcgen05.mma`` on a B200 picks the hypothesis whose prediction matches (or none).

The hypotheses:

* ``recorded`` - the datapath fitted to the recorded B200 mma.sync vectors (``sm_100a``);
* ``recorded-rne`` - the same with round-to-nearest groups (the fp8 -> f32 recordings accept
  either; ``sm_100a`` assumes truncation like the fp16 datapath);
* ``fused32`` - one fused group of all 32 fp8/fp6/fp4 products plus c (F = 25, like the
  fp16 datapath) - what a native 8-bit datapath without the fp16 detour might do;
* ``hopper-wgmma`` - the H100 wgmma fp8 datapath (F = 13, 14-bit truncated result);
* ``exact`` - exact sum, one rounding to nearest.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .convert import from_binary32
from .model import inner_product
from .profiles import EXACT, PROFILES, Datapath, Profile


@dataclass(frozen=True)
class Probe:
    """One probe: formats, inputs (floats, exact in the formats), the question it settles."""

    name: str
    question: str
    in_fmt: str
    acc_fmt: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    c: float
    hypotheses: tuple[str, ...]
    a_scale: tuple[float, ...] | None = None
    b_scale: tuple[float, ...] | None = None
    scale_fmt: str = "ue8m0"


def _pad(xs, k):
    return tuple(xs) + (0.0,) * (k - len(xs))


def hypothesis_datapaths(in_fmt: str, acc_fmt: str) -> dict[str, Datapath]:
    """The competing datapaths for a format pair (see module docstring)."""
    base = PROFILES["sm_100a"].datapath(in_fmt, acc_fmt)
    out = {
        "recorded": base,
        "exact": EXACT,
        "recorded-rne": dataclasses.replace(base, group_rounding="rne"),
    }
    if base.split_ways > 1:
        out["fused32"] = dataclasses.replace(
            base, split_ways=1, split_stride=1, c_entry="first_group"
        )
        out["hopper-wgmma"] = dataclasses.replace(
            base,
            split_ways=1,
            split_stride=1,
            c_entry="first_group",
            align_frac_bits=13,
            group_precision=14 if acc_fmt == "f32" else None,
            group_rounding="rz",
        )
    else:
        out["group32"] = dataclasses.replace(base, k_step=32)
    return out


_G0 = [k for k in range(32) if k % 4 in (0, 1)]  # group 0 of the recorded fp8 datapath
_FP4_A = tuple(6.0 if k in _G0[:15] else 0.5 if k in (_G0[15], 2) else 0.0 for k in range(32))

PROBES: tuple[Probe, ...] = (
    Probe(
        "fp8-interleave",
        "fp8 -> f16: two interleaved fused groups of 16 (k mod 4 in {0,1} / {2,3}) "
        "with a binary16 rounding between them? (1 + 2**-11 + 2**-11, one tiny product per group)",
        "e4m3",
        "f16",
        _pad([1.0, 2.0**-6, 2.0**-6], 32),
        _pad([1.0, 2.0**-5, 2.0**-5], 32),
        0.0,
        ("recorded", "fused32", "exact"),
    ),
    Probe(
        "fp8-c-entry",
        "fp8 -> f32: is c added after the products (own rounding) or aligned with them? "
        "(products cancel to 0, c = 2**-30 far below them)",
        "e4m3",
        "f32",
        _pad([16.0, 16.0], 32),
        _pad([16.0, -16.0], 32),
        2.0**-30,
        ("recorded", "fused32", "hopper-wgmma"),
    ),
    Probe(
        "fp8-alignment",
        "fp8 -> f32: do the two interleaved groups align separately? (256 - 256 in "
        "group 0, 2**-18 alone in group 1)",
        "e4m3",
        "f32",
        _pad([16.0, 16.0, 2.0**-9], 32),
        _pad([16.0, -16.0, 2.0**-9], 32),
        0.0,
        ("recorded", "fused32", "hopper-wgmma", "exact"),
    ),
    Probe(
        "fp8-f32-rounding",
        "fp8 -> f32: is a group sum truncated (RZ) or rounded to nearest? "
        "(256 + 2**-16 + 2**-17 = 256 + 0.75 ulp, all in group 0)",
        "e4m3",
        "f32",
        _pad([16.0, 2.0**-8, 0.0, 0.0, 2.0**-8], 32),
        _pad([16.0, 2.0**-8, 0.0, 0.0, 2.0**-9], 32),
        0.0,
        ("recorded", "recorded-rne", "fused32", "exact"),
    ),
    Probe(
        "fp6-interleave",
        "e3m2 (fp6) -> f16: same interleaved groups as fp8? (8 + 2**-8 + 2**-8)",
        "e3m2",
        "f16",
        _pad([2.0, 0.0625, 0.0625], 32),
        _pad([4.0, 0.0625, 0.0625], 32),
        0.0,
        ("recorded", "fused32", "exact"),
    ),
    Probe(
        "fp4-interleave",
        "e2m1 (fp4) -> f16: same interleaved groups as fp8? (15 x 36 + 0.25 in "
        "group 0, 0.25 in group 1: 540.5 when fused, 540 after two binary16 roundings)",
        "e2m1",
        "f16",
        _FP4_A,
        _FP4_A,
        0.0,
        ("recorded", "fused32", "exact"),
    ),
    Probe(
        "fp4-c-entry",
        "e2m1 (fp4) -> f32: same c handling as fp8? (products cancel, c = 2**-30)",
        "e2m1",
        "f32",
        _pad([6.0, 6.0], 32),
        _pad([6.0, -6.0], 32),
        2.0**-30,
        ("recorded", "fused32", "exact"),
    ),
    Probe(
        "f16-alignment",
        "kind::f16 -> f32: 25 bits below the largest product exponent kept? "
        "(1 - 1 + 2**-26 gives 0 when truncated)",
        "f16",
        "f32",
        _pad([1.0, 1.0, 2.0**-13], 16),
        _pad([1.0, -1.0, 2.0**-13], 16),
        0.0,
        ("recorded", "exact"),
    ),
    Probe(
        "f16-rz",
        "kind::f16 -> f32: is the group result truncated (RZ)? (1 + 2**-24 + 2**-25)",
        "f16",
        "f32",
        _pad([1.0, 2.0**-12, 2.0**-12], 16),
        _pad([1.0, 2.0**-12, 2.0**-13], 16),
        0.0,
        ("recorded", "recorded-rne", "exact"),
    ),
    Probe(
        "scaled-blocks-share-a-group",
        "block scales: are products of differently scaled blocks aligned "
        "together in one fused group? (block 0: 256 - 256; block 1, scale 2**-40: 1 at k=16)",
        "e4m3",
        "f32",
        _pad([16.0, 16.0], 16) + _pad([1.0], 16),
        _pad([16.0, -16.0], 16) + _pad([1.0], 16),
        0.0,
        ("recorded", "exact"),
        a_scale=(1.0, 2.0**-20),
        b_scale=(1.0, 2.0**-20),
    ),
)


def _bits(values, fmt: str) -> np.ndarray:
    return from_binary32(np.array(values, dtype=np.float32).view(np.uint32), fmt)


def predictions(probe: Probe) -> dict[str, int]:
    """Result bit pattern of the probe under each of its hypotheses."""
    dps = hypothesis_datapaths(probe.in_fmt, probe.acc_fmt)
    a = _bits(probe.a, probe.in_fmt)[None, :]
    b = _bits(probe.b, probe.in_fmt)[None, :]
    c = _bits([probe.c], probe.acc_fmt)
    kw = {}
    if probe.a_scale is not None:
        kw = dict(
            a_scale=_bits(probe.a_scale, probe.scale_fmt)[None, :],
            b_scale=_bits(probe.b_scale, probe.scale_fmt)[None, :],
            scale_fmt=probe.scale_fmt,
        )
    out = {}
    for name in probe.hypotheses:
        prof = Profile(name=name, description="probe hypothesis", datapaths={}, default=dps[name])
        out[name] = int(inner_product(a, b, c, probe.in_fmt, probe.acc_fmt, prof, **kw)[0])
    return out


def table() -> list[dict]:
    """All probes with their predictions, JSON-able (`tcgen05-conformance numerics probes`; the table in docs/numerics.md)."""
    rows = []
    for p in PROBES:
        width = 8 if p.acc_fmt == "f32" else 4
        rows.append(
            {
                "name": p.name,
                "question": p.question,
                "in": p.in_fmt,
                "acc": p.acc_fmt,
                "nonzero_a": [(k, x) for k, x in enumerate(p.a) if x],
                "nonzero_b": [(k, x) for k, x in enumerate(p.b) if x],
                "c": p.c,
                "scales": (p.a_scale, p.b_scale) if p.a_scale else None,
                "predictions": {h: f"0x{v:0{width}x}" for h, v in predictions(p).items()},
            }
        )
    return rows

