"""Truth from a silicon-proven peer: the project's tcgen05 facts cross-checked against what CUTLASS's
own constructors compute (issue 13; docs/peers.md).

CUTLASS's SM100/SM103 atoms and collectives ship in kernels that run on B200/B300, so where both
encode a fact (instruction and shared-memory descriptors, canonical layouts, TMEM fragments of D, A,
sparsity metadata and scale factors, the tcgen05.ld/st/cp atoms) they are compared field by field or
element by element, over every configuration CUTLASS can build. A difference is either listed in
`EXPECTED_DIFFERENCES` (data: the assumption it rests on and the evidence for both readings) or
fails the check.

`cross_check()` returns a JSON-able report; `tcgen05-conformance peers [--json]` prints it.
"""

from __future__ import annotations



from dataclasses import dataclass, field

import re

import numpy as np

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding.bitfields import EncodingError
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.legality.check import check as legality_check
from tcgen05_conformance.core.layouts import tmem as tmem_layout
from tcgen05_conformance.core.layouts.ldst import fragment_cells
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.peers import cutlass_toolchain as toolchain
from tcgen05_conformance.peers.cutlass_atoms import ATOMS, Atom, Candidate, shape_candidates, type_candidates
from tcgen05_conformance.oracles import data_movement as oracle_dm


@dataclass(frozen=True)
class Difference:
    """One fact on which the project and CUTLASS disagree: `key` names the fact class, `id` the
    configuration, `detail` both values."""

    area: str
    key: str
    id: str
    detail: str


@dataclass(frozen=True)
class ExpectedDifference:
    """A known disagreement: its `key` (matched exactly), the assumption of docs/assumptions.md the
    project's reading rests on, and the evidence for each reading."""

    area: str
    key: str
    assumption: str
    cutlass: str
    project: str


@dataclass
class Area:
    """One compared area: how many configurations CUTLASS built, how many facts were compared, and
    the differences found."""

    name: str
    what: str
    configurations: int = 0
    facts: int = 0
    differences: list[Difference] = field(default_factory=list)

    def differ(self, key: str, id: str, detail: str) -> None:
        self.differences.append(Difference(self.name, key, id, detail))


# --- the instruction descriptor and Table 39 --------------------------------------------------


def _declaration(c: Candidate) -> str:
    """Instantiating the atom and its traits runs every static assertion CUTLASS puts on the
    configuration."""
    sizes = f"sizeof({c.traits_type()})" if c.atom.form == "traits" else f"sizeof({c.atom_type()}) + sizeof({c.traits_type()})"
    return f"static_assert({sizes} > 0);"


