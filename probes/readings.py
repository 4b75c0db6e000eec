"""What every reading of each ledger assumption predicts for its probe programs, as data: the
table `tcgen05-conformance probe` judges a backend's observations with (docs/assumptions.md).

`READINGS` maps each ledger id with probe files to its readings: the adopted one (the oracle's
state of the probe, or `UNDEFINED` where the oracle refuses the program) and each alternative.
An alternative predicts one of:

- a state, given as a rewrite of the program (`rewrite`): the alternative reading of program P is
  the adopted reading of the rewritten program, so the oracle computes it (the zero-column mask
  read by its field descriptions is the mask with its two spans swapped);
- a state, given as an image (`image`): the adopted state (or the program's initial state where
  the oracle refuses the program) with the cells the alternative changes written explicitly;
- `FAULT` (the program does not run: a launch or device error), `REFUSED` (ptxas refuses it), or
  `OTHER` (only that the state differs from the adopted reading's, where the alternative names no
  one state).

Nothing here runs the oracle (`probes/` sits beside `oracles/`, not above it): the probe command
computes the predictions (`tcgen05_conformance.assumptions.probe`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Cp, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.core.layouts.mma_shape import shape_of
from tcgen05_conformance.core.layouts.tmem import d_positions
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState, initial_tmem, state_shape
from tcgen05_conformance.probes.mma import E2M1_POSITIVE, E2M1_VALUES, META_2_4, chunk_value

STATE, UNDEFINED, FAULT, REFUSED, OTHER = "state", "undefined", "fault", "refused by ptxas", "any other state"

Rewrite = Callable[[Program], Program]
Image = Callable[[Program, MachineState | None], MachineState]  # (program, adopted state or None) -> predicted state
ADOPTED = "adopted"


@dataclass(frozen=True)
class Reading:
    """One reading: a short `name`, what it says, and what it predicts (`outcome`; for a state,
    exactly one of `rewrite` and `image`)."""

    name: str
    says: str
    outcome: str = STATE
    rewrite: Rewrite | None = None
    image: Image | None = None

    def __post_init__(self) -> None:
        given = (self.rewrite is not None) + (self.image is not None)
        computed = self.outcome == STATE and self.name != ADOPTED  # the adopted state is the oracle's, not computed here
        if given != int(computed):
            raise ValueError(f"reading {self.name}: a predicted state needs one rewrite or image, other outcomes none")


@dataclass(frozen=True)
class Readings:
    """The adopted reading (`outcome` STATE: the oracle's state; UNDEFINED: the oracle refuses the
    program, so a fault or a state no alternative predicts is consistent with it) and the alternatives."""

    adopted: str
    alternatives: tuple[Reading, ...]
    outcome: str = STATE

    def adopted_reading(self) -> Reading:
        return Reading(ADOPTED, self.adopted, self.outcome)


# --- helpers: rewritten programs ----------------------------------------------------------------


def _ops(p: Program, change: Callable[[int, object], object]) -> Program:
    """`p` with each op replaced by change(index, op)."""
    return dataclasses.replace(p, ops=tuple(change(i, op) for i, op in enumerate(p.ops)))


def _idesc(op: Tcgen05Mma, **fields) -> int:
    return idesc_codec.encode(op.kind, dataclasses.replace(idesc_codec.decode(op.kind, op.idesc), **fields))


def _mmas(change: Callable[[Tcgen05Mma], Tcgen05Mma]) -> Rewrite:
    """A rewrite applying `change` to every tcgen05.mma."""
    return lambda p: _ops(p, lambda i, op: change(op) if isinstance(op, Tcgen05Mma) else op)


def _with_column(address: int, offset: int) -> int:
    lane, column = taddr_codec.decode(address)
    return taddr_codec.encode(lane, column + offset)


def _tmem_words(p: Program, change: Callable[[np.ndarray], None]) -> Program:
    """`p` with its TMEM regions' words (uint32 [lanes, columns], from lane 0, column 0) changed in place by `change`."""
    regions = []
    for r in p.tmem:
        words = np.frombuffer(r.words, "<u4").reshape(r.lanes, r.columns).copy()
        change(words)
        regions.append(dataclasses.replace(r, words=words.astype("<u4").tobytes()))
    return dataclasses.replace(p, tmem=tuple(regions))


