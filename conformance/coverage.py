"""Coverage of a run: Table 39 classes, Hopper programs, and the options of each tcgen05.mma (descriptor modes,
operand sources, qualifiers, predicates) as `name=value` labels over a known universe, so a
report can list what a run never exercised."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from conformance.encoding import idesc as idesc_codec
from conformance.encoding import sdesc as sdesc_codec
from conformance.encoding import taddr as taddr_codec
from conformance.instructions import Tcgen05Mma
from conformance.isa import mma
from conformance.isa.swizzle import SWIZZLE_MODES
from conformance.program import Program


def scale_vec_label(sv: mma.ScaleVector) -> str:
    return f"scale_vec={sv.kind}.{sv.qualifier}{'.k96' if sv.k96 else ''}"


def _universe() -> list[str]:
    labels = [f"kind={k}" for k in mma.KINDS]
    labels += [f"{operand}.swizzle={s}" for operand in ("a", "b") for s in SWIZZLE_MODES]
    labels += [f"{operand}.major={m}" for operand in ("a", "b") for m in ("K", "MN")]
    labels += [f"{operand}.base_offset={b}" for operand in ("a", "b") for b in ("zero", "nonzero")]
    labels += ["a.source=smem", "a.source=tmem", "lbo=absolute", "lbo=relative"]
    labels += [scale_vec_label(sv) for sv in mma.SCALE_VECTORS]
    labels += [f"scale_type={t}" for t in mma.SCALE_TYPE_CODES]
    labels += [f"sf_id={i}" for i in range(4)]
    labels += [f"sparse_selector={i}" for i in range(4)]
    labels += [f"collector={c}" for c in (None, *(f"a::{o}" for o in mma.COLLECTOR_OPS),
                                           *(f"{b}::{o}" for b in mma.COLLECTOR_BUFFERS_WS for o in mma.COLLECTOR_OPS))]
    labels += [f"{flag}={v}" for flag in ("negate_a", "negate_b", "enable_input_d", "saturate", "ashift",
                                          "disable_output_lane", "zero_column_mask", "scale_input_d") for v in (True, False)]
    labels += [f"layout={name}" for name in "ABCDEFG"]
    labels += [f"lane_alignment={a}" for a in (0, 16)]
    return labels


OPTION_UNIVERSE: tuple[str, ...] = tuple(_universe())


def mma_options(op: Tcgen05Mma) -> list[str]:
    """The option labels one tcgen05.mma exercises."""
    d = idesc_codec.decode(op.kind, op.idesc)
    labels = [f"kind={op.kind}", f"a.source={'smem' if op.a_tmem is None else 'tmem'}"]
    for operand, word, transposed in (("a", op.a_desc, d.transpose_a), ("b", op.b_desc, d.transpose_b)):
        if operand == "a" and op.a_tmem is not None:
            continue
        s = sdesc_codec.decode(word)
        labels += [f"{operand}.swizzle={s.swizzle}", f"{operand}.major={'MN' if transposed else 'K'}",
                   f"{operand}.base_offset={'nonzero' if s.base_offset else 'zero'}",
                   f"lbo={'absolute' if s.lbo_absolute else 'relative'}"]
    if op.block_scale:
        sv = mma.scale_vector(op.kind, op.scale_vec, d.k96)
        if sv:
            labels.append(scale_vec_label(sv))
        labels += [f"scale_type={d.scale_type}", f"sf_id={d.sfa_id}", f"sf_id={d.sfb_id}"]
    if d.sparse:
        labels.append(f"sparse_selector={d.sparse_selector}")
    layout = mma.data_path_layout(d.m, op.cta_group, d.sparse, op.ws)
    labels += [f"collector={op.collector}", f"layout={layout.layout}",
               f"lane_alignment={taddr_codec.decode(op.d_tmem)[0] % 32}",
               f"negate_a={d.negate_a}", f"negate_b={d.negate_b}", f"enable_input_d={op.enable_input_d}",
               f"ashift={op.ashift}", f"disable_output_lane={op.disable_output_lane is not None}",
               f"zero_column_mask={op.zero_column_mask is not None}", f"scale_input_d={bool(op.scale_input_d)}"]
    if op.kind == "i8":
        labels.append(f"saturate={d.saturate}")
    return labels


def option_counts(programs: Iterable[Program]) -> Counter:
    return Counter(label for p in programs for op in p.ops if isinstance(op, Tcgen05Mma) for label in mma_options(op))


def option_coverage(programs: Sequence[Program]) -> dict:
    counts = option_counts(programs)
    return {
        "options_total": len(OPTION_UNIVERSE),
        "options_hit": sum(1 for o in OPTION_UNIVERSE if counts[o]),
        "options_missed": [o for o in OPTION_UNIVERSE if not counts[o]],
        "per_option": {o: counts[o] for o in OPTION_UNIVERSE},
    }


def shape_class_of(op: object) -> str | None:
    """The Table 39 class id an instruction exercises, if it is a legal-shaped tcgen05.mma."""
    if not isinstance(op, Tcgen05Mma) or op.kind not in mma.KINDS:
        return None
    d = idesc_codec.decode(op.kind, op.idesc)
    c = mma.shape_class_for(op.kind, op.ws, op.cta_group, op.sparse, d.m, d.k96)
    return c.id if c else None


def coverage(programs: Sequence[Program]) -> dict:
    """Table 39 classes hit, Hopper programs, and the MMA options."""
    per_class = Counter(c for p in programs for c in map(shape_class_of, p.ops) if c)
    hopper = Counter(op.OP for p in programs for op in p.ops if op.OP in ("wgmma.mma_async", "mma.sp"))
    total = [c.id for c in mma.SHAPE_CLASSES]
    return {
        "classes_total": len(total),
        "classes_hit": sum(1 for c in total if per_class[c]),
        "classes_missed": [c for c in total if not per_class[c]],
        "per_class": {c: per_class[c] for c in total},
        "hopper_programs": dict(hopper),
        **option_coverage(programs),
    }
