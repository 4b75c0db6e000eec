"""Strategies for whole programs: one legal MMA with the shared-memory and TMEM images it reads.

A tcgen05 program lays its TMEM operands out side by side (D, then A, metadata and the scale
factors, with random gaps) in the smallest allocation that holds them, and writes exact inputs at
every element the MMA reads (`tcgen05_conformance.generators.operand_images`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Ld, Tcgen05Mma, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper as hopper_isa
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.fragments import WGMMA_METADATA, mma_sp_fragments, selected_threads
from tcgen05_conformance.core.isa.targets import target as target_named
from tcgen05_conformance.core.layouts.ldst import fragment_cells
from tcgen05_conformance.core.layouts.mma_shape import MmaShape, shape_of
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.core.layouts.tmem import (
    a_element_offsets,
    a_tmem_container_bits,
    meta_positions,
    scale_factor_columns,
    scale_factor_groups,
    scale_factor_positions,
    split_lanes,
)
from tcgen05_conformance.core.legality import check, undefined_behaviour
from tcgen05_conformance.core.memo import frozen, memo
from tcgen05_conformance.core.program import SMEM_BYTES, MatrixImage, Program, SmemSegment, TmemRegion
from tcgen05_conformance.generators import instructions as legal
from tcgen05_conformance.generators import numeric_vectors
from tcgen05_conformance.generators.descriptors import smem_descriptors
from tcgen05_conformance.generators.operand_images import SCALE_CODES, exact_codes, write_bits, write_word_fields


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


@dataclasses.dataclass(frozen=True)
class Palette:
    """The codes a program aimed at value coverpoints (`tcgen05_conformance.core.coverpoints`) writes instead
    of exact inputs: each operand given here cycles through a shuffle of its codes, so an operand
    with at least as many elements holds every one; `d_at_edge` places D against the end of the
    allocation."""

    a: tuple[int, ...] = ()
    b: tuple[int, ...] = ()
    c: tuple[int, ...] = ()
    scale: tuple[int, ...] = ()
    d_at_edge: bool = False


def _codes(rng: np.random.Generator, palette: tuple[int, ...], shape: tuple[int, ...], exact: np.ndarray | None) -> np.ndarray:
    """`shape` codes: the palette's in a shuffled cycle, or exact ones drawn from `exact`."""
    if palette:
        return np.resize(rng.permutation(np.array(palette, dtype=np.uint32)), shape)
    return rng.choice(exact, shape)


@dataclasses.dataclass
class _Images:
    smem: list[np.ndarray]  # per CTA, uint8
    tmem: np.ndarray  # uint32 [ctas, 128, columns]


