"""Programs aimed at the value coverpoints (`tcgen05_conformance.core.coverpoints`) that given programs miss.

Each aim draws programs, reproducibly from the seed, until its coverpoints are hit or its attempts
run out; a program is kept only when it hits a coverpoint still missing:

* element, accumulator and scale-factor values, per `.kind`: an MMA whose types are those with
  missing values, its operands cycling through every code of 8-bit and narrower formats and the
  class representatives (`representative_codes`) of wider ones; .kind::i8 accumulators next to
  the s32 limits, with and without .satfinite;
* scale-input-d values and disable-output-lane patterns (the plain form: no .ws, no block scale),
  with D against the end of the allocation;
* zero-column masks with their spans, start counts and column shifts at their limits (.ws);
* tcgen05.ld.red over TMEM holding signed zeros, NaNs and both halves of the integer ranges;
* tcgen05.ld / .st at the first and the last TMEM cells;
* wgmma with each imm-scale-a and imm-scale-b (the Hopper programs the oracle models);
* K = 96 MMAs reading their operands through an absolute leading-dimension address.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

import numpy as np
from hypothesis import strategies as st

from tcgen05_conformance.core import coverpoints as cov
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.formats import FloatFormat, encode_finite, get_format, inf_bits
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.generators.instructions import shape_classes_for_target, tcgen05_mma
from tcgen05_conformance.generators.operand_images import exact_codes
from tcgen05_conformance.generators.programs import TMEM_PLACES, Palette, data_movement_programs, hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples

ATTEMPTS = 12  # programs an aim draws without hitting anything new before it gives up (6 left ld.red.f32.max.all NaN
# missed by generate_programs(200, 0) once its random programs were drawn distinct)
# Coverpoints aimed at more than once (by id prefix): the immediate scales of wgmma, which few
# random Hopper programs carry, and the absolute leading-dimension address, which only K = 96
# rows reach, so that a bug there does not rest on a single case.
# So are the f16 scale-input-d values past 12 (a field one bit short caps them): with distinct random
# programs the mutant capping them (conformance/mutation/mutants.py) rested on one aimed case.
REQUIRED_HITS = {"wgmma.imm-scale-": 2, "mma.desc.": 2, **{f"mma.f16.scale-input-d.{v}": 2 for v in (13, 14, 15)}}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# s32 accumulators next to both limits, so that exact i8 sums pass them (and some stay inside).
S32_NEAR_LIMITS = (INT32_MAX, INT32_MAX - 4096, INT32_MIN, INT32_MIN + 4096, 0, 1, -1)
# tcgen05.ld.red registers: signed zeros and NaNs (f32: every register NaN often enough), both halves of the
# 32-bit integers (.s32 / .u32).
LD_RED_WORDS = {"f32": (0x00000000, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7F800001),
                "s32": (0xFFFFFFFF, 0x00000001, 0x80000000, 0x7FFFFFFF),
                "u32": (0xFFFFFFFF, 0x00000001, 0x80000000, 0x7FFFFFFF)}
DOL_WORDS = {
    "none disabled": lambda n: (0,) * n,
    "all disabled": lambda n: (0xFFFFFFFF,) * n,
    "first lane only": lambda n: (1,) + (0,) * (n - 1),
    "last lane only": lambda n: (0,) * (n - 1) + (0x80000000,),
    cov.DOL_PEER_PATTERN: lambda n: (0,) * (n // 2) + (1,) + (0,) * (n // 2 - 1),
}


def representative_codes(fmt_name: str) -> tuple[int, ...]:
    """Codes of a format that hit its value classes: every code of a format of 8 bits or fewer;
    for a wider float each sign of zero, the smallest and largest subnormal and normal, the
    infinities and a NaN, with its exact small values; for s32 values next to its limits."""
    fmt = get_format(fmt_name)
    if fmt_name == "s32":
        return tuple(int(v) & 0xFFFFFFFF for v in S32_NEAR_LIMITS)
    bits = mma.TYPE_BITS.get(fmt_name, fmt.container_bits)
    if bits <= 8:
        return tuple(cov.SCALE_CODES[fmt_name]) if fmt_name in cov.SCALE_CODES else tuple(range(1 << bits))
    assert isinstance(fmt, FloatFormat)
    hidden = 1 << fmt.frac_bits
    mants = np.array([0, 0, 1, hidden - 1, hidden, fmt.max_mant, hidden, fmt.max_mant])
    signs = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    exps = np.array([fmt.emin] * 5 + [fmt.emax, fmt.emin, fmt.emax])
    codes = encode_finite(signs, mants, exps, fmt).astype(np.uint32).tolist()
    codes += inf_bits(fmt, np.array([0, 1])).astype(np.uint32).tolist()
    codes.append(int(inf_bits(fmt, np.array(0))) | (1 << (fmt.frac_bits - 1 + fmt.field_shift)))
    exact = exact_codes(fmt_name).tolist()[:8]
    ignored = [c | ((1 << fmt.field_shift) - 1) for c in exact[:2]] if fmt.field_shift else []  # tf32's 13 low bits
    return tuple(codes) + tuple(exact) + tuple(ignored)


def value_programs(programs: Sequence[Program], limit: int, seed: int) -> list[Program]:
    """At most `limit` programs aimed at the reachable value coverpoints `programs` miss (or hit
    fewer times than `REQUIRED_HITS` asks), each a program none of `programs` and none of the
    others is (a draw repeating a case id counts as a miss)."""
    needed = {c.id: next((n for prefix, n in REQUIRED_HITS.items() if c.id.startswith(prefix)), 1)
              for c in cov.COVERPOINTS if cov.reachability(c, cov.RUN_TARGETS)[0]}
    for p in programs:
        _count(needed, cov.hits(p))
    aimed: list[Program] = []
    taken = {p.case_id for p in programs}
    for aim in _aims():
        failures = 0
        while failures < ATTEMPTS and len(aimed) < limit:
            strategy = aim(set(needed))
            if strategy is None:
                break
            program = draw_examples(strategy, 1, seed + len(aimed) * 1_009 + failures)[0]
            hit = cov.hits(program)
            if hit & set(needed) and program.case_id not in taken:
                aimed.append(program)
                taken.add(program.case_id)
                _count(needed, hit)
            else:
                failures += 1
    return aimed


def _count(needed: dict[str, int], hit: set[str]) -> None:
    """Take a program's hits off the hits still needed."""
    for point in hit & set(needed):
        needed[point] -= 1
        if not needed[point]:
            del needed[point]