def _desc_swizzle(word: int, variant: str, swizzle: str) -> int:
    return sdesc_codec.encode(dataclasses.replace(sdesc_codec.decode(word, variant), swizzle=swizzle), variant)


# --- helpers: images --------------------------------------------------------------------------------


def initial_state(p: Program) -> MachineState:
    """The state the program starts from: its TMEM image, zero registers and Hopper D."""
    shape = state_shape(p)
    loads = [np.zeros(words, np.uint32) for _, words in shape.loads]
    return MachineState(initial_tmem(p), loads, None if shape.hopper_d is None else np.zeros(shape.hopper_d, np.uint32))


def _copy(s: MachineState) -> MachineState:
    return MachineState(s.tmem.copy(), [w.copy() for w in s.loads], None if s.hopper_d is None else s.hopper_d.copy())


def d_cells(p: Program, index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lane, column) of every D element (local row r, column j) of the program's `index`-th op, a tcgen05.mma."""
    op = p.ops[index]
    s = shape_of(op)
    lane0, col0 = taddr_codec.decode(op.d_tmem)
    lanes, columns = d_positions(s.dp, s.d.n, lane0)
    return lanes, columns + col0


def f32_words(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def set_d(value: Callable[[np.ndarray, np.ndarray, int], np.ndarray] | float, base_adopted: bool = True) -> Image:
    """An image: D of the first MMA, in each CTA, holding f32 `value` (a number, or value(row, column, cta)),
    over the adopted state (`base_adopted`) or the program's initial state."""
    def image(p: Program, adopted: MachineState | None) -> MachineState:
        s = _copy(adopted if base_adopted and adopted is not None else initial_state(p))
        lanes, columns = d_cells(p)
        rows, cols = np.indices(lanes.shape)
        for cta in range(p.ctas):
            v = value(rows, cols, cta) if callable(value) else np.full(lanes.shape, value)
            s.tmem[cta][lanes, columns] = f32_words(v)
        return s
    return image


def _edit(change: Callable[[MachineState], None]) -> Image:
    """An image: the adopted (or, where the oracle refuses the program, the initial) state changed in place by `change`."""
    def image(p: Program, adopted: MachineState | None) -> MachineState:
        s = _copy(adopted if adopted is not None else initial_state(p))
        change(s)
        return s
    return image


# --- the readings of each assumption ----------------------------------------------------------------


def _zcmask_fields(op: Tcgen05Mma) -> Tcgen05Mma:
    """Table 45's field descriptions: skip span counts the columns using B, use span the zeroed ones,
    which is the examples' reading of the mask with its two spans swapped."""
    z = zcmask_codec.decode(op.zero_column_mask)
    return dataclasses.replace(op, zero_column_mask=zcmask_codec.encode(
        dataclasses.replace(z, skip_span=z.use_span, use_span=z.skip_span)))


def _f4_container_low_bits(p: Program) -> Program:
    """A's 4-bit codes moved from bits 0-3 to bits 2-5 of their byte (where the adopted reading reads
    them): the adopted reading of the result is the bits-0-3 reading of the probe."""
    a_columns = slice(32, 40)  # A [128, 32] e2m1 in 8-bit containers from column 32 (tcgen05_conformance.probes.mma.f4f6_tmem_container)

    def move(words: np.ndarray) -> None:
        block = words[:, a_columns].copy().view(np.uint8)
        words[:, a_columns] = ((block & 0x0F) << 2).view(np.uint32)
    return _tmem_words(p, move)


def _f6_container_low_bits(p: Program) -> Program:
    """A's 6-bit codes moved from bits 0-5 to bits 1-6 of their byte (where the adopted reading reads
    them): the adopted reading of the result is the bits-0-5 reading of the probe."""
    a_columns = slice(32, 40)  # A [128, 32] e3m2 in 8-bit containers from column 32 (tcgen05_conformance.probes.mma.f6_tmem_container)

    def move(words: np.ndarray) -> None:
        block = words[:, a_columns].copy().view(np.uint8)
        words[:, a_columns] = ((block & 0x3F) << 1).view(np.uint32)
    return _tmem_words(p, move)


def _unpadded_f4(p: Program, adopted: MachineState | None) -> MachineState:
    """32 e2m1 codes per 16-byte chunk (no padding): each row's K 0-15 come from its first 8 bytes and K
    16-31 from the padding bytes (0xFF: -6). With B the identity in the same layout, D[r][j] =
    A[r][j] (j < 16) + 16 x 36."""
    r, k = np.indices((128, 32))
    a = E2M1_VALUES[(r + 3 * k) % len(E2M1_VALUES)]
    return set_d(lambda rows, cols, cta: np.where(cols < 16, a[rows, np.minimum(cols, 15)], 0.0) + 16 * 36.0)(p, adopted)


def _metadata_from_row_lane(p: Program, adopted: MachineState | None) -> MachineState:
    """Half data path, metadata of row r read from lane r (not from its D lane): D row r column q =
    the chunk value of META[(r + q) mod 7] (tcgen05_conformance.probes.mma.spmeta_half)."""
    values = np.array([chunk_value(v) for v in META_2_4])
    return set_d(lambda rows, cols, cta: values[(rows + cols) % len(META_2_4)])(p, adopted)


def _sparse_2x2(p: Program, adopted: MachineState | None) -> MachineState:
    """CUTLASS's 2x2 layout for the sparse cta_group::2 M = 128 probe: CTA c's local row r (global 64 c + r)
    at lane r for columns 0-15 and lane 64 + r for columns 16-31, TMEM columns 0-15; D = 16 (row + 1)(column + 1)."""
    s = initial_state(p)
    r, j = np.indices((64, 32))
    for cta in range(2):
        s.tmem[cta][r + 64 * (j // 16), j % 16] = f32_words(16.0 * (64 * cta + r + 1) * (j + 1))
    return s


def _wrapped_lanes(p: Program, adopted: MachineState | None) -> MachineState:
    """D at lane 32 with its rows wrapping past lane 127: row r (4 (r + 1)) at lane (32 + r) mod 128."""
    s = initial_state(p)
    r = np.arange(128)
    s.tmem[0][(32 + r[:, None]) % 128, np.arange(16)] = f32_words(4.0 * (r[:, None] + 1) + 0 * np.arange(16))
    return s


def _high_halves_kept(p: Program, adopted: MachineState | None) -> MachineState:
    """The 16-bit D words' high halves left as they were (0xFFFF)."""
    s = _copy(adopted)
    lanes, columns = d_cells(p)
    s.tmem[0][lanes, columns] |= np.uint32(0xFFFF0000)
    return s


def _tmem_cells(lanes, columns, words) -> Image:
    def change(s: MachineState) -> None:
        s.tmem[0][lanes, columns] = words
    return _edit(change)


def _shift_rows(s: MachineState) -> None:
    """A in TMEM (columns 16-23) shifted down one row too: row r holds row r - 1, row 0 its own."""
    a = s.tmem[0][:, 16:24].copy()
    s.tmem[0][1:, 16:24] = a[:-1]


def _each_subpartition_shifted(s: MachineState) -> None:
    for q in range(1, 4):
        s.tmem[0][32 * q:32 * (q + 1), :8] = s.tmem[0][:32, :8]


def _halves_untouched(s: MachineState) -> None:
    s.loads[0] |= np.uint32(0xFFFF0000)
    s.tmem[0][:32, :2] |= np.uint32(0xFFFF0000)


def _signed_zeros_equal(s: MachineState) -> None:
    for k in (0, 1):  # the two .min loads: lane 0 {-0, +0, 1, 2} gives +0
        s.loads[k][0, -1] = 0


def _nan_propagated(s: MachineState) -> None:
    for k in (0, 2):  # .min and .max without .NaN: lane 1 {NaN, 1, -2, NaN} gives the canonical NaN
        s.loads[k][1, -1] = 0x7FFFFFFF


def _registers_absolute(s: MachineState) -> None:
    s.loads[0][0, :4] &= np.uint32(0x7FFFFFFF)


def _both_halves_reduced(s: MachineState) -> None:
    s.loads[0][16, -1] = 9


def _issuer_rows_everywhere(s: MachineState) -> None:
    s.tmem[1][:, :4] = s.tmem[0][:, :4]


def _k96_d(value: float) -> Image:
    return set_d(value, base_adopted=False)


def _lbo_one_chunk(rows, cols, cta):
    return np.where(cols < 32, 1.0, -1.0) * E2M1_POSITIVE[cols % 6]


def _sf_k96_earlier(rows, cols, cta):
    return 4032.0 * 2.0 ** (8 * (rows // 32))


def _cta_own_b(rows, cols, cta):
    return np.full(rows.shape, 16.0 if cta == 0 else 0.0)


def _dol(words: tuple[int, ...] | None) -> Rewrite:
    return _mmas(lambda op: dataclasses.replace(op, disable_output_lane=words))


def _spsel_columns(step: int) -> Rewrite:
    """Selector s reading metadata column `step` x s: the adopted reading of selector 0 at the metadata address + step s."""
    def change(op: Tcgen05Mma) -> Tcgen05Mma:
        s = idesc_codec.decode(op.kind, op.idesc).sparse_selector
        return dataclasses.replace(op, idesc=_idesc(op, sparse_selector=0), sp_meta_tmem=_with_column(op.sp_meta_tmem, step * s))
    return _mmas(change)


def _cutlass_selector(op: Tcgen05Mma) -> Tcgen05Mma:
    """Bits 0-1 as CUTLASS's sparsity selector (here 1): the metadata read one column on, the bits cleared."""
    return dataclasses.replace(op, idesc=op.idesc & ~3, sp_meta_tmem=_with_column(op.sp_meta_tmem, op.idesc & 3))


def _wgmma_codes(p: Program) -> Program:
    """Swizzle codes 1 and 3 exchanged (1 read as 32B, 3 as 128B: the order of the code table reversed)."""
    other = {"128B": "32B", "32B": "128B"}

    def change(i: int, op):
        if not isinstance(op, WgmmaMma):
            return op
        words = {}
        for name in ("a_desc", "b_desc"):
            swizzle = sdesc_codec.decode(getattr(op, name), "sm90").swizzle
            words[name] = _desc_swizzle(getattr(op, name), "sm90", other.get(swizzle, swizzle))
        return dataclasses.replace(op, **words)
    return _ops(p, change)


def _selector_swapped(kind: type) -> Rewrite:
    """Selector s of every `kind` instruction (wgmma or mma.sp) read as 1 - s: the other thread pair."""
    return lambda p: _ops(p, lambda i, op: dataclasses.replace(op, sparse_selector=1 - op.sparse_selector)
                          if isinstance(op, kind) else op)


def _base_offset_ignored(p: Program) -> Program:
    def change(i: int, op):
        if not isinstance(op, WgmmaMma):
            return op
        d = sdesc_codec.decode(op.a_desc, "sm90")
        return dataclasses.replace(op, a_desc=sdesc_codec.encode(dataclasses.replace(d, base_offset=0), "sm90"))
    return _ops(p, change)


def _cp_swizzle(code: int) -> Rewrite:
    def change(i: int, op):
        if not isinstance(op, Tcgen05Cp):
            return op
        return dataclasses.replace(op, s_desc=sdesc_codec.TABLE_40.field("swizzle").with_value(op.s_desc, code))
    return lambda p: _ops(p, change)


def _sw128_16b_atoms(op: Tcgen05Mma) -> Tcgen05Mma:
    return dataclasses.replace(op, b_desc=_desc_swizzle(op.b_desc, "tcgen05", "128B"))


def _k_bit_ignored(op: Tcgen05Mma) -> Tcgen05Mma:
    return dataclasses.replace(op, idesc=_idesc(op, k96=False))


def _sfa_id(sfa_id: int) -> Rewrite:
    return _mmas(lambda op: dataclasses.replace(op, idesc=_idesc(op, sfa_id=sfa_id)))


def _b_as(btype: str) -> Rewrite:
    return _mmas(lambda op: dataclasses.replace(op, idesc=_idesc(op, btype=btype)))


def _a_as(atype: str) -> Rewrite:
    return _mmas(lambda op: dataclasses.replace(op, idesc=_idesc(op, atype=atype)))


FAULT_READING = "the hardware refuses the form"

READINGS: dict[str, Readings] = {
    "A-ZCMASK-SPANS": Readings(
        "Table 45's worked examples: use span + 1 columns use B, then skip span + 1 are zeroed.",
        (Reading("field descriptions", "skip span + 1 columns use B, use span + 1 are zeroed (the spans swapped)",
                 rewrite=_mmas(_zcmask_fields)),)),
    "A-MIXED-F16": Readings(
        "A f16 and B bf16 are not allowed (rule idesc.abtype-mixed); if run, each is read as its own type: D = 36.",
        (Reading("B read as f16", "B's bf16 codes read as f16 (1.9375): D = 46.5", rewrite=_b_as("f16")),
         Reading("A read as bf16", "A's f16 codes read as bf16 (0.125): D = 3", rewrite=_a_as("bf16")),
         Reading("refused", FAULT_READING, FAULT))),
    "A-K96-SCALEVEC": Readings(
        "With K = 96 only .block32 and .block16 exist: .scale_vec::2X is undefined.",
        (Reading("2X reads factors 0-1", "two factors over 48 elements each: D = 48 (1 + 2) = 144", image=_k96_d(144.0)),
         Reading("2X reads factors 0-2", "three factors over 32 elements each: D = 32 (1 + 2 + 4) = 224", image=_k96_d(224.0))),
        UNDEFINED),
    "A-SFID-K96": Readings(
        "SFA_ID 0-3 for block32 with K = 96: ID 1 selects factors 1-3, D = 448.",
        (Reading("IDs 0 or 2 only", "ID 1 refused by the hardware", FAULT),
         Reading("factors 0-2", "ID 1 ignored: D = 224", rewrite=_sfa_id(0)),
         Reading("factors 2-4", "ID 1 read as 2: D = 896", rewrite=_sfa_id(2)))),
    "A-MAXSHIFT": Readings(
        "Bits 30-31 must be 0 outside .ws; they are ignored: D = A B^T.",
        (Reading("refused", FAULT_READING, FAULT),
         Reading("bits read", "the shift changes a non-.ws result", OTHER))),
    "A-SPSEL-F16-TF32": Readings(
        "Selectors 0-3 all valid for f16: selector s reads metadata column s.",
        (Reading("refused", "a selector the kind does not support faults", FAULT),
         Reading("other column", "a selector reads another column", OTHER))),
    "A-LANE-ALIGN": Readings(
        "Lane 32 is an aligned D address, but 128 rows from lane 32 run past lane 127: undefined.",
        (Reading("lane 32 refused", "lane 32 is not an aligned D address", FAULT),
         Reading("lanes wrap", "row r at lane (32 + r) mod 128", image=_wrapped_lanes)),
        UNDEFINED),
    "A-SDESC-FIXED53": Readings(
        "Bits 53-60 are zero bits; bit 53 set is ignored: D = A B^T.",
        (Reading("refused", "the fixed bits must hold their value", FAULT),
         Reading("bits select something", "bit 53 changes how A is read", OTHER))),
    "A-WGMMA-DESC": Readings(
        "CUTLASS GmmaDescriptor: swizzle codes 0 none, 1 128B, 2 64B, 3 32B in bits 62-63.",
        (Reading("codes reversed", "code 1 is 32B and code 3 is 128B", rewrite=_wgmma_codes),)),
    "A-TMEM-OWN-LANE": Readings(
        "Each column half of the 2x2 data path reads A from its own lanes: D = 16 (columns 0-15), 32 (16-31).",
        (Reading("one copy of A", "A read from lanes 0-63 only: D = 16 everywhere", image=set_d(16.0)),)),
    "A-LAYOUT-E-2x2": Readings(
        "Layout E is 2x2: lanes 0-63 hold columns 0-31, lanes 64-127 columns 32-63.",
        (Reading("N unsplit", "N = 64 in one piece: columns 32-63 outside the 32-column allocation", FAULT),
         Reading("another split", "columns 32-63 at other lanes or columns", OTHER))),
    "A-CTA-PAIR-SPLIT": Readings(
        "CTA c holds B's columns c N / 2 ..: D columns 0-15 = 16, 16-31 = 0 in both CTAs.",
        (Reading("own B for all columns", "each CTA uses its own B: CTA 0's D = 16, CTA 1's = 0", image=set_d(_cta_own_b)),
         Reading("B split along K", "each CTA's B covers half of K: D = 8 everywhere", image=set_d(8.0)))),
    "A-SDESC-BASE-OFFSET": Readings(
        "The swizzle row phase is (address bits 7.. - base offset) mod 8.",
        (Reading("base offset ignored", "the phase from the address alone", rewrite=_base_offset_ignored),)),
    "A-LBO-ABSOLUTE-SPLIT": Readings(
        "The first 32 bytes from the start address, the last 16 from the LBO address: D negative from column 64.",
        (Reading("one chunk from the start", "16 bytes from the start address, 32 from the LBO address: D negative "
                 "from column 32", image=set_d(_lbo_one_chunk)),)),
    "A-SW128-32B": Readings(
        "CUTLASS's Layout_MN_SW128_32B atom: 128-byte K rows, 4 per atom, Swizzle<2,5,2>.",
        (Reading("16-byte atoms", "the 32-byte atomicity ignored: read as the ordinary 128B swizzle",
                 rewrite=_mmas(_sw128_16b_atoms)),)),
    "A-F4F6-SMEM-PADDED": Readings(
        "16 elements at the start of each 16-byte chunk, the padding ignored: D = A.",
        (Reading("unpadded", "32 elements per 16-byte chunk: the padding (0xF, -6) read as K 16-31", image=_unpadded_f4),)),
    "A-F4F6-TMEM-CONTAINER": Readings(
        "A 4-bit element sits at bits 2-5 of its 8-bit container: D = e2m1(code >> 2).",
        (Reading("bits 0-3", "the element at bits 0-3: D = A", rewrite=_f4_container_low_bits),)),
    "A-F6-TMEM-CONTAINER": Readings(
        "A 6-bit element sits at bits 1-6 of its 8-bit container: D = e3m2(code >> 1).",
        (Reading("bits 0-5", "the element at bits 0-5, the \"lower 6 bits\": D = A", rewrite=_f6_container_low_bits),)),
    "A-D16-HIGH-HALF": Readings(
        "A 16-bit D word's high half is written 0.",
        (Reading("high half untouched", "the high halves keep 0xFFFF", image=_high_halves_kept),)),
    "A-ASHIFT-ROW0": Readings(
        ".ashift: row r uses A row r - 1, row 0 its own; TMEM unchanged.",
        (Reading("zero row in", "row 0 uses a zero row: D row 0 = 0", image=_tmem_cells(0, np.arange(16), 0)),
         Reading("rotation", "row 0 uses row 127: D row 0 = 512", image=_tmem_cells(0, np.arange(16), f32_words(512.0))),
         Reading("A shifted in TMEM", "the A rows in TMEM are shifted too", image=_edit(_shift_rows)))),
    "A-DOL-CTA2": Readings(
        "Bits 0-127 name the issuing CTA's lanes, 128-255 the peer's: bit 128 keeps CTA 1's lane 0.",
        (Reading("bits from the peer", "bit 128 names the issuing CTA's lane 0", rewrite=_dol((1, 0, 0, 0, 0, 0, 0, 0))),
         Reading("bits 128-255 ignored", "no lane kept", rewrite=_dol((0,) * 8)))),
    "A-SPMETA-HALF": Readings(
        "Half data path: row r's metadata at its D lane r % 16 + 32 (r // 16), chunk q at bit 4q.",
        (Reading("row lane", "row r's metadata at lane r", image=_metadata_from_row_lane),)),
    "A-SPSEL-COLUMNS": Readings(
        "Selector s adds s columns to the metadata address.",
        (Reading("2s columns", "selector s adds 2s columns", rewrite=_spsel_columns(2)),
         Reading("one column", "the selector is ignored: every MMA reads the first column", rewrite=_spsel_columns(0)))),
    "A-SF-K96-LAYOUT": Readings(
        "CUTLASS's sm_103 layout: factor f of row r at column r // 32 + 4 ((SF_ID + f) // 4), byte (SF_ID + f) % 4.",
        (Reading("earlier reading", "two columns per 32 rows, factor f at byte SF_ID + f: D row r = 4032 x 2^(8 (r // 32))",
                 image=set_d(_sf_k96_earlier)),)),
    "A-K96-SHAPES": Readings(
        "K = 96 exists for cta_group::1 M = 128: D = 96.",
        (Reading("M = 256 only", "K = 96 refused for cta_group::1", FAULT),
         Reading("K bit ignored", "the K = 96 bit ignored: K = 64, D = 64", rewrite=_mmas(_k_bit_ignored)))),
    "A-SPARSE-CTA2-M128": Readings(
        "The ISA's layout C: CTA c's local row r at lane (r % 16) + 32 (r // 16).",
        (Reading("CUTLASS 2x2", "the dense 2x2 layout: row r at lane r (columns 0-15) and 64 + r (16-31)", image=_sparse_2x2),)),
    "A-BLOCKSCALED-IDESC-BITS": Readings(
        "Bits 0-1 of a block-scaled descriptor are reserved and ignored: the metadata read as with selector 0.",
        (Reading("CUTLASS selector", "bits 0-1 a sparsity selector: the metadata read one column on",
                 rewrite=_mmas(_cutlass_selector)),
         Reading("refused", "the reserved bits must be 0", FAULT))),
    "A-NO-ACCUMULATOR": Readings(
        "enable-input-d false: the sum starts from -0, so A = -0, B = 1 gives D = -0.",
        (Reading("+0 start", "the sum starts from +0: D = +0", image=set_d(0.0)),)),
    "A-SCALE-INPUT-D": Readings(
        "Not modelled: D x 2^-1 is inexact, so the program is refused.",
        (Reading("round to nearest even", "D = 2 x 2^-149", image=set_d(float(np.uint32(2).view(np.float32)), False)),
         Reading("truncation", "D = 2^-149", image=set_d(float(np.uint32(1).view(np.float32)), False)),
         Reading("flush to zero", "D = 0", image=set_d(0.0, False))),
        UNDEFINED),
    "A-WS-MAXSHIFT": Readings(
        "The .ws max-shift bits do not change results: four identical D blocks.",
        (Reading("shift changes D", "the D blocks differ", OTHER),)),
    "A-WGMMA-SP-KMAJOR-ATOM": Readings(
        "The next swizzle atom along K is LBO bytes on.",
        (Reading("contiguous chunks", "K 16-31 read as the next row's K 0-15 (the ISA formula)", OTHER),)),
    "A-WGMMA-SP-METADATA": Readings(
        "CUTLASS's ELayout: the selector picks a pair of threads (16-bit inputs: lanes 0-1 or 2-3 of each quad).",
        (Reading("pairs swapped", "selector s reads the pair the adopted reading gives selector 1 - s",
                 rewrite=_selector_swapped(WgmmaMma)),)),
    "A-MMA-SP-METADATA": Readings(
        "The sparse wgmma ELayouts restricted to one warp: for 16-bit inputs at K = 32 the selector picks lanes 0-1 or 2-3.",
        (Reading("pairs swapped", "selector s reads the pair the adopted reading gives selector 1 - s",
                 rewrite=_selector_swapped(MmaSp)),)),
    "A-SHIFT-ROW0": Readings(
        "After tcgen05.shift lane 0 keeps its old contents.",
        (Reading("zero row in", "lane 0 = 0", image=_tmem_cells(0, np.arange(8), 0)),
         Reading("rotation", "lane 0 = lane 31's old contents",
                 image=_tmem_cells(0, np.arange(8), (31 << 16) | np.arange(8))))),
    "A-SHIFT-LANES": Readings(
        "Only the 32 lanes from taddr move.",
        (Reading("each subpartition", "every 32-lane subpartition shifts", image=_edit(_each_subpartition_shifted)),)),
    "A-SHIFT-DIR": Readings(
        "Lane i moves to lane i + 1.",
        (Reading("up", "lane i + 1 moves to lane i: lane i reads ((i + 1) << 16) | column",
                 image=_tmem_cells(np.arange(31)[:, None], np.arange(8), (np.arange(1, 32)[:, None] << 16) | np.arange(8))),)),
    "A-UNPACK-HIGH16": Readings(
        "st .unpack::16b writes zero high halves.",
        (Reading("high halves untouched", "the high halves keep 0xFFFF", image=_edit(_halves_untouched)),)),
    "A-ST-SPLIT-OVERLAP": Readings(
        "Overlapping halves of a .16x32bx2 st are undefined: the program is refused.",
        (Reading("defined overlap", "one half (or a mix) wins column 3", OTHER),),
        UNDEFINED),
    "A-LDRED-F32": Readings(
        "PTX min / max.f32 rules: -0 < +0, NaN skipped unless .NaN, all-NaN 0x7FFFFFFF.",
        (Reading("signed zeros equal", "min of {-0, +0, 1, 2} = +0", image=_edit(_signed_zeros_equal)),
         Reading("NaN propagated", "NaN propagated without .NaN", image=_edit(_nan_propagated)))),
    "A-LDRED-DATA": Readings(
        ".abs changes the reduction only, not the loaded registers.",
        (Reading("registers absolute", "the registers hold the magnitudes", image=_edit(_registers_absolute)),)),
    "A-LDRED-SCOPE": Readings(
        "Each thread of a .16x32bx2.red reduces its own registers: thread 0 gets 9, thread 16 gets 4.",
        (Reading("both halves", "both halves reduced together: thread 16 gets 9", image=_edit(_both_halves_reduced)),)),
    "A-CP-PAIR-SOURCE": Readings(
        "Each CTA copies from its own shared memory.",
        (Reading("issuer's rows", "both CTAs receive CTA 0's rows", image=_edit(_issuer_rows_everywhere)),)),
    "A-CP-DESC": Readings(
        "A cp source descriptor with swizzle code 3 is undefined: the program is refused.",
        (Reading("refused", "the invalid code faults", FAULT),
         Reading("bit 61 ignored", "code 3 read as 2 (128B)", rewrite=_cp_swizzle(2)),
         Reading("bit 62 ignored", "code 3 read as 1 (128B with 32B atoms)", rewrite=_cp_swizzle(1))),
        UNDEFINED),
}
