"""Coverage of a run: Table 39 classes, Hopper programs, and the options of each tcgen05.mma (descriptor modes,
operand sources, qualifiers, predicates) as `name=value` labels over a known universe, so a
report can list what a run never exercised; and heat maps (kind x shape, option x kind, Hopper
instruction x A type, data-movement form x target) counting the cases, and the failing cases, of
each cell. `COVERED_BY` says which heat maps count each instruction type."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Sequence

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import (
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Fence,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05RelinquishAllocPermit,
    Tcgen05Shift,
    Tcgen05St,
    Tcgen05Wait,
    WgmmaMma,
)
from tcgen05_conformance.core.isa import hopper, mma
from tcgen05_conformance.core.isa.swizzle import SWIZZLE_MODES
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.generators.programs import data_movement_forms


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
    labels += [f"layout={name}" for name in mma.DATA_PATH_LAYOUTS]
    labels += [f"lane_alignment={a}" for a in sorted({a for d in mma.DATA_PATH_LAYOUTS.values() for a in d.lane_alignments})]
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


def coverage(programs: Sequence[Program], failing: Collection[str] = ()) -> dict:
    """Table 39 classes hit, Hopper programs, the MMA options, and the heat maps (`failing`: the
    case ids that failed or errored on some backend)."""
    per_class = Counter(c for p in programs for c in map(shape_class_of, p.ops) if c)
    hopper = Counter(op.OP for p in programs for op in p.ops if isinstance(op, (WgmmaMma, MmaSp)))
    total = [c.id for c in mma.SHAPE_CLASSES]
    return {
        "classes_total": len(total),
        "classes_hit": sum(1 for c in total if per_class[c]),
        "classes_missed": [c for c in total if not per_class[c]],
        "per_class": {c: per_class[c] for c in total},
        "hopper_programs": dict(hopper),
        **option_coverage(programs),
        "heat_maps": {name: heat_map(axes, programs, failing) for name, axes in HEAT_MAPS.items()},
    }


# --- heat maps -------------------------------------------------------------------------------


def shape_column(c: mma.ShapeClass) -> str:
    """A Table 39 class's shape family without its kind: .ws, sparsity, cta_group and M; K only
    where the kind and sparsity leave it open (K = 96, sm_103a)."""
    parts = ("ws" if c.ws else None, "sp" if c.sparse else "dense", f"cta{c.cta_group}", f"m{c.m}", "k96" if c.k == 96 else None)
    return ".".join(p for p in parts if p)


_CLASS_CELLS = {(c.kind, shape_column(c)) for c in mma.SHAPE_CLASSES}
SHAPE_COLUMNS: tuple[str, ...] = tuple(
    shape_column(c) for c in sorted({(c.ws, c.sparse, c.cta_group, c.m, c.k == 96): c for c in mma.SHAPE_CLASSES}.values(),
                                    key=lambda c: (c.ws, c.sparse, c.cta_group, c.m, c.k == 96)))


def _class_cells(p: Program) -> set[tuple[str, str]]:
    return {(c.kind, shape_column(c)) for c in map(mma.SHAPE_CLASS_BY_ID.get, map(shape_class_of, p.ops)) if c}


def option_applies(label: str, kind: str) -> bool:
    """Whether an option label can occur with an MMA kind (PTX ISA 9.7.16.10: Table 49 transpose and
    negate, Tables 54/55 scale vectors, sparsity selectors, the .ws and .ashift syntax, the data-path layouts of the
    kind's Table 39 classes); labels not restricted by kind apply to all."""
    name, value = label.split("=", 1)
    vectors = [sv for sv in mma.SCALE_VECTORS if sv.kind == kind]
    layouts = [mma.data_path_layout(c.m, c.cta_group, c.sparse, c.ws) for c in mma.SHAPE_CLASSES if c.kind == kind]
    if name == "kind":
        return value == kind
    if name == "scale_vec":
        return value.startswith(f"{kind}.")
    if name == "scale_type":
        return any(value in sv.scale_types for sv in vectors)
    if name == "sf_id":
        return any(int(value) in sv.sf_ids for sv in vectors)
    if name == "saturate":
        return kind == "i8"
    if name == "sparse_selector":
        return int(value) in mma.SPARSITY_SELECTORS.get(kind, (0,))
    if name in ("a.major", "b.major") and value == "MN":
        return mma.TRANSPOSE_SUPPORTED[kind]
    if name in ("negate_a", "negate_b") and value == "True":
        return mma.NEGATE_SUPPORTED[kind]
    if name == "scale_input_d" and value == "True":
        return kind in mma.SCALE_INPUT_D_KINDS
    if name == "ashift" and value == "True":
        return kind not in mma.BLOCK_SCALED_KINDS
    if name == "collector" and value.startswith("b"):
        return kind in mma.WS_KINDS
    if name == "layout":
        return any(layout.layout == value for layout in layouts)
    if name == "lane_alignment":
        return any(int(value) in layout.lane_alignments for layout in layouts)
    return True


def _option_cells(p: Program) -> set[tuple[str, str]]:
    return {(label, op.kind) for op in p.ops if isinstance(op, Tcgen05Mma) for label in mma_options(op)
            if not label.startswith("kind=")}


HOPPER_ROWS = ("wgmma.mma_async", "wgmma.mma_async.sp", "mma.sp")
HOPPER_A_TYPES: tuple[str, ...] = tuple(dict.fromkeys(
    [t for w in hopper.WGMMA_TYPES.values() for t in w.types] + [t for s in hopper.MMA_SP_SHAPES.values() for t in s.types]))


def hopper_row(op: object) -> str | None:
    """The Hopper heat-map row of an instruction: wgmma dense or sparse, or mma.sp; None for others."""
    if isinstance(op, WgmmaMma):
        return "wgmma.mma_async.sp" if op.sparse else "wgmma.mma_async"
    return "mma.sp" if isinstance(op, MmaSp) else None


def _hopper_applies(row: str, atype: str) -> bool:
    return (hopper.mma_sp_family(atype) if row == "mma.sp" else hopper.wgmma_type_family(atype)) is not None


def _hopper_cells(p: Program) -> set[tuple[str, str]]:
    return {(row, op.atype) for op in p.ops if (row := hopper_row(op))}


DATA_MOVEMENT_FORMS = data_movement_forms()


def _data_movement_applies(form: str, target: str) -> bool:
    feature = DATA_MOVEMENT_FORMS[form][0]
    return not feature or feature in target_named(target).features


def _data_movement_cells(p: Program) -> set[tuple[str, str]]:
    return {(form, p.target) for op in p.ops for form, (_, matches) in DATA_MOVEMENT_FORMS.items() if matches(op)}


@dataclass(frozen=True)
class HeatMapAxes:
    """What one heat map counts: its rows and columns, whether the ISA allows a cell at all, and
    the cells one program exercises."""

    title: str
    row_axis: str
    column_axis: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    applies: Callable[[str, str], bool]
    cells: Callable[[Program], set[tuple[str, str]]]


HEAT_MAPS: dict[str, HeatMapAxes] = {
    "class": HeatMapAxes("tcgen05.mma: kind x shape (Table 39 classes)", "kind", "shape", mma.KINDS, SHAPE_COLUMNS,
                         lambda kind, shape: (kind, shape) in _CLASS_CELLS, _class_cells),
    "option": HeatMapAxes("tcgen05.mma: option x kind", "option", "kind",
                          tuple(o for o in OPTION_UNIVERSE if not o.startswith("kind=")), mma.KINDS, option_applies, _option_cells),
    "hopper": HeatMapAxes("Hopper: instruction x A type", "instruction", "A type", HOPPER_ROWS, HOPPER_A_TYPES,
                          _hopper_applies, _hopper_cells),
    "data_movement": HeatMapAxes("tcgen05 data movement: form x target", "form", "target", tuple(DATA_MOVEMENT_FORMS),
                                 TCGEN05_TARGETS, _data_movement_applies, _data_movement_cells),
}

#: The heat maps that count each instruction type (every type has an entry here or in NOT_COUNTED).
COVERED_BY: dict[type, tuple[str, ...]] = {
    Tcgen05Mma: ("class", "option"),
    Tcgen05Cp: ("data_movement",),
    Tcgen05Ld: ("data_movement",),
    Tcgen05St: ("data_movement",),
    Tcgen05Shift: ("data_movement",),
    WgmmaMma: ("hopper",),
    MmaSp: ("hopper",),
}
#: Instruction types a run's programs never hold: the tcgen05 kernel allocates, synchronises and
#: commits itself (device/ptx/kernels.py); `legality` draws these as single instructions.
NOT_COUNTED = frozenset({Tcgen05Alloc, Tcgen05Dealloc, Tcgen05RelinquishAllocPermit, Tcgen05Wait, Tcgen05Fence, Tcgen05Commit})


def heat_map(axes: HeatMapAxes, programs: Sequence[Program], failing: Collection[str] = ()) -> dict:
    """Per cell: the cases (programs) exercising it at least once, those of them that failed or
    errored on some backend, and whether the ISA allows the cell (a case in a cell the ISA does
    not allow is still counted, so that it shows)."""
    failing = set(failing)
    cases, failed = Counter(), Counter()
    for p in programs:
        cells = axes.cells(p)
        cases.update(cells)
        if failing and p.case_id in failing:  # a case id costs a serialisation: only asked when some case failed
            failed.update(cells)
    return {
        "title": axes.title, "row_axis": axes.row_axis, "column_axis": axes.column_axis,
        "rows": list(axes.rows), "columns": list(axes.columns),
        "cases": [[cases[r, c] for c in axes.columns] for r in axes.rows],
        "failed": [[failed[r, c] for c in axes.columns] for r in axes.rows],
        "applicable": [[axes.applies(r, c) for c in axes.columns] for r in axes.rows],
    }


def instruction_classes(p: Program) -> list[str]:
    """What a program's MMAs are, for a failure listing: Table 39 class ids, and Hopper rows with the A type."""
    labels = []
    for op in p.ops:
        if c := shape_class_of(op):
            labels.append(c)
        elif row := hopper_row(op):
            labels.append(f"{row} {op.atype}")
    return labels