Aim = Callable[[set], "st.SearchStrategy[Program] | None"]


def _aims() -> Iterable[Aim]:
    for kind in mma.KINDS:
        yield lambda missing, kind=kind: _values_aim(kind, missing)
    yield _plain_form_aim
    yield _zcmask_aim
    for red_type in dm.LD_RED_TYPES:
        yield lambda missing, red_type=red_type: _ld_red_aim(red_type, missing)
    for op in ("ld", "st"):
        yield lambda missing, op=op: _ldst_place_aim(op, missing)
    yield _wgmma_scale_aim
    yield _lbo_absolute_aim


def _missing_in(missing: set, prefix: str) -> list[str]:
    return sorted(m for m in missing if m.startswith(prefix))


def _values_aim(kind: str, missing: set) -> st.SearchStrategy[Program] | None:
    """An MMA of `kind` whose A, B, C and scale types are ones with values still missing."""
    want = {part: _missing_in(missing, f"mma.{kind}.{part}.") for part in ("A", "B", "C", "scale_A", "scale_B")}
    saturation = _missing_in(missing, f"mma.{kind}.D.")
    if not any(want.values()) and not saturation:
        return None

    def first_type(part: str) -> str | None:
        return want[part][0].split(".")[3] if want[part] else None

    types = dict(mma.D_TYPES[kind])
    atype = first_type("A") or first_type("B") or next(iter(types.values()))[0]
    btype = (first_type("B") or atype) if kind in mma.MIXED_AB_KINDS else atype
    dtypes = [d for d, allowed in types.items() if atype in allowed and btype in allowed]
    if not dtypes:
        btype = atype
        dtypes = [d for d, allowed in types.items() if atype in allowed]
    dtype = next((d for d in dtypes if first_type("C") == d), dtypes[0])
    fixed: dict = {"dtype": dtype, "atype": atype, "btype": btype}
    scale_type = first_type("scale_A") or first_type("scale_B")
    if scale_type:
        fixed["scale_type"] = scale_type
    if saturation:
        fixed["saturate"] = saturation[0].endswith("satfinite")
    codes = [int(m.split(" ")[-1], 16) for m in want["scale_A"] + want["scale_B"] if scale_type and f".{scale_type}." in m]
    palette = Palette(a=representative_codes(atype), b=representative_codes(btype), c=representative_codes(dtype),
                      scale=tuple(dict.fromkeys(codes)))
    shape_class = _plain_class(kind, k96=False)
    target = _target_for(shape_class)
    return tcgen05_mma(target, shape_class, reach="compact", fixed=fixed).flatmap(
        lambda op: tcgen05_programs(target, shape_class, dataclasses.replace(op, scale_input_d=None), palette))


