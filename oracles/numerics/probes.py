"""Probe vectors that would settle the untested assumptions on B200 silicon.

Each :class:`Probe` is one inner product (inputs as exact Python floats) and the competing
hypotheses it separates, each hypothesis being a :class:`~tcgen05_conformance.oracles.numerics.profiles.Datapath`.
:func:`predictions` runs the model under every hypothesis, so a run of the same vector through
``tcgen05.mma`` on a B200 picks the hypothesis whose prediction matches (or none).

The hypotheses:

* ``tcgen05`` - the adopted tcgen05.mma datapath (``sm_100a``: MMA-Sim's silicon-probed model;
  for fp8/fp6/fp4 one fused group of 32 products plus c, F = 25; for kind::mxf4/mxf4nvf4 exact
  sub-sums of 16 products, scaled, fused with c at F = 35);
* ``recorded`` - the datapath fitted to the recorded B200 mma.sync vectors (``sm_100a.mma_sync``;
  block scales multiply each product);
* ``recorded-rne`` - the same with round-to-nearest groups (the fp8 -> f32 recordings accept
  either; the mma.sync profile assumes truncation like the fp16 datapath);
* ``hopper-wgmma`` - the H100 wgmma fp8 datapath (F = 13, 14-bit truncated result);
* ``group32`` - the fp16/tf32 datapath with a group of 32 products;
* ``per-product`` - kind::mxf4/mxf4nvf4 with every product scaled and aligned on its own in one
  fused group with c at F = 25 (kind::mxf8f6f4's reading carried to K = 64);
* ``exact`` - exact sum, one rounding to nearest.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .convert import from_binary32
from .model import datapath_of, inner_product
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
    kind: str | None = None  # the block-scaled kind (mxf4nvf4 ...): the tcgen05.mma that computes the probe


def _pad(xs, k):
    return tuple(xs) + (0.0,) * (k - len(xs))


def hypothesis_datapaths(in_fmt: str, acc_fmt: str, kind: str | None = None) -> dict[str, Datapath]:
    """The competing datapaths for a format pair, of a block-scaled `kind` when given (see module
    docstring)."""
    tcgen05 = datapath_of(PROFILES["sm_100a"], in_fmt, in_fmt, acc_fmt, kind)
    base = datapath_of(PROFILES["sm_100a.mma_sync"], in_fmt, in_fmt, acc_fmt, kind)
    out = {
        "tcgen05": tcgen05,
        "recorded": base,
        "exact": EXACT,
        "recorded-rne": dataclasses.replace(base, group_rounding="rne"),
    }
    if base.split_ways > 1:
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
    if tcgen05.block_group is not None:
        out["per-product"] = dataclasses.replace(tcgen05, block_group=None, align_frac_bits=25, align_floor=-158)
    return out


def _ladder(small: int, second: float) -> tuple[float, ...]:
    """An fp4 operand of K = 64: 1 and `second` at the start of the other block, 0.5 at the start of
    block `small` (0 or 1)."""
    big = 32 * (1 - small)
    return tuple(1.0 if k == big else second if k == big + 1 else 0.5 if k == 32 * small else 0.0 for k in range(64))


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
        ("recorded", "tcgen05", "exact"),
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
        ("recorded", "tcgen05", "hopper-wgmma"),
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
        ("recorded", "tcgen05", "hopper-wgmma", "exact"),
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
        ("recorded", "recorded-rne", "tcgen05", "exact"),
    ),
    Probe(
        "fp6-interleave",
        "e3m2 (fp6) -> f16: same interleaved groups as fp8? (8 + 2**-8 + 2**-8)",
        "e3m2",
        "f16",
        _pad([2.0, 0.0625, 0.0625], 32),
        _pad([4.0, 0.0625, 0.0625], 32),
        0.0,
        ("recorded", "tcgen05", "exact"),
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
        ("recorded", "tcgen05", "exact"),
    ),
    Probe(
        "fp4-c-entry",
        "e2m1 (fp4) -> f32: same c handling as fp8? (products cancel, c = 2**-30)",
        "e2m1",
        "f32",
        _pad([6.0, 6.0], 32),
        _pad([6.0, -6.0], 32),
        2.0**-30,
        ("recorded", "tcgen05", "exact"),
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
        ("tcgen05", "exact"),
    ),
    Probe(
        "f16-rz",
        "kind::f16 -> f32: is the group result truncated (RZ)? (1 + 2**-24 + 2**-25)",
        "f16",
        "f32",
        _pad([1.0, 2.0**-12, 2.0**-12], 16),
        _pad([1.0, 2.0**-12, 2.0**-13], 16),
        0.0,
        ("tcgen05", "recorded-rne", "exact"),
    ),
    Probe(
        "mxf8f6f4-scaled-c",
        "kind::mxf8f6f4: are the scaled products and c one fused group rounded toward zero? (1 x 1 and "
        "2**-6 x 2**-6 at scale 2**30, c = 96: 2**30 + 2**18 truncated, or + 128 when c is added apart to nearest)",
        "e4m3",
        "f32",
        _pad([1.0, 2.0**-6], 32),
        _pad([1.0, 2.0**-6], 32),
        96.0,
        ("tcgen05", "recorded", "exact"),
        a_scale=(2.0**15,),
        b_scale=(2.0**15,),
        kind="mxf8f6f4",
    ),
    Probe(
        "mxf4-cancelled-group",
        "kind::mxf4: does a 16-product sub-sum that cancels to 0 still align at its scale? (1 - 1 at scale "
        "2**40 in block 1, c = 1 + 2**-10: +0 when it does, c when it does not)",
        "e2m1",
        "f32",
        _pad([1.0, -1.0], 64),
        _pad([1.0, 1.0], 64),
        1.0 + 2.0**-10,
        ("tcgen05", "recorded", "per-product", "exact"),
        a_scale=(2.0**20, 1.0),
        b_scale=(2.0**20, 1.0),
        kind="mxf4",
    ),
    *(
        Probe(
            f"mxf4-gap-{gap}-block{small + 1}",
            f"kind::mxf4 block gap 2**-{gap}: 1 - 1 in block {2 - small} at scale 1, 0.5 x 0.5 in block {small + 1} at "
            f"scale 2**-{gap}: does 2**-{gap + 2} survive alignment with the cancelled pair (35 bits below the scales' "
            "exponent: up to gap 33; products aligned on their own: always)?",
            "e2m1",
            "f32",
            _ladder(small, 1.0),
            _ladder(small, -1.0),
            0.0,
            ("tcgen05", "recorded", "per-product", "exact"),
            a_scale=tuple(2.0 ** -(gap // 2) if j == small else 1.0 for j in range(2)),
            b_scale=tuple(2.0 ** -(gap - gap // 2) if j == small else 1.0 for j in range(2)),
            kind="mxf4",
        )
        for gap in range(20, 41, 2)
        for small in (0, 1)
    ),
)


def _bits(values, fmt: str) -> np.ndarray:
    return from_binary32(np.array(values, dtype=np.float32).view(np.uint32), fmt)


def predictions(probe: Probe) -> dict[str, int]:
    """Result bit pattern of the probe under each of its hypotheses."""
    dps = hypothesis_datapaths(probe.in_fmt, probe.acc_fmt, probe.kind)
    a = _bits(probe.a, probe.in_fmt)[None, :]
    b = _bits(probe.b, probe.in_fmt)[None, :]
    c = _bits([probe.c], probe.acc_fmt)
    kw = {}
    if probe.a_scale is not None:
        kw = dict(
            a_scale=_bits(probe.a_scale, probe.scale_fmt)[None, :],
            b_scale=_bits(probe.b_scale, probe.scale_fmt)[None, :],
            scale_fmt=probe.scale_fmt,
            kind=probe.kind,
        )
    out = {}
    for name in probe.hypotheses:
        scaled = {(probe.kind, probe.in_fmt, probe.acc_fmt): dps[name]} if probe.kind else {}
        prof = Profile(name=name, description="probe hypothesis", datapaths={}, default=dps[name], scaled_datapaths=scaled)
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