def buildable(tc: toolchain.Toolchain, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates CUTLASS's static assertions accept."""
    rejected = toolchain.rejected_declarations(tc, [_declaration(c) for c in candidates])
    return [c for i, c in enumerate(candidates) if i not in rejected]


def mma_kind(c: Candidate) -> str:
    """The .kind the atom issues (cute/arch/mma_sm100_umma.hpp): the MXF4 atoms issue .kind::mxf4
    with 2 factors per K = 64 (VS = 32 dense, 64 sparse) and .kind::mxf4nvf4 otherwise."""
    if c.atom.kind == "mxf4nvf4" and not c.atom.k96:
        return "mxf4" if c.vs == (64 if c.atom.sparse else 32) else "mxf4nvf4"
    return c.atom.kind


def scale_vec(c: Candidate) -> str | None:
    """The .scale_vec / .block qualifier the atom issues."""
    kind = mma_kind(c)
    if kind not in isa.BLOCK_SCALED_KINDS:
        return None
    if kind == "mxf8f6f4":
        return "block32"
    dense_vs = c.vs // 2 if c.atom.sparse else c.vs
    return "block16" if dense_vs == 16 else "block32"


def expected_descriptor(c: Candidate, selector: int = 0, sfa: int = 0, sfb: int = 0) -> idesc_codec.InstrDescriptor:
    t = c.types
    return idesc_codec.InstrDescriptor(
        m=c.m, n=c.n, atype=t.a, btype=t.b, dtype=t.d, sparse=c.atom.sparse, sparse_selector=selector,
        negate_a=c.a_negate, negate_b=c.b_negate, transpose_a=c.a_major == "MN", transpose_b=c.b_major == "MN",
        sfa_id=sfa, sfb_id=sfb, scale_type=t.sf, k96=c.atom.k96)


def runtime_variants(c: Candidate) -> list[tuple[int, int, int]]:
    """(selector, SFA_ID, SFB_ID) of each runtime word mma.cpp prints, in its order."""
    selectors = range(4 if c.atom.sparse else 1)
    if mma_kind(c) in isa.BLOCK_SCALED_KINDS:
        return [(s, a, b) for s in selectors for a in range(4) for b in range(4)]
    return [(s, 0, 0) for s in selectors]


def _issued(c: Candidate, word: int) -> Tcgen05Mma:
    """The tcgen05.mma CUTLASS issues for a configuration, with this descriptor word and operand
    descriptors whose swizzle suits the majorness (Table 52)."""
    from tcgen05_conformance.core.encoding import sdesc as sdesc_codec

    def desc(major: str, typ: str) -> int:
        swizzle = "128B_base32B" if major == "MN" and isa.TYPE_BITS.get(typ) == 32 else "128B"
        return sdesc_codec.encode(sdesc_codec.SmemDescriptor(0, 16, 1024, swizzle))

    kind = mma_kind(c)
    return Tcgen05Mma(kind=kind, cta_group=c.atom.cta_group, sparse=c.atom.sparse, block_scale=kind in isa.BLOCK_SCALED_KINDS,
                      scale_vec=scale_vec(c), idesc=word, a_desc=desc(c.a_major, c.types.a), b_desc=desc(c.b_major, c.types.b),
                      a_tmem=0 if c.atom.a_tmem else None)


def compare_descriptor(area: Area, legality: Area, c: Candidate, record: dict) -> None:
    """CUTLASS's descriptor words (every sparsity selector and scale-factor ID the runtime forms
    take) against the project's encoding of the same configuration; and the instruction CUTLASS
    issues with its default operands (selector 0, scale factors at byte 0) against the legality
    model (Table 39 and the idesc rules)."""
    kind = mma_kind(c)
    for (selector, sfa, sfb), word in zip(runtime_variants(c), record["runtime"], strict=True):
        area.facts += 1
        if selector and kind in isa.BLOCK_SCALED_KINDS:
            area.differ("idesc.blockscaled-selector", c.id, f"CUTLASS puts sparsity selector {selector} in bits 0-1 ({word:#010x}); "
                        "Tables 43/44 reserve them")
            continue
        try:
            ours = idesc_codec.encode(kind, expected_descriptor(c, selector, sfa, sfb))
        except EncodingError as e:
            area.differ("idesc.unencodable", c.id, f"CUTLASS issues {word:#010x}; the project cannot encode it: {e}")
            continue
        if ours != word:
            area.differ(f"idesc.bits.{kind}", c.id,
                        f"selector {selector} SF IDs {sfa}/{sfb}: CUTLASS {word:#010x}, project {ours:#010x} (differing bits {ours ^ word:#x})")
    legality.facts += 1
    target = "sm_103a" if c.atom.k96 else "sm_100a"
    for v in legality_check(_issued(c, record["runtime"][0]), target):
        legality.differ(f"legality.{v.rule}", c.id, f"CUTLASS builds it; the legality model says {v.rule}: {v.message}")


# --- TMEM fragments ---------------------------------------------------------------------------


def decode_tmem(record: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lane, column, bit offset) of each address of a `peers::tmem_tensor` record: CuTe keeps the
    sub-word index of an element of 32 / 2^shift bits rotated into the top `shift` bits
    (tmem_ptr::operator+); metadata elements may be fractions of a bit (a nibble per 8 elements)."""
    a = np.array(record["addresses"], dtype=np.int64)
    shift = record["shift"]
    low = a & ((1 << (32 - shift)) - 1)
    sub = a >> (32 - shift)
    return (low >> 16) & 0xFF, low & 0xFFFF, sub * 32 / (1 << shift)


def tmem_grid(record: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """decode_tmem reshaped to [blocks, y, x]."""
    shape = (record["blocks"], record["y"], record["x"])
    return tuple(v.reshape(shape) for v in decode_tmem(record))


def compare_d(area: Area, c: Candidate, record: dict) -> None:
    """D element (r, j) of each CTA: CUTLASS's FrgTypeC against the project's data-path layout
    (9.7.16.10.5, conformance/core/layouts/tmem.py)."""
    lane, column, bit = (v[0] for v in tmem_grid(record["d"]))  # [N, rows]
    dp = tmem_layout.data_path(c.m, c.atom.cta_group, c.atom.sparse, ws=False)
    ours_lane, ours_column = tmem_layout.d_positions(dp, c.n, 0)
    area.configurations += 1
    area.facts += lane.size
    if lane.shape != ours_lane.T.shape:
        area.differ("d.shape", c.id, f"CUTLASS D fragment {lane.shape[1]} x {lane.shape[0]}, project {dp.rows} x {c.n}")
        return
    bad = (lane != ours_lane.T) | (column != ours_column.T) | (bit != 0)
    if bad.any():
        j, r = (int(x[0]) for x in np.nonzero(bad))
        area.differ(f"d.layout.{dp.layout}", c.id, f"{int(bad.sum())} of {bad.size} elements; row {r} column {j}: CUTLASS "
                    f"(lane {lane[j, r]}, column {column[j, r]}), project (lane {ours_lane[r, j]}, column {ours_column[r, j]})")


def compare_a(area: Area, c: Candidate, record: dict) -> None:
    """A in TMEM (TS atoms, FrgTypeA): element (r, k) at its data-path lanes (a duplicated copy per
    column half of the 2x2 layout, TmemAllocMode::Duplicated), column and bit offset."""
    lane, column, bit = (v[0].T for v in tmem_grid(record["a"]))  # [x, K]
    dp = tmem_layout.data_path(c.m, c.atom.cta_group, c.atom.sparse, ws=False)
    bits = isa.TYPE_BITS[c.types.a]
    container = tmem_layout.a_tmem_container_bits(mma_kind(c), bits)
    columns, offsets = tmem_layout.a_element_offsets(lane.shape[1], container, bits)
    lanes = tmem_layout.split_lanes(dp, 0)  # [splits, rows]
    x = np.arange(lane.shape[0])
    ours_lane = lanes[x // dp.rows % dp.splits, x % dp.rows][:, None]
    area.configurations += 1
    area.facts += lane.size
    bad = (lane != ours_lane) | (column != columns[None, :]) | (bit != offsets[None, :])
    if lane.shape[0] != dp.rows * dp.splits or bad.any():
        r, k = (int(v[0]) for v in np.nonzero(bad)) if bad.any() else (0, 0)
        area.differ(f"a.layout.{dp.layout}", c.id, f"{int(bad.sum())} of {bad.size}; A ({r}, {k}): CUTLASS (lane {lane[r, k]}, "
                    f"column {column[r, k]}, bit {bit[r, k]}), project (lane {ours_lane[r, 0]}, column {columns[k]}, bit {offsets[k]})")


def compare_metadata(area: Area, c: Candidate, record: dict) -> None:
    """Sparsity metadata (FrgTypeE, one metadata bit share per logical A element): chunk q of row r
    at the bits of its first element, against meta_positions."""
    lane, column, bit = (v[0].T for v in tmem_grid(record["e"]))  # [rows, K]
    kind = mma_kind(c)
    dp = tmem_layout.data_path(c.m, c.atom.cta_group, c.atom.sparse, ws=False)
    per_chunk = tmem_layout.META_CHUNK_ELEMENTS[kind]
    k = lane.shape[1]
    ours_lane, ours_column, ours_bit = tmem_layout.meta_positions(dp, kind, k, 0, 0, 0)  # [splits, rows, chunks]
    first = np.arange(0, k, per_chunk)
    cut = (lane[:dp.rows, first], column[:dp.rows, first], bit[:dp.rows, first])
    area.configurations += 1
    area.facts += cut[0].size
    bad = (cut[0] != ours_lane[0]) | (cut[1] != ours_column[0]) | (cut[2] != ours_bit[0])
    if bad.any():
        r, q = (int(v[0]) for v in np.nonzero(bad))
        area.differ(f"metadata.layout.{kind}.{dp.layout}", c.id,
                    f"{int(bad.sum())} of {bad.size}; row {r} chunk {q}: CUTLASS (lane {cut[0][r, q]}, column {cut[1][r, q]}, "
                    f"bit {cut[2][r, q]}), project (lane {ours_lane[0, r, q]}, column {ours_column[0, r, q]}, bit {ours_bit[0, r, q]})")


def _scale_operand(area: Area, c: Candidate, record: dict, operand: str) -> None:
    """One operand's scale factors: CUTLASS's TMEM tensor, as each MMA reads it from its base
    address, against scale_factor_positions from that address's column and byte (SF_ID)."""
    lane, column, bit = tmem_grid(record)  # [blocks, y, x]
    dp = tmem_layout.data_path(c.m, c.atom.cta_group, c.atom.sparse, ws=False)
    sv = isa.scale_vector(mma_kind(c), scale_vec(c), c.atom.k96)
    factors = sv.factors
    per_mma = factors if c.atom.k96 else 1  # K = 96: one factor per block of the collective's tensor
    mmas = lane.shape[0] // per_mma
    two_by_two = operand == "B" and dp.splits == 2
    count = c.n // dp.splits if operand == "B" else dp.rows
    groups = tmem_layout.scale_factor_groups(operand, c.n if operand == "B" else dp.rows, dp.splits, c.atom.k96)
    x = np.arange(record["x"])
    span = record["x"] // 4  # indices of one half (2x2: two halves, two copies) or of the whole (4x1: four copies)
    if two_by_two:  # ((32, MN/64), 2 halves, 2 copies): subpartition 2 half + copy
        index, subpartition = x % span, 2 * (x // span % 2) + x // (2 * span)
    else:  # ((32, MN/32), 4 copies)
        index, subpartition = x % span, x // span
    keep = index < count
    for j in range(mmas):
        blocks = [j * per_mma + f for f in range(factors)] if c.atom.k96 else [j]
        if c.atom.k96:
            cut = [np.stack([v[b, 0] for b in blocks], axis=-1) for v in (lane, column, bit)]
        else:
            cut = [v[j].T for v in (lane, column, bit)]  # [x, factors]
        col0, sf_id = int(cut[1][0, 0]), int(cut[2][0, 0]) // 8
        ours = tmem_layout.scale_factor_positions(subpartition, index, col0, factors, sf_id, groups)
        area.facts += int(keep.sum()) * factors
        bad = keep[:, None] & ((cut[0] != ours[0]) | (cut[1] != ours[1]) | (cut[2] != ours[2]))
        if bad.any():
            i, f = (int(v[0]) for v in np.nonzero(bad))
            area.differ(f"scale.{operand}.{'k96' if c.atom.k96 else sv.qualifier}.{dp.layout}", c.id,
                        f"MMA {j} (SF_ID {sf_id}): {int(bad.sum())} of {int(keep.sum()) * factors}; index {index[i]} copy "
                        f"{subpartition[i]} factor {f}: CUTLASS (lane {cut[0][i, f]}, column {cut[1][i, f]}, byte {cut[2][i, f] // 8}), "
                        f"project (lane {ours[0][i, f]}, column {ours[1][i, f]}, byte {ours[2][i, f] // 8})")
            return


def compare_scale_factors(area: Area, c: Candidate, record: dict) -> None:
    area.configurations += 1
    _scale_operand(area, c, record["sfa"], "A")
    _scale_operand(area, c, record["sfb"], "B")


# --- shared-memory descriptors and canonical layouts -------------------------------------------

# CUTLASS's UMMA layout atoms (cute/atom/mma_traits_sm100.hpp) and the swizzle mode each selects.
SMEM_ATOMS = {"INTER": "none", "SW32": "32B", "SW64": "64B", "SW128": "128B", "SW128_32B": "128B_base32B"}
# Element width -> (an SS atom of that width with M = 128, N = 256, its element type): the MMA whose
# operands the layouts are tiled for.
SMEM_MMAS = {16: ("SM100_MMA_F16BF16_SS<half_t, half_t, float, 128, 256, {a}, {b}>", "half_t"),
             32: ("SM100_MMA_TF32_SS<tfloat32_t, tfloat32_t, float, 128, 256, {a}, {b}>", "tfloat32_t"),
             8: ("SM100_MMA_S8_SS<int8_t, int8_t, int32_t, 128, 256, {a}, {b}>", "int8_t")}


@dataclass(frozen=True)
class SmemConfig:
    bits: int
    major: str
    atom: str

    @property
    def id(self) -> str:
        return f"{self.bits}bit.{self.major}.{self.atom}"

    def line(self) -> str:
        mma, element = SMEM_MMAS[self.bits]
        major = f"UMMA::Major::{self.major}"
        layout = f"UMMA::Layout_{self.major}_{self.atom}_Atom<{element}>"
        return f'PEERS_SMEM("{self.id}", {mma.format(a=major, b=major)}, {layout}, {layout})'


def smem_configurations() -> list[SmemConfig]:
    """Every layout atom for 8-, 16- and 32-bit elements, K- and MN-major (the 32B-atomicity 128B
    swizzle only MN-major and 32-bit, as Table 52 and CUTLASS's atom allow)."""
    return [SmemConfig(bits, major, atom) for bits in SMEM_MMAS for major in ("K", "MN") for atom in SMEM_ATOMS
            if atom != "SW128_32B" or (major == "MN" and bits == 32)]


def compare_smem(area: Area, config: SmemConfig, record: dict) -> None:
    """Each k-block's descriptor decoded by the project (fields, swizzle) and the bit address of
    every element of the k-block it selects (conformance/core/layouts/smem.py), against the address
    CUTLASS's swizzled layout gives."""
    for name in ("a", "b"):
        operand = record[name]
        rows, k, blocks = operand["rows"], operand["k"], operand["blocks"]
        offsets = np.array(operand["offsets"], dtype=np.int64).reshape(blocks, k, rows)
        area.configurations += 1
        for block, word in enumerate(operand["descriptors"]):
            d = sdesc_codec.decode(word)
            area.facts += 1 + rows * k
            if d.fixed_field_errors or d.swizzle != SMEM_ATOMS[config.atom] or sdesc_codec.encode(d) != word:
                area.differ("sdesc.fields", f"{config.id}.{name}{block}", f"CUTLASS {word:#018x}: decoded {d}")
                continue
            ours = element_bit_addresses(d, config.major == "K", rows, k, storage_for(config.bits, False))
            bad = ours != offsets[block].T * 8
            if bad.any():
                r, j = (int(v[0]) for v in np.nonzero(bad))
                area.differ(f"smem.address.{config.major}.{config.atom}", f"{config.id}.{name}{block}",
                            f"{int(bad.sum())} of {bad.size}; element ({r}, {j}): CUTLASS byte {offsets[block, j, r]}, "
                            f"project byte {ours[r, j] / 8:g}")


# --- tcgen05.ld / st / cp atoms -------------------------------------------------------------------

LDST_NAME = re.compile(r"SM100_TMEM_(LOAD|STORE)_(\d+dp\d+b)(\d+)x(_16b)?")
LDST_SHAPES = {"32dp32b": "32x32b", "16dp64b": "16x64b", "16dp128b": "16x128b", "16dp256b": "16x256b", "16dp32b": "16x32bx2"}
CP_NAME = re.compile(r"SM100_UTCCP_(\w+?)_(1|2)cta")
CP_FORMS = {"128dp256bit": ("128x256b", None), "4dp256bit": ("4x256b", None), "128dp128bit": ("128x128b", None),
            "2x64dp128bitlw0213": ("64x128b", "warpx2::02_13"), "2x64dp128bitlw0123": ("64x128b", "warpx2::01_23"),
            "4x32dp128bit": ("32x128b", "warpx4")}


def copy_atoms(tc: toolchain.Toolchain) -> tuple[list[str], list[str], dict[str, int]]:
    """Every tcgen05.ld/st and tcgen05.cp Copy_Traits the installed header defines, and the
    immHalfSplitoff each .16x32bx2 atom passes (the immediate of its PTX in cute/arch/copy_sm100.hpp:
    N for .xN, 2N with .pack::16b / .unpack::16b)."""
    include = tc.includes[0] / "cute"
    text = (include / "atom" / "copy_traits_sm100.hpp").read_text(encoding="utf-8")
    ldst = sorted(set(re.findall(r"struct Copy_Traits<(SM100_TMEM_(?:LOAD|STORE)_\w+)>", text)))
    cp = sorted(set(re.findall(r"struct Copy_Traits<(SM100_UTCCP_\w+)>", text)))
    arch = (include / "arch" / "copy_sm100.hpp").read_text(encoding="utf-8")
    splits = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"struct (SM100_TMEM_(?:LOAD|STORE)_16dp32b\w+)\s*\{.*?16x32bx2[^;]*?\]\s*,\s*(\d+)\s*[,;]", arch, re.S)}
    return ldst, cp, splits