def _plain_class(kind: str, k96: bool, cta_group: int = 1) -> mma.ShapeClass:
    """The dense, non-.ws class of a kind with the largest M of a CTA group."""
    classes = [c for c in mma.SHAPE_CLASSES if c.kind == kind and not c.ws and not c.sparse
               and c.cta_group == cta_group and (c.k == 96) == k96]
    return max(classes, key=lambda c: c.m)


def _target_for(c: mma.ShapeClass) -> str:
    return next(t for t in TCGEN05_TARGETS if c in shape_classes_for_target(t))


def _legal(target: str) -> Callable[[Tcgen05Mma], bool]:
    return lambda op: not check(op, target)


def _plain_form_aim(missing: set) -> st.SearchStrategy[Program] | None:
    """A plain-form MMA with a missing scale-input-d value and/or disable-output-lane pattern,
    D against the end of the allocation while that edge is missing."""
    sid = sorted(m for m in missing if ".scale-input-d." in m)
    dol = sorted(m for m in missing if ".disable-output-lane." in m)
    if not sid and not dol:
        return None
    kind, value = (sid[0].split(".")[1], int(sid[0].split(".")[-1])) if sid else ("f16", None)
    group = int(dol[0].split(".")[1][3:]) if dol else 1
    pattern = next((d.split(".")[-1] for d in dol if d.startswith(f"mma.cta{group}.")), None)
    shape_class = _plain_class(kind, False, group)
    target = _target_for(shape_class)
    words = DOL_WORDS[pattern](mma.DISABLE_OUTPUT_LANE_WORDS[group]) if pattern else None
    palette = Palette(d_at_edge="tmem.mma.last column" in missing)
    return tcgen05_mma(target, shape_class, reach="compact").map(
        lambda op: dataclasses.replace(op, scale_input_d=value, disable_output_lane=words)).filter(_legal(target)).flatmap(
        lambda op: tcgen05_programs(target, shape_class, op, palette))