def _smem_operand(images: _Images, rng: np.random.Generator, cta: int, desc: int, k_major: bool, rows: int, k: int,
                  type_name: str, padded: bool, variant: str = "tcgen05", codes: np.ndarray | None = None) -> None:
    """Write an operand's `rows` x `k` element codes (`codes`, or exact values drawn here) where
    its descriptor places them, growing the CTA's image (with random filler) as needed."""
    storage = storage_for(mma.TYPE_BITS[type_name], padded)
    addresses = element_bit_addresses(sdesc_codec.decode(desc, variant), k_major, rows, k, storage)
    end = _round16(int(addresses.max()) // 8 + 1)
    image = images.smem[cta]
    if end > image.size:
        grown = rng.integers(0, 256, end, dtype=np.uint8)
        grown[:image.size] = image
        images.smem[cta] = image = grown
    if codes is None:
        codes = rng.choice(exact_codes(type_name), addresses.shape)
    write_bits(image, addresses, codes, storage.bits)


def _tmem_plan(draw, op: Tcgen05Mma, s: MmaShape, d_at_edge: bool = False) -> tuple[Tcgen05Mma, int]:
    """The MMA with its TMEM operands placed side by side, and the allocation that holds them;
    with `d_at_edge`, D comes last and ends at the allocation's last column."""
    d = s.d
    lane0 = taddr_codec.decode(op.d_tmem)[0]
    widths = {"d_tmem": d.n // s.dp.splits}
    if op.a_tmem is not None:
        container = a_tmem_container_bits(s.kind, mma.TYPE_BITS[d.atype])
        widths["a_tmem"] = -(-s.k_stored * container // 32)
    if d.sparse:
        _, columns, _ = meta_positions(s.dp, s.kind, s.k, lane0, 0, d.sparse_selector)
        widths["sp_meta_tmem"] = int(columns.max()) + 1
    if op.block_scale:
        sv = mma.scale_vector(op.kind, op.scale_vec, d.k96)
        width = d.n // s.dp.splits
        widths["scale_a_tmem"] = scale_factor_columns(s.dp.rows, sv.factors, d.sfa_id, scale_factor_groups("A", s.dp.rows, s.dp.splits, d.k96)) + 1
        widths["scale_b_tmem"] = scale_factor_columns(width, sv.factors, d.sfb_id, scale_factor_groups("B", d.n, s.dp.splits, d.k96)) + 1
    if d_at_edge:
        widths["d_tmem"] = widths.pop("d_tmem")
    column, placed = 0, {}
    for name, width in widths.items():
        column += draw(st.integers(0, 4))
        lane = 0 if name.startswith("scale") else lane0
        placed[name] = taddr_codec.encode(lane, column)
        column += width
    allocation = next(c for c in dm.ALLOC_COLUMN_COUNTS if c >= column)
    if d_at_edge:
        placed["d_tmem"] = taddr_codec.encode(lane0, allocation - widths["d_tmem"])
    return dataclasses.replace(op, **placed), allocation


def _tmem_operands(images: _Images, rng: np.random.Generator, op: Tcgen05Mma, s: MmaShape, palette: Palette) -> None:
    d = s.d
    for cta in range(op.cta_group):
        tmem = images.tmem[cta]
        if op.a_tmem is not None:
            lane0, col0 = taddr_codec.decode(op.a_tmem)
            bits = mma.TYPE_BITS[d.atype]
            container = a_tmem_container_bits(s.kind, bits)
            lanes = split_lanes(s.dp, lane0)[..., None].repeat(s.k_stored, -1)
            columns, offsets = a_element_offsets(s.k_stored, container, bits)
            # the same A in every split (2x2 and 1x4 data paths read their own lanes)
            codes = np.broadcast_to(_codes(rng, palette.a, (s.dp.rows, s.k_stored), exact_codes(d.atype)), lanes.shape)
            write_word_fields(tmem, lanes, np.broadcast_to(col0 + columns, lanes.shape), np.broadcast_to(offsets, lanes.shape),
                              codes, bits)
        if d.sparse:
            lane0, col0 = taddr_codec.decode(op.sp_meta_tmem)
            lanes, columns, offsets = meta_positions(s.dp, s.kind, s.k, lane0, col0, d.sparse_selector)
            values = mma.SPARSITY_METADATA_VALUES[mma.SPARSITY_GRANULARITY[s.kind]]
            codes = np.broadcast_to(rng.choice(values, lanes.shape[1:]), lanes.shape)
            write_word_fields(tmem, lanes, columns, offsets, codes, 4)
        if op.block_scale:
            _scale_factors(tmem, rng, op, s, palette.scale)


def _scale_factors(tmem: np.ndarray, rng: np.random.Generator, op: Tcgen05Mma, s: MmaShape, palette: tuple[int, ...]) -> None:
    """Scale factors duplicated into every 32-lane partition (9.7.16.10.7); for B in the 2x2 data
    path each column half in the partitions of its lanes."""
    d = s.d
    sv = mma.scale_vector(op.kind, op.scale_vec, d.k96)
    codes_of = SCALE_CODES[d.scale_type or "ue8m0"]
    width = d.n // s.dp.splits
    for address, sf_id, count, local in ((op.scale_a_tmem, d.sfa_id, s.dp.rows, False), (op.scale_b_tmem, d.sfb_id, d.n, True)):
        col0 = taddr_codec.decode(address)[1]
        factors = _codes(rng, palette, (count, sv.factors), codes_of)
        groups = scale_factor_groups("B" if local else "A", count, s.dp.splits, d.k96)
        for p in range(4):
            split = p * s.dp.splits // 4 if local else 0
            index = np.arange(width if local else count)
            lanes, columns, offsets = scale_factor_positions(np.full(index.shape, p), index, col0, sv.factors, sf_id, groups)
            values = factors[split * width + index] if local else factors
            write_word_fields(tmem, lanes, columns, offsets, values, 8)


@st.composite
def tcgen05_programs(draw, target: str, shape_class: mma.ShapeClass | None = None,
                     mma_op: Tcgen05Mma | None = None, palette: Palette = Palette()) -> Program:
    """A tcgen05 program: one legal MMA of a Table 39 class (drawn, or `mma_op` as drawn by
    `tcgen05_conformance.generators.instructions.tcgen05_mma(target, shape_class, reach="compact")`) with the data it
    reads: exact inputs, or the `palette`'s codes."""
    c = shape_class or draw(st.sampled_from(legal.shape_classes_for_target(target)))
    op = mma_op or draw(legal.tcgen05_mma(target, c, reach="compact"))
    s = shape_of(op)
    op, allocation = _tmem_plan(draw, op, s, palette.d_at_edge)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ctas = c.cta_group
    images = _Images([np.zeros(0, np.uint8) for _ in range(ctas)],
                     _codes(rng, palette.c, (ctas, dm.TMEM_LANES, allocation), exact_codes(s.d.dtype, accumulator=True)).astype(np.uint32))
    shift = zcmask_codec.decode(op.zero_column_mask).column_shift if op.zero_column_mask is not None else 0
    padded = c.kind in mma.PADDED_NARROW_KINDS
    for cta in range(ctas):
        if op.a_tmem is None:
            _smem_operand(images, rng, cta, op.a_desc, not s.d.transpose_a, s.dp.rows, s.k_stored, s.d.atype, padded,
                          codes=_codes(rng, palette.a, (s.dp.rows, s.k_stored), exact_codes(s.d.atype)) if palette.a else None)
        b_rows = s.d.n // ctas + shift
        _smem_operand(images, rng, cta, op.b_desc, not s.d.transpose_b, b_rows, s.k, s.d.btype, padded,
                      codes=_codes(rng, palette.b, (b_rows, s.k), exact_codes(s.d.btype)) if palette.b else None)
    _tmem_operands(images, rng, op, s, palette)
    if max(image.size for image in images.smem) > SMEM_BYTES:
        reject()
    return Program(
        target=target, ops=(op,), ctas=ctas, tmem_columns=allocation,
        smem=tuple(SmemSegment(0, image.tobytes(), cta) for cta, image in enumerate(images.smem)),
        tmem=tuple(TmemRegion(0, 0, dm.TMEM_LANES, allocation, images.tmem[cta].astype("<u4").tobytes(), cta)
                   for cta in range(ctas)),
        label=c.id, meta={"class": c.id},
    )


INPUTS = ("exact", "discriminating")


def _discriminating_operands(rng: np.random.Generator, op: WgmmaMma | MmaSp, k: int, m: int, n: int,
                             count: int = 1) -> list[dict[str, np.ndarray]]:
    """`count` sets of A (m x K), B (n x K) and C (m x n) codes from the discriminating vector
    families, drawn in one call of `mix`: in each set, row i of A, row i of B and C[i, :] come
    from one vector, so D[i, i] is a designed inner product and the other elements cross vectors
    (`tcgen05_conformance.generators.numeric_vectors.mix`)."""
    pair = op.atype if op.atype == op.btype else (op.atype, op.btype)
    rows = max(m, n)
    a, b, c, _ = numeric_vectors.mix(pair, op.dtype, k, rows * count, rng)
    order = rng.permutation(rows * count)  # every family reaches the diagonal whatever N is
    a, b, c = a[order], b[order], c[order]
    as_words = lambda x: x.astype(np.int64).astype(np.uint32) & np.uint32((1 << (8 * x.dtype.itemsize)) - 1)  # noqa: E731
    sets = []
    for lo in range(0, rows * count, rows):
        a_set, b_set, c_set = a[lo:lo + rows], b[lo:lo + rows], c[lo:lo + rows]
        sets.append({"a": as_words(a_set[:m]), "b": as_words(b_set[:n]), "c": np.repeat(as_words(c_set[:m])[:, None], n, axis=1)})
    return sets


#: Metadata nibbles of 2:4 sparsity with the two indices in increasing order (the six patterns of
#: two of four; PTX ISA 9.7.15.5.1) and of tf32's 1:2 sparsity (0b0100 first, 0b1110 second element).
METADATA_NIBBLES = {16: (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110), 32: (0b0100, 0b1110)}


# A few metadata fragments, the same for every sparse program of a form.
@memo(maxsize=64)
def metadata_packing(fragment, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each thread's metadata values lie in the rows x K fields, as flat indices [threads,
    values], and each value's weight in its word (1 << its bit offset, int64 [values]): a thread's
    word is its fields at those cells times the weights (the fields do not overlap). Read-only."""
    rows, cols = fragment.elements()
    offsets = 32 // fragment.value_count * np.arange(fragment.value_count, dtype=np.int64)
    return frozen(rows * k + cols), frozen(np.int64(1) << offsets)


def _sparse_metadata(rng: np.random.Generator, fragment, bits: int, k: int, selector: int) -> tuple[np.ndarray, np.ndarray]:
    """Each thread's metadata word for a sparse MMA whose metadata register layout is `fragment`
    (rows x K logical columns), and the logical column of every stored A element [rows, K / 2]
    it encodes. The threads the selector reads hold random valid nibbles; the others hold random
    words the instruction must ignore."""
    m = fragment.rows
    nibbles = rng.choice(METADATA_NIBBLES[32 if bits == 32 else 16], (m, k // (2 if bits == 32 else 4)))
    if bits == 32:  # 2 bits per logical tf32 element
        fields = np.stack([nibbles & 3, nibbles >> 2], axis=-1).reshape(m, k)
        positions = 2 * np.arange(k // 2) + ((nibbles & 3) >> 1)
    else:  # 1 bit per logical element
        fields = ((nibbles[..., None] >> np.arange(4)) & 1).reshape(m, k)
        pairs = np.stack([nibbles & 3, nibbles >> 2], axis=-1)
        positions = (4 * np.arange(k // 4)[:, None] + pairs).reshape(m, k // 2)
    cells, weights = metadata_packing(fragment, k)
    words = (fields.reshape(-1)[cells] @ weights).astype(np.uint32)
    ignored = ~selected_threads(fragment, selector)
    words[ignored] = rng.integers(0, 2**32, int(ignored.sum()), dtype=np.uint32)
    return words, positions


def _matrix(name: str, codes: np.ndarray) -> MatrixImage:
    return MatrixImage(name, codes.shape[0], codes.shape[1], codes.astype("<u4").tobytes())


def _operand_codes(rng: np.random.Generator, op: WgmmaMma | MmaSp, inputs: str, m: int, n: int, k_stored: int,
                   count: int = 1) -> list[dict]:
    """`count` sets of A (m x stored K; None to let the image writer draw it), B (n x K) and C codes."""
    if inputs == "exact":
        return [{"a": rng.choice(exact_codes(op.atype), (m, k_stored)), "b": rng.choice(exact_codes(op.btype), (n, op.k)),
                 "c": rng.choice(exact_codes(op.dtype, accumulator=True), (m, n))} for _ in range(count)]
    return _discriminating_operands(rng, op, op.k, m, n, count)


def _compressed(codes: dict, rng: np.random.Generator, fragment, op, inputs: str) -> MatrixImage:
    """Draw the sparsity metadata; discriminating A keeps its designed elements at the chosen
    positions (exact A is drawn compressed). Returns the metadata matrix ("e")."""
    bits = mma.TYPE_BITS[op.atype]
    e, positions = _sparse_metadata(rng, fragment, bits, op.k, op.sparse_selector)
    if inputs != "exact":
        codes["a"] = np.take_along_axis(codes["a"], positions, axis=1)
    return _matrix("e", e[:, None])


def _hopper_op(draw, target: str, forms: str) -> WgmmaMma | MmaSp:
    """A wgmma or mma.sp instruction of `forms` (see `hopper_programs`)."""
    return draw(_hopper_ops(target, forms))


# One strategy per target and forms, built once: Hypothesis validates a strategy object the first
# time it is drawn from, which cost as much as the draw itself when every instruction built its own.
@functools.lru_cache(maxsize=16)
def _hopper_ops(target: str, forms: str) -> st.SearchStrategy[WgmmaMma | MmaSp]:
    if forms == "modelled":
        return st.one_of(legal.wgmma(target, reach="compact", sparse=False),
                         legal.wgmma(target, reach="compact", sparse=True, a_in_registers=False),
                         legal.mma_sp(target).filter(lambda o: hopper_isa.mma_sp_family(o.atype) != "i4"))
    return st.one_of(legal.wgmma(target, reach="compact"), legal.mma_sp(target))


def hopper_instructions(target: str = "sm_90a", forms: str = "any") -> st.SearchStrategy[WgmmaMma | MmaSp]:
    """The instructions `hopper_programs` draws (see there for `forms`), without operand data."""
    return _hopper_ops(target, forms)


@st.composite
def hopper_programs(draw, target: str = "sm_90a", inputs: str = "exact", forms: str = "any") -> Program:
    """A wgmma (operands in shared memory with its image, the register operands as matrices) or an
    mma.sp program (every operand a matrix). `inputs`: "exact" (small exactly summable values,
    profile exact) or "discriminating" (`tcgen05_conformance.generators.numeric_vectors` families, NaN/Inf/subnormals
    included, profile sm_90a). `forms`: "any", or "modelled" (what the oracle computes: wgmma,
    dense with A in shared memory or registers, or sparse with A in shared memory; mma.sp but for
    4-bit integers)."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}, not {inputs!r}")
    op = _hopper_op(draw, target, forms)
    return hopper_data_sets(op, draw(st.integers(0, 2**32 - 1)), target, inputs, 1)[0]


@st.composite
def hopper_program_sets(draw, target: str = "sm_90a", inputs: str = "exact", forms: str = "any",
                        data_sets: int = 1) -> list[Program]:
    """`data_sets` programs of one drawn instruction (as `hopper_programs` draws it: its form,
    descriptors and layouts), each with operand data of its own (`hopper_data_sets`)."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}, not {inputs!r}")
    op = _hopper_op(draw, target, forms)
    return hopper_data_sets(op, draw(st.integers(0, 2**32 - 1)), target, inputs, data_sets)


def hopper_data_sets(op: WgmmaMma | MmaSp, seed: int, target: str, inputs: str, count: int) -> list[Program]:
    """`count` programs of the instruction `op`, the operand data of each drawn from a generator
    seeded with `seed` (discriminating vectors for all of them in one call, the fixed cost of
    which dominates at one program's size); one program when the instruction takes no operand
    data (mma.sp with 4-bit integers). One set gives `hopper_programs`' program."""
    rng = np.random.default_rng(seed)
    profile = "exact" if inputs == "exact" else "sm_90a"
    if isinstance(op, MmaSp):
        if hopper_isa.mma_sp_family(op.atype) == "i4":  # no exact-code table for 4-bit integers: no operands
            return [Program(target=target, ops=(op,), profile=profile, label=op.OP)]
        fragment = mma_sp_fragments(mma.TYPE_BITS[op.atype], op.k).metadata
        programs = []
        for codes in _operand_codes(rng, op, inputs, 16, 8, op.k // 2, count):
            e = _compressed(codes, rng, fragment, op, inputs)
            matrices = (_matrix("a", codes["a"]), _matrix("b", codes["b"]), _matrix("c", codes["c"]), e)
            programs.append(Program(target=target, ops=(op,), profile=profile, matrices=matrices, label=op.OP))
        return programs
    k = hopper_isa.WGMMA_TYPES[hopper_isa.wgmma_type_family(op.atype)].k_dense  # stored A columns
    programs = []
    for codes in _operand_codes(rng, op, inputs, hopper_isa.WGMMA_M, op.n, k, count):
        images = _Images([np.zeros(16, np.uint8)], np.zeros((1, 0, 0), np.uint32))
        matrices = ()
        if op.sparse:
            matrices += (_compressed(codes, rng, WGMMA_METADATA[mma.TYPE_BITS[op.atype]], op, inputs),)
        if op.a_in_registers:
            matrices += (_matrix("a", codes["a"]),)
        else:
            _smem_operand(images, rng, 0, op.a_desc, not op.imm_trans_a, hopper_isa.WGMMA_M, k, op.atype, False, "sm90", codes["a"])
        _smem_operand(images, rng, 0, op.b_desc, not op.imm_trans_b, op.n, op.k, op.btype, False, "sm90", codes["b"])
        matrices += (_matrix("c", codes["c"]),)
        programs.append(Program(target=target, ops=(op,), profile=profile, smem=(SmemSegment(0, images.smem[0].tobytes()),),
                                matrices=matrices, label=op.OP))
    return programs


DATA_MOVEMENT_SMEM_BYTES = 32 * 1024  # the shared-memory image a data-movement program's tcgen05.cp reads from


def data_movement_forms() -> dict[str, tuple[str, Callable]]:
    """Every data-movement form a run covers, by label: (feature it needs, predicate on an
    instruction): each tcgen05.cp shape and multicast and decompression source format (PTX ISA
    9.7.16.9.1-2), each tcgen05.ld and .st shape (9.7.16.8), each .ld.red type (9.7.16.8.3), and
    tcgen05.shift (9.7.16.9.3)."""
    forms: dict[str, tuple[str, Callable]] = {}
    for shape in dm.CP_SHAPES.values():
        for multicast in shape.multicasts:
            label = f"tcgen05.cp.{shape.name}" + (f".{multicast}" if multicast else "")
            forms[label] = ("", lambda op, s=shape.name, m=multicast: op.OP == "tcgen05.cp" and op.shape == s and op.multicast == m)
    for fmt in dm.CP_DECOMPRESS:
        forms[f"tcgen05.cp.{fmt}"] = ("", lambda op, f=fmt: op.OP == "tcgen05.cp" and op.src_fmt == f)
    for name in dm.LDST_SHAPES:
        for which in ("ld", "st"):
            forms[f"tcgen05.{which}.{name}"] = ("", lambda op, w=which, s=name: op.OP == f"tcgen05.{w}" and op.shape == s
                                                and getattr(op, "red_op", None) is None)
    for red_type in dm.LD_RED_TYPES:
        forms[f"tcgen05.ld.red.{red_type}"] = ("tcgen05.ld.red", lambda op, t=red_type: op.OP == "tcgen05.ld" and op.red_op is not None
                                               and op.red_type == t)
    forms["tcgen05.shift"] = ("tcgen05.shift", lambda op: op.OP == "tcgen05.shift")
    return forms


TMEM_PLACES = ("start", "end")


def _placed(op: Tcgen05Ld | Tcgen05St, place: str) -> Tcgen05Ld | Tcgen05St:
    """The ld/st moved to lane 0 and column 0 ("start"), or to the last lane quarter with its last
    cell in the allocation's last column ("end")."""
    if place == "start":
        return dataclasses.replace(op, taddr=taddr_codec.encode(0, 0))
    packed = op.pack if isinstance(op, Tcgen05Ld) else op.unpack
    _, columns = fragment_cells(op.shape, op.num, packed, op.split_offset)
    column = dm.TMEM_COLUMNS - 1 - int(columns.max())
    return dataclasses.replace(op, taddr=taddr_codec.encode(dm.TMEM_LANES - dm.LANES_PER_WARP_QUARTER, column))


@st.composite
def data_movement_programs(draw, target: str, form: str | None = None, only_defined: bool = True,
                           tmem_words: tuple[int, ...] = (), place: str | None = None) -> Program:
    """A tcgen05 data-movement program: one to three of tcgen05.cp, .shift, .ld (.red too) and .st,
    one cta_group throughout, over a random TMEM image (the whole 512-column allocation of each
    CTA; or `tmem_words` in a shuffled cycle) and a random shared-memory image; with `form` (a
    `data_movement_forms` label), the first operation is of that form, and with `place` (one of
    `TMEM_PLACES`) a first ld/st is moved to the start or the end of TMEM. Programs whose behaviour
    is undefined (an access past the allocation, .st halves that overlap:
    `legality.undefined_behaviour`) are not drawn, unless `only_defined` is False."""
    group = draw(st.sampled_from(dm.CTA_GROUPS))
    cp = legal.tcgen05_cp(target).filter(lambda op: op.cta_group == group)
    cp = st.tuples(cp, smem_descriptors("none", reach="compact")).map(lambda pair: dataclasses.replace(pair[0], s_desc=pair[1]))
    kinds = [cp, legal.tcgen05_ld(target), legal.tcgen05_st(target)]
    if "tcgen05.shift" in target_named(target).features:
        kinds.append(legal.tcgen05_shift(st.just(group)))
    ops = tuple(draw(st.lists(st.one_of(kinds), min_size=1, max_size=3)))
    if form is not None:
        ops = (draw(st.one_of(kinds).filter(data_movement_forms()[form][1])),) + ops[1:]
    if place is not None and isinstance(ops[0], (Tcgen05Ld, Tcgen05St)):
        ops = (_placed(ops[0], place),) + ops[1:]
    if any(check(op, target) for op in ops):
        reject()
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (group, dm.TMEM_LANES, dm.TMEM_COLUMNS)
    tmem = _codes(rng, tmem_words, shape, None) if tmem_words else rng.integers(0, 2**32, shape, dtype=np.uint32)
    smem = rng.integers(0, 256, (group, DATA_MOVEMENT_SMEM_BYTES), dtype=np.uint8)
    program = Program(
        target=target, ops=ops, ctas=group, tmem_columns=dm.TMEM_COLUMNS,
        smem=tuple(SmemSegment(0, smem[c].tobytes(), c) for c in range(group)),
        tmem=tuple(TmemRegion(0, 0, dm.TMEM_LANES, dm.TMEM_COLUMNS, tmem[c].astype("<u4").tobytes(), c) for c in range(group)),
        label="data movement: " + ", ".join(op.OP for op in ops), meta={"class": "data movement"},
    )
    if only_defined and undefined_behaviour(program):
        reject()
    return program