def compare_ldst(area: Area, record: dict, lane_stride: int, splits: dict[str, int]) -> None:
    """Every register bit of a tcgen05.ld/st atom: CUTLASS's TMEM bit against the oracle's register
    map (conformance/core/layouts/ldst.py; .16x32bx2 with the immHalfSplitoff the atom passes)."""
    m = LDST_NAME.fullmatch(record["id"])
    load, shape, num, packed = m.group(1) == "LOAD", LDST_SHAPES[m.group(2)], int(m.group(3)), bool(m.group(4))
    bits = np.array(record["bits"], dtype=np.int64).reshape(-1, record["threads"]).T  # [thread, half register]
    lane, column, offset = bits // lane_stride, bits % lane_stride // 32, bits % 32
    split = splits[record["id"]] if dm.LDST_SHAPES[shape].split else None
    ours_lane, ours_columns = fragment_cells(shape, num, packed, split)  # [32, R], [32, R, halves]
    registers = ours_lane.shape[1]
    if packed:  # half h of register r: bits 0-15 of column h of the register's pair
        want_lane, want_column = np.repeat(ours_lane, 2, axis=1), ours_columns.reshape(32, 2 * registers)
        want_offset = np.zeros_like(want_lane)
    else:
        want_lane, want_column = np.repeat(ours_lane, 2, axis=1), np.repeat(ours_columns[:, :, 0], 2, axis=1)
        want_offset = np.tile([0, 16], (32, registers))
    area.configurations += 1
    area.facts += lane.size
    if lane.shape != want_lane.shape:
        area.differ("ldst.registers", record["id"], f"CUTLASS {lane.shape[1] // 2} registers, project {registers}")
        return
    bad = (lane != want_lane) | (column != want_column) | (offset != want_offset)
    if bad.any():
        t, h = (int(v[0]) for v in np.nonzero(bad))
        area.differ(f"ldst.{'ld' if load else 'st'}.{shape}{'.16b' if packed else ''}", record["id"],
                    f"{int(bad.sum())} of {bad.size}; thread {t} register {h // 2} half {h % 2}: CUTLASS (lane {lane[t, h]}, column "
                    f"{column[t, h]}, bit {offset[t, h]}), project (lane {want_lane[t, h]}, column {want_column[t, h]}, bit {want_offset[t, h]})")


