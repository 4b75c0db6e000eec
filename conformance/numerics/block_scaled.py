"""Block-scaled datapaths, inferred apart from the unscaled ones (`infer_block_scaling`): directed
scaled vectors tell each product scaled on its own from grouped sub-sums of G products, with their
alignment width and grid floor, and `_chosen_scaled` picks the reading every scaling of a kind shares."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tcgen05_conformance.core.formats import get_format
from tcgen05_conformance.generators.numeric_vectors import mix
from tcgen05_conformance.numerics.directed_vectors import Builder
from tcgen05_conformance.numerics.hypotheses import _unsigned
from tcgen05_conformance.numerics.sources import Scaling, VectorSource
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS, Datapath, Profile

#: What a block-scaled datapath is searched over (docs/numerics.md, "Grouped block-scaled
#: accumulation"): the unscaled datapath with each product scaled on its own, or exact sub-sums of
#: G products (`block_group`) aligned at their scales' exponent and fused with c in one group of F
#: bits (MMA-Sim's kind::mxf4), its grid floor searched apart on vectors whose scales reach it.
BLOCK_GROUPS = (8, 16, 32)
BLOCK_ALIGN_BITS = range(20, 41)
BLOCK_FLOORS = (None, *range(-150, -190, -1))


def scaled_kinds(scaling: Scaling) -> tuple[str, ...]:
    """The block-scaled kinds that run a scaling (PTX ISA Tables 54-55): K 32 is kind::mxf8f6f4;
    K 64 with ue8m0 per 32 elements kind::mxf4 or mxf4nvf4; any other K 64 scaling mxf4nvf4."""
    if scaling.k <= 32:
        return ("mxf8f6f4",)
    return ("mxf4", "mxf4nvf4") if (scaling.scale_fmt, scaling.block) == ("ue8m0", 32) else ("mxf4nvf4",)


def _block_scale_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling, n: int, seed: int):
    """Scaled vectors (a, b, c, a_scale, b_scale) that separate the readings: random ones at scales
    2^-20 .. 2^20, and block-separating ones - B - B in block 0 at unit scale, y = 1 in block j scaled
    down by 2^-s (s = 1 .. 40): aligned with the products, y survives only within the alignment width
    of B; in a sub-sum aligned at its scales' exponent, within F bits of the unit scale."""
    k = scaling.k
    rng = np.random.default_rng(seed)
    blocks = k // scaling.block
    a, b, c, _ = mix(in_fmt, acc_fmt, k, n, rng, families=("random_finite", "cancellation", "alignment"))
    lo, hi = (127 - 20, 127 + 20) if scaling.scale_fmt == "ue8m0" else (0x08, 0x78)  # ue4m3: positive normal codes
    sa = rng.integers(lo, hi, (n, blocks)).astype(np.uint8)
    sb = rng.integers(lo, hi, (n, blocks)).astype(np.uint8)
    builder = Builder(in_fmt, acc_fmt, k)
    top = builder.product_exponents[1]
    unit = Builder.code(get_format(scaling.scale_fmt), 1.0)
    rows = []
    for j in range(1, blocks):
        for s_ in range(1, 41):
            down = Builder.code(get_format(scaling.scale_fmt), 2.0 ** -((s_ + 1) // 2))
            down2 = Builder.code(get_format(scaling.scale_fmt), 2.0 ** -(s_ // 2))
            if down is None or down2 is None:
                continue
            if builder.add({0: builder.product(top, 1), 1: builder.product(top, -1), j * scaling.block: builder.product(0, 1)}):
                scales_a = np.full(blocks, unit)
                scales_b = np.full(blocks, unit)
                scales_a[j], scales_b[j] = down, down2
                rows.append((scales_a, scales_b))
    if rows:
        da, db, dc = builder.arrays()
        a, b, c = np.concatenate([a, da]), np.concatenate([b, db]), np.concatenate([c, dc.view(c.dtype)])
        sa = np.concatenate([sa, np.array([r[0] for r in rows], np.uint8)])
        sb = np.concatenate([sb, np.array([r[1] for r in rows], np.uint8)])
    return a, b, c, sa, sb


def _floor_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling):
    """Directed scaled vectors that find the grid floor of a block-scaled datapath, c = 0, ue8m0 scales
    reaching below 2^-149: a term of 2^-149 (the smallest binary32 subnormal) and a negative one of
    -2^x, x from -150 down. A grid above 2^x cuts the negative term and the result is 2^-149; a finer
    one keeps it and the sum truncates to 0. With two blocks the terms sit in blocks 0 and 1 (x down
    to -189); with one, both in block 0 at scale 2^-150, x as low as the format's products reach.
    None for ue4m3 scales (they stop at 2^-9)."""
    if scaling.scale_fmt != "ue8m0":
        return None
    blocks = scaling.k // scaling.block
    builder = Builder(in_fmt, acc_fmt, scaling.k)
    fmt = get_format(scaling.scale_fmt)
    unit = Builder.code(fmt, 1.0)

    def scales(x0: int, x1: int | None):
        sa, sb = np.full(blocks, unit), np.full(blocks, unit)
        for j, x in ((0, x0), (1, x1)):
            if x is not None:
                sa[j], sb[j] = Builder.code(fmt, 2.0 ** (x // 2)), Builder.code(fmt, 2.0 ** (x - x // 2))
        return sa, sb

    rows = []
    if blocks >= 2:
        for x in range(-150, -190, -1):
            if builder.add({0: builder.product(0, 1), scaling.block: builder.product(0, -1)}):
                rows.append(scales(-149, x))
    else:
        low = builder.product_exponents[0]
        for e in range(-1, low - 1, -1):
            if builder.add({0: builder.product(1, 1), 1: builder.product(e, -1)}):
                rows.append(scales(-150, None))
    if not rows:
        return None
    a, b, c = builder.arrays()
    return a, b, c, np.array([r[0] for r in rows], np.uint8), np.array([r[1] for r in rows], np.uint8)


def _sub_sum_vectors(in_fmt: str, acc_fmt: str, scaling: Scaling):
    """Directed scaled vectors that find the sub-sum size G: 1 - 1 in block 0 at scale 2^36 (a
    cancelled sub-sum that still sets the grid to 2^(36 - F)), then in block 1 at unit scale 3 at its
    first position and -1.5 d positions on (d = 4, 12, 20, 28 within the block): one sub-sum of 1.5
    truncates to 0, two of 3 and -1.5 keep 2 on a grid of 2. None without two blocks."""
    blocks = scaling.k // scaling.block
    if blocks < 2:
        return None
    builder = Builder(in_fmt, acc_fmt, scaling.k)
    fmt = get_format(scaling.scale_fmt)
    unit, big = Builder.code(fmt, 1.0), Builder.code(fmt, 2.0 ** 18)
    if big is None:
        return None
    rows = []
    for d in (d for d in (4, 12, 20, 28) if d < scaling.block):
        start = scaling.block
        if builder.add({0: builder.product(0, 1), 1: builder.product(0, -1), start: builder.product(1, 1, 1.5),
                        start + d: builder.product(0, -1, 1.5)}):
            sa, sb = np.full(blocks, unit), np.full(blocks, unit)
            sa[0] = sb[0] = big
            rows.append((sa, sb))
    if not rows:
        return None
    a, b, c = builder.arrays()
    return a, b, c, np.array([r[0] for r in rows], np.uint8), np.array([r[1] for r in rows], np.uint8)


def _scaled_results(dp: Datapath, kind: str, in_fmt: str, acc_fmt: str, scaling: Scaling, vectors) -> np.ndarray:
    a, b, c, sa, sb = vectors
    profile = Profile(name="hypothesis", description="block-scale hypothesis", datapaths={(in_fmt, acc_fmt): dp},
                      scaled_datapaths={(kind, in_fmt, acc_fmt): dp})
    return _unsigned(inner_product(a, b, c, in_fmt, acc_fmt, profile, a_scale=sa, b_scale=sb,
                                   scale_fmt=scaling.scale_fmt, kind=kind))


def infer_block_scaling(source: VectorSource, dp: Datapath, in_fmt: str, acc_fmt: str, scaling: Scaling,
                        n: int, seed: int) -> tuple[list[Datapath], dict]:
    """The block-scaled datapaths of one scaling that reproduce the source's scaled vectors: each
    product scaled on the unscaled datapath `dp` when that fits, else the grouped readings of
    `BLOCK_GROUPS` x `BLOCK_ALIGN_BITS` x `BLOCK_FLOORS` that fit (none: the list is empty), with
    the evidence."""
    kind = scaled_kinds(scaling)[0]
    sets = [v for v in (_block_scale_vectors(in_fmt, acc_fmt, scaling, n, seed), _sub_sum_vectors(in_fmt, acc_fmt, scaling),
                        _floor_vectors(in_fmt, acc_fmt, scaling)) if v is not None]
    observed = [_unsigned(source.evaluate(in_fmt, acc_fmt, a, b, c, a_scale=sa, b_scale=sb, scale_fmt=scaling.scale_fmt))
                for a, b, c, sa, sb in sets]

    def fits(cand: Datapath, which=None) -> bool:
        return all(np.array_equal(_scaled_results(cand, kind, in_fmt, acc_fmt, scaling, v), got)
                   for i, (v, got) in enumerate(zip(sets, observed)) if which is None or i in which)

    per_product = sum(int((_scaled_results(dp, kind, in_fmt, acc_fmt, scaling, v) != got).sum())
                      for v, got in zip(sets, observed))
    evidence = {"scale_fmt": scaling.scale_fmt, "block": scaling.block, "k": scaling.k, "kinds": list(scaled_kinds(scaling)),
                "vectors": int(sum(len(got) for got in observed)), "each_product_scaled_mismatches": per_product}
    floor_set = {len(sets) - 1} if _floor_vectors(in_fmt, acc_fmt, scaling) is not None else set()
    others = set(range(len(sets))) - floor_set
    found = []
    if fits(dp, others):
        found = [c for c in (replace(dp, align_floor=fl) for fl in dict.fromkeys((dp.align_floor, *BLOCK_FLOORS)))
                 if fits(c, floor_set)]
    if found:
        evidence["reading"] = "each product scaled on its own (the unscaled datapath)"
        evidence["fitting"] = [{"block_group": None, "align_frac_bits": dp.align_frac_bits, "align_floor": d.align_floor}
                               for d in found]
        return found, evidence
    for g in (g for g in BLOCK_GROUPS if scaling.block % g == 0):
        for f in BLOCK_ALIGN_BITS:
            cand = replace(dp, k_step=None, split_ways=1, split_stride=1, c_entry="first_group", block_group=g,
                           align_frac_bits=f, align_floor=None)
            if fits(cand, others):
                found += [c for c in (replace(cand, align_floor=fl) for fl in BLOCK_FLOORS) if fits(c, floor_set)]
    evidence["fitting"] = [{"block_group": d.block_group, "align_frac_bits": d.align_frac_bits, "align_floor": d.align_floor}
                           for d in found]
    evidence["reading"] = "grouped sub-sums" if found else "none"
    return found, evidence


def _chosen_scaled(source: VectorSource, kind_fits: dict, evidence: list[dict]) -> tuple[Datapath | None, str]:
    """The first reading every scaling of a kind admits, with its provenance; None when they share none."""
    common = [d for d in kind_fits[0] if all(any(_values(d) == _values(e) for e in fits) for fits in kind_fits[1:])]
    if not common:
        return None, ""
    vectors = sum(e["vectors"] for e in evidence)
    scalings = ", ".join(f"{e['scale_fmt']} block{e['block']} K = {e['k']}" for e in evidence)
    if common[0].block_group is None:
        why = f"inferred from {vectors} scaled vectors of {source.name} ({scalings}): each product scaled on its own"
        return replace(common[0], provenance={**common[0].provenance, "block_group": why}), why
    choice = "the only reading that fits" if len(common) == 1 else f"the first of {len(common)} readings that fit"
    why = (f"inferred from {vectors} scaled vectors of {source.name} ({scalings}): sub-sums of {common[0].block_group} "
           f"products, F = {common[0].align_frac_bits}, floor {common[0].align_floor} ({choice})")
    prov = {**common[0].provenance, **{p: why for p in ("k_step", "split_ways", "split_stride", "c_entry", "block_group",
                                                          "align_frac_bits", "align_floor")}}
    return replace(common[0], provenance=prov), why


def _values(dp: Datapath) -> tuple:
    return tuple(getattr(dp, p) for p in PARAMETERS if p != "instruction")