def _zcmask_aim(missing: set) -> st.SearchStrategy[Program] | None:
    """A .ws MMA whose zero-column mask has its fields at the limits still missing."""
    limits = sorted(m.split(".")[-1] if "(max)" not in m else m[len("mma.ws.zero-column-mask."):]
                    for m in missing if m.startswith("mma.ws.zero-column-mask."))
    if not limits:
        return None
    value = limits[0]
    m = 32 if value == f"column shift {mma.ZCMASK_MAX_SHIFT[32]} (max)" else 128
    shift = mma.ZCMASK_MAX_SHIFT.get(m, mma.ZCMASK_MAX_SHIFT_DEFAULT)
    masks = {
        "all-zero mask": zcmask_codec.ZeroColumnMask(non_zero_mask=False),
        "skip span 0": zcmask_codec.ZeroColumnMask(skip_span=0, use_span=255, start_counts=(255, 0, 0, 0), column_shift=shift),
        "use span 255": zcmask_codec.ZeroColumnMask(skip_span=0, use_span=255, start_counts=(255, 0, 0, 0), column_shift=shift),
        "start count 255": zcmask_codec.ZeroColumnMask(skip_span=0, use_span=255, start_counts=(255, 0, 0, 0), column_shift=shift),
        "skip span 255": zcmask_codec.ZeroColumnMask(skip_span=255, use_span=0, first_spans=(1, 0, 1, 0), column_shift=0),
        "use span 0": zcmask_codec.ZeroColumnMask(skip_span=255, use_span=0, first_spans=(1, 0, 1, 0), column_shift=0),
        "column shift 0": zcmask_codec.ZeroColumnMask(skip_span=255, use_span=0, first_spans=(1, 0, 1, 0), column_shift=0),
    }
    mask = masks.get(value, zcmask_codec.ZeroColumnMask(skip_span=3, use_span=3, column_shift=shift))
    classes = [c for c in mma.SHAPE_CLASSES if c.ws and c.m == m and not c.sparse and c.kind == "f16"]
    shape_class = classes[0]
    target = _target_for(shape_class)
    word = zcmask_codec.encode(mask)
    return tcgen05_mma(target, shape_class, reach="compact").map(
        lambda op: dataclasses.replace(op, zero_column_mask=word)).filter(_legal(target)).flatmap(
        lambda op: tcgen05_programs(target, shape_class, op))


def _feature_target(feature: str) -> str:
    return next(t for t in TCGEN05_TARGETS if feature in target_named(t).features)


def _ld_red_aim(red_type: str, missing: set) -> st.SearchStrategy[Program] | None:
    if not _missing_in(missing, f"ld.red.{red_type}."):
        return None
    return data_movement_programs(_feature_target("tcgen05.ld.red"), f"tcgen05.ld.red.{red_type}",
                                  tmem_words=LD_RED_WORDS[red_type])


def _ldst_place_aim(op: str, missing: set) -> st.SearchStrategy[Program] | None:
    edges = _missing_in(missing, f"tmem.{op}.")
    if not edges:
        return None
    place = TMEM_PLACES[0] if edges[0].endswith("first column") else TMEM_PLACES[1]
    return data_movement_programs(TCGEN05_TARGETS[0], f"tcgen05.{op}.32x32b", place=place)


def _wgmma_scale_aim(missing: set) -> st.SearchStrategy[Program] | None:
    """A wgmma the oracle models whose immediate scales are the first missing ones."""
    wanted = sorted(m for m in missing if m.startswith("wgmma.imm-scale-"))
    if not wanted:
        return None
    operand, value = wanted[0].split(".")[1], int(wanted[0].split(".")[2])
    field = operand.replace("-", "_")
    return hopper_programs(forms="modelled").filter(
        lambda p: p.ops[0].OP == "wgmma.mma_async" and getattr(p.ops[0], field) == value)


def _lbo_absolute_aim(missing: set) -> st.SearchStrategy[Program] | None:
    """A K = 96 MMA (the rows longer than the two chunks at the start address) whose A or B
    descriptor, as still missing, uses the absolute leading-dimension address."""
    wanted = sorted(m for m in missing if m.startswith("mma.desc."))
    if not wanted:
        return None
    operand = wanted[0].split(".")[2]
    shape_class = next(c for c in mma.SHAPE_CLASSES if c.k == 96 and not c.sparse)
    target = _feature_target("lbo-absolute")
    return tcgen05_mma(target, shape_class, reach="compact").filter(
        lambda op: (op.a_tmem is None or operand == "B")
        and sdesc_codec.decode(op.a_desc if operand == "A" else op.b_desc).lbo_absolute).flatmap(
        lambda op: tcgen05_programs(target, shape_class, op))