def compare_cp(area: Area, record: dict) -> None:
    """How many bits each TMEM lane receives from a tcgen05.cp atom, against the oracle's routes
    (oracles/data_movement.py CP_LANES: rows, lane blocks and multicast copies)."""
    m = CP_NAME.fullmatch(record["id"])
    shape, multicast = CP_FORMS[m.group(1)]
    route = oracle_dm.CP_LANES[(shape, multicast)]
    rows = np.arange(dm.CP_SHAPES[shape].lanes)
    lanes = ((rows % route.block + route.block_stride * (rows // route.block))[:, None] + np.array(route.copies)).ravel()
    ours = np.bincount(lanes, minlength=dm.TMEM_LANES) * dm.CP_SHAPES[shape].bits
    theirs = np.array(record["lane_bits"])
    area.configurations += 1
    area.facts += dm.TMEM_LANES
    if (ours != theirs).any():
        lane = int(np.nonzero(ours != theirs)[0][0])
        area.differ(f"cp.lanes.{shape}", record["id"], f"lane {lane}: CUTLASS writes {theirs[lane]} bits, project {ours[lane]}")


# --- the whole check --------------------------------------------------------------------------

_UNCHECKED_CUTLASS = ("CUTLASS builds it: the atom's static assertions do not cover it; no CUTLASS collective builder or kernel "
                      "issues it")
EXPECTED_DIFFERENCES: tuple[ExpectedDifference, ...] = (
    ExpectedDifference(
        "idesc", "idesc.blockscaled-selector", "A-BLOCKSCALED-IDESC-BITS",
        "InstrDescriptorBlockScaled has a sparsity selector in bits 0-1 (sparse_id2_), set by "
        "make_runtime_instr_desc_block_scaled<true>; the collectives pass 0, so no shipped kernel sets it",
        "Tables 43/44 reserve bits 0-1: the legality model refuses a nonzero value and the oracle ignores it"),
    ExpectedDifference(
        "idesc", "idesc.unencodable", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (SM100_MMA_MXF4NVF4_2x1SM_SS_SPARSE has no M assertion, so M = 32 and 64 build, "
        "written as M >> 4 into bits 24-28)",
        "Table 44 holds M >> 7 (M = 128 or 256 only) and Table 39 gives sparse cta_group::2 mxf4nvf4 M = 256 only"),
    ExpectedDifference(
        "idesc", "idesc.bits.i8", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (SM100_MMA_S8_TS takes ScaleIn arguments and drops them from its descriptor)",
        "Table 49: .kind::i8 has no negate; the project's descriptor for a negated i8 MMA sets the bit, the legality "
        "model refuses it"),
    ExpectedDifference(
        "legality", "legality.idesc.negate", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (SM100_MMA_S8_2x1SM_TS writes its ScaleIn arguments into the descriptor)",
        "Table 49: .kind::i8 has no negate"),
    ExpectedDifference(
        "legality", "legality.idesc.reserved", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (SM100_MMA_MXF4NVF4_2x1SM_SS_SPARSE with M = 32 or 64 writes M >> 4 into bits 24-26)",
        "Table 44 reserves bits 24-26 (M >> 7 in 27-28) and Table 39 gives sparse cta_group::2 mxf4nvf4 M = 256 only"),
    ExpectedDifference(
        "tmem.d", "d.layout.F", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (sparse cta_group::2 mxf4nvf4 with M = 64: tmem_frg_2sm's 1x4 layout for 32 rows per CTA)",
        "no such MMA in Table 39; data_path gives any M = 64 the half data path (layout F)"),
    ExpectedDifference(
        "tmem.d", "d.unbuildable", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (sparse cta_group::2 mxf4nvf4 with M = 32: the atom builds, its D fragment does not)",
        "no such MMA in Table 39"),
    ExpectedDifference(
        "legality", "legality.idesc.transpose-kind", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (the SM100 MXF4 atoms accept MN-major operands; CUTLASS's own SM103 traits assert "
        "\"This MMA does not support transpose\")",
        "Table 49: .kind::mxf4 / mxf4nvf4 cannot transpose"),
    ExpectedDifference(
        "legality", "legality.idesc.shape-m", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (SM100_MMA_MXF4NVF4_2x1SM_SS_SPARSE has no M assertion)",
        "Table 39: sparse cta_group::2 mxf4 / mxf4nvf4 is M = 256 only"),
    ExpectedDifference(
        "legality", "legality.idesc.transpose-b-8bit-n", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (the S8 atoms accept N = 8 whatever B's majorness; the F8F6F4 traits do check it)",
        "Table 50: 8-bit MN-major B needs N a multiple of 16 (cta_group::1) or 32 (cta_group::2)"),
    ExpectedDifference(
        "legality", "legality.idesc.scale-type", "A-PEER-UNCHECKED",
        _UNCHECKED_CUTLASS + " (the SM100 MXF4 atoms accept ue4m3 factors with 32-element blocks, issuing .kind::mxf4; "
        "CUTLASS's own SM103 atoms assert \"2x mode only supports ... ue8m0_t\")",
        "Table 55: .kind::mxf4 takes ue8m0 factors only"),
    ExpectedDifference(
        "tmem.d", "d.layout.C", "A-SPARSE-CTA2-M128",
        "tmem_frg_2sm (the dense 2x2 layout B) for the sparse 2-SM atoms with M = 128, never exercised: their metadata "
        "fragment does not build and every 2-CTA sparse test and collective uses M = 256",
        "the ISA's table in 9.7.16.10.5: layout C (4x1 using half the data path), as for sparse cta_group::1 M = 64 (layout F)"),
    ExpectedDifference(
        "tmem.scale", "sf.unbuildable", "A-TMEM-OWN-LANE",
        "no scale-factor tile for fewer than 128 rows per CTA: Sm1xxBlockScaledConfig divides the CTA's rows into 128-row "
        "blocks (for cta_group::2 M = 128, 64 rows: none), so its sm100 collectives cannot run these MMAs",
        "the traits' fragment types (ScaleFactorDuplicated2by2 for B in the 2x2 data path): each column half's factors "
        "in the subpartitions of its lanes, from column 0"),
    ExpectedDifference(
        "tmem.metadata", "e.unbuildable", "A-SPMETA-HALF",
        "tmem_e_frg asserts M = 128 per CTA (\"Only 128 implemented right now\"): no metadata layout for the half data "
        "path (sparse cta_group::1 M = 64, layout F; sparse cta_group::2 M = 128, layout C)",
        "A-SPMETA-HALF: the half data path's metadata at each row's D lane, chunk q at bit 4q"),
)


def _configs_header(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


# Fragment bits of mma.cpp's PEERS_MMA, and the peers:: function that builds each.
FRAGMENTS = {"d": 1, "a": 2, "e": 4, "sf": 8}


def _fragment_calls(c: Candidate) -> dict[str, list[str]]:
    """The fragments a configuration has (A in TMEM for TS atoms, metadata when sparse, scale
    factors when block-scaled), as the peers:: calls that build them."""
    t = c.traits_type()
    calls = {"d": [f"peers::fragment_d<{t}>()"]}
    if c.atom.a_tmem:
        calls["a"] = [f"peers::fragment_a<{t}>()"]
    if c.atom.sparse:
        calls["e"] = [f"peers::fragment_e<{t}>()"]
    if c.vs:
        k96 = str(c.atom.k96).lower()
        calls["sf"] = [f"peers::fragment_sf<{t}, {c.vs}, {k96}, {side}>()" for side in ("true", "false")]
    return calls


def buildable_fragments(tc: toolchain.Toolchain, configs: list[Candidate]) -> dict[str, int]:
    """Per configuration, the fragments CUTLASS builds (a FRAGMENTS mask): each is probed like the
    atoms, since some refuse to compile (tmem_e_frg: "Only 128 implemented right now")."""
    declarations, owners = [], []
    for c in configs:
        for name, calls in _fragment_calls(c).items():
            for call in calls:
                declarations.append(f"static_assert(sizeof(decltype({call})) > 0);")
                owners.append((c.id, name))
    rejected = {owners[i] for i in toolchain.rejected_declarations(tc, declarations)}
    masks = {c.id: 0 for c in configs}
    for c in configs:
        for name in _fragment_calls(c):
            if (c.id, name) not in rejected:
                masks[c.id] |= FRAGMENTS[name]
    return masks


def _mma_line(c: Candidate, fragments: int) -> str:
    return (f'PEERS_MMA("{c.id}", {str(c.atom.sparse).lower()}, {c.vs}, {str(c.atom.k96).lower()}, '
            f'{fragments}, {c.traits_type()})')


def mma_configurations(tc: toolchain.Toolchain) -> tuple[dict[Atom, list[Candidate]], list[Candidate]]:
    """Per atom, the shapes CUTLASS builds (representative types), and the type/negation variants
    it builds at each atom's first buildable shape."""
    shapes = buildable(tc, [c for atom in ATOMS for c in shape_candidates(atom)])
    per_atom: dict[Atom, list[Candidate]] = {atom: [] for atom in ATOMS}
    for c in shapes:
        per_atom[c.atom].append(c)
    variants = []
    for atom, built in per_atom.items():
        for vs in atom.scale_vectors:
            first = next((c for c in built if c.vs == vs and c.a_major == c.b_major == "K"), None)
            if first is not None:
                variants += [v for v in type_candidates(atom, first.m, first.n, vs) if v.id != first.id]
    return per_atom, buildable(tc, variants)


def _layout_subset(per_atom: dict[Atom, list[Candidate]]) -> list[Candidate]:
    """The configurations whose TMEM fragments are printed: per atom and M, the smallest and the
    largest N CUTLASS builds (K-major), and N = 64, 128, 192, 256 for the K = 96 atoms."""
    chosen = []
    for atom, built in per_atom.items():
        kk = [c for c in built if c.a_major == c.b_major == "K"]
        for vs in atom.scale_vectors:
            for m in sorted({c.m for c in kk if c.vs == vs}):
                ns = sorted({c.n for c in kk if c.vs == vs and c.m == m})
                wanted = {64, 128, 192, 256} & set(ns) if atom.k96 else {ns[0], ns[-1]}
                chosen += [c for c in kk if c.vs == vs and c.m == m and c.n in wanted]
    return chosen


def cross_check() -> dict:
    """Run every comparison; the JSON-able report (raises PeersUnavailable when it cannot run)."""
    tc = toolchain.toolchain()
    per_atom, variants = mma_configurations(tc)
    shapes = [c for built in per_atom.values() for c in built]
    layouts = _layout_subset(per_atom)
    layout_ids = {c.id for c in layouts}
    masks = buildable_fragments(tc, layouts)
    descriptors = toolchain.run(toolchain.build(tc, "mma", _configs_header(
        [_mma_line(c, 0) for c in shapes + variants if c.id not in layout_ids])))
    fragments = toolchain.run(toolchain.build(tc, "mma", _configs_header([_mma_line(c, masks[c.id]) for c in layouts])))
    records = {r["id"]: r for r in descriptors + fragments}
    areas = {name: Area(name, what) for name, what in AREAS.items()}
    for c in shapes + variants:
        areas["idesc"].configurations += 1
        areas["legality"].configurations += 1
        compare_descriptor(areas["idesc"], areas["legality"], c, records[c.id])
    for c in layouts:
        record = records[c.id]
        for name, bit in FRAGMENTS.items():
            if name in _fragment_calls(c) and not masks[c.id] & bit:
                areas[FRAGMENT_AREAS[name]].differ(f"{name}.unbuildable", c.id, f"CUTLASS does not build its {name} fragment")
        if "d" in record:
            compare_d(areas["tmem.d"], c, record)
        if "a" in record:
            compare_a(areas["tmem.a"], c, record)
        if "e" in record:
            compare_metadata(areas["tmem.metadata"], c, record)
        if "sfa" in record:
            compare_scale_factors(areas["tmem.scale"], c, record)
    smem = smem_configurations()
    for record in toolchain.run(toolchain.build(tc, "smem", _configs_header([s.line() for s in smem]))):
        compare_smem(areas["smem"], next(s for s in smem if s.id == record["id"]), record)
    ldst, cp, splits = copy_atoms(tc)
    copies = toolchain.run(toolchain.build(tc, "copy", _configs_header(
        [f'PEERS_LDST("{a}", {str("LOAD" in a).lower()}, {a})' for a in ldst] + [f'PEERS_CP("{a}", {a})' for a in cp])))
    lane_stride = next(r["lane_stride"] for r in copies if r["area"] == "tmem")
    for record in copies:
        if record["area"] == "ldst":
            compare_ldst(areas["ldst"], record, lane_stride, splits)
        elif record["area"] == "cp":
            compare_cp(areas["cp"], record)
    return report(list(areas.values()), {atom.name: len(built) for atom, built in per_atom.items()}, tc)


FRAGMENT_AREAS = {"d": "tmem.d", "a": "tmem.a", "e": "tmem.metadata", "sf": "tmem.scale"}
AREAS = {
    "idesc": "instruction descriptor words CUTLASS issues (MMA_Traits::idesc_ and the runtime words with sparsity selector, "
             "scale-factor IDs and the K = 96 bit) against conformance/core/encoding/idesc.py",
    "legality": "every configuration CUTLASS builds, as the instruction it issues, against the legality model (Table 39 shapes, "
                "types, transposition, scale vectors)",
    "tmem.d": "D fragments (FrgTypeC) against the data-path layouts A-G (conformance/core/layouts/tmem.py)",
    "tmem.a": "A in TMEM (FrgTypeA of the TS atoms) against split_lanes / a_element_offsets",
    "tmem.metadata": "sparsity metadata (FrgTypeE) against meta_positions",
    "tmem.scale": "scale factors (FrgTypeSFA/SFB in the collectives' shapes; K = 96 as the sm_103 collective indexes them) "
                  "against scale_factor_positions",
    "smem": "shared-memory descriptors of every k-block and the element addresses of the canonical layouts they select",
    "ldst": "every tcgen05.ld/st atom: the TMEM bit of every register bit",
    "cp": "every tcgen05.cp atom: the bits each TMEM lane receives",
}


def report(areas: list[Area], shapes_per_atom: dict[str, int], tc: toolchain.Toolchain) -> dict:
    expected = {(e.area, e.key): e for e in EXPECTED_DIFFERENCES}
    out_areas = []
    unexplained = 0
    for area in areas:
        groups: dict[str, list[Difference]] = {}
        for d in area.differences:
            groups.setdefault(d.key, []).append(d)
        entries = []
        for key, diffs in sorted(groups.items()):
            e = expected.get((area.name, key))
            if e is None:
                unexplained += len(diffs)
            entries.append({"key": key, "count": len(diffs), "expected": e is not None,
                            "assumption": e.assumption if e else None, "examples": [f"{d.id}: {d.detail}" for d in diffs[:3]]})
        out_areas.append({"area": area.name, "what": area.what, "configurations": area.configurations, "facts": area.facts,
                          "differences": entries})
    return {"cutlass": tc.cutlass_version, "compiler": tc.compiler, "areas": out_areas, "shapes_per_atom": shapes_per_atom,
            "unexplained": unexplained,
            "expected": [e.__dict__ for e in EXPECTED_DIFFERENCES]}


