"""Probes of the matrix instructions: tcgen05.mma (sm_100a / sm_103a) and wgmma (sm_90a).

Operands sit K-major without swizzle from shared-memory byte 0 (A, then B at the next 1024-byte
boundary) unless the probe is about the layout; D is f32 at TMEM lane 0, column 0, with
enable-input-d false, so D = A B^T. Values are exact inputs (DESIGN.md principle 3) chosen so
that D names what the hardware read: ones, distinct rows, one-hot (identity) B that copies A
into D, powers of two that sum to a binary record of the scale factors selected.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.tmem import a_element_offsets, scale_factor_groups
from tcgen05_conformance.core.program import MatrixImage, Program
from tcgen05_conformance.probes.images import Images, codes, kmajor
from tcgen05_conformance.probes.probe import Probe

UE8M0_ONE = 127  # ue8m0 code of 2^0; code 127 + e is 2^e
E2M1_POSITIVE = np.array([1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_VALUES = np.concatenate([[0.0], E2M1_POSITIVE, [0.5], -E2M1_POSITIVE, [-0.5]])
META_2_4 = isa.SPARSITY_METADATA_VALUES["2:4"]
STORED_PAIR = (1.0, 16.0)  # each sparse chunk's two stored A elements


def quarters(rows: int, cols: int, p: int, q: int) -> np.ndarray:
    """A fixed pattern of multiples of 1/4 in [-2, 2]: ((r p + c q) mod 17 - 8) / 4."""
    r, c = np.indices((rows, cols))
    return ((r * p + c * q) % 17 - 8) / 4


def one_hot_chunks(chunks: int, elements: int = 4) -> np.ndarray:
    """B [chunks, chunks x elements] for a 2:4 sparse MMA: column j is 2^i at position i of chunk
    j, 0 elsewhere, so D column q = 2^i0 a0 + 2^i1 a1: chunk q's metadata as the row read it."""
    k = np.arange(chunks * elements)
    return np.where(k[None, :] // elements == np.arange(chunks)[:, None], 2.0 ** (k % elements), 0.0)


def chunk_value(meta: int) -> float:
    """D of a one-hot chunk column for metadata `meta` and stored pair STORED_PAIR."""
    return STORED_PAIR[0] * 2.0 ** (meta & 3) + STORED_PAIR[1] * 2.0 ** (meta >> 2)


def idesc_word(kind: str, m: int, n: int, atype: str, btype: str, **fields) -> int:
    return idesc_codec.encode(kind, idesc_codec.InstrDescriptor(m=m, n=n, atype=atype, btype=btype, **fields))


def operands(images: Images, a: list[np.ndarray] | None, b: list[np.ndarray], atype: str, btype: str,
             padded: bool = False) -> tuple[int, int]:
    """A (per CTA, codes [rows, K]; None: A is in TMEM) K-major from byte 0 and B (per CTA, codes
    [N / CTAs, K]) K-major at the next 1024-byte boundary; their descriptor words."""
    a_word = 0
    if a is not None:
        a_desc = kmajor(0, a[0].shape[0])
        for cta, a_codes in enumerate(a):
            images.smem_operand(cta, a_desc, True, a_codes, atype, padded)
        a_word = sdesc_codec.encode(a_desc)
    b_desc = kmajor(images.end(), b[0].shape[0])
    for cta, b_codes in enumerate(b):
        images.smem_operand(cta, b_desc, True, b_codes, btype, padded)
    return a_word, sdesc_codec.encode(b_desc)


def f16_mma(images: Images, a: np.ndarray, b: np.ndarray, m: int, dtype: str = "f32", **fields) -> Tcgen05Mma:
    """A .kind::f16 MMA of f16 values A [M / CTAs, 16] and B [N / CTAs, 16], the same in every CTA."""
    ctas = images.tmem.shape[0]
    a_word, b_word = operands(images, [codes("f16", a)] * ctas, [codes("f16", b)] * ctas, "f16", "f16")
    n = b.shape[0] * ctas
    idesc = idesc_word("f16", m, n, "f16", "f16", dtype=dtype, max_shift=fields.pop("max_shift", 0))
    return Tcgen05Mma(kind="f16", cta_group=ctas, idesc=idesc, a_desc=a_word, b_desc=b_word,
                      enable_input_d=fields.pop("enable_input_d", False), **fields)


def a_in_tmem(images: Images, column: int, lanes: np.ndarray, element_codes: np.ndarray, element_bits: int,
              container: int) -> None:
    """A rows [rows, K] at the given lanes from `column` in every CTA: `container`-bit containers
    packed from the low bits of each word, each code at bit 0 of its container (for 4/6-bit codes
    not where the oracle reads them: the A-F4F6-TMEM-CONTAINER probe)."""
    k = element_codes.shape[1]
    columns, offsets = a_element_offsets(k, container, container)
    for cta in range(images.tmem.shape[0]):
        images.tmem_fields(cta, np.broadcast_to(lanes[:, None], element_codes.shape), column + columns[None, :],
                           offsets[None, :], element_codes, element_bits)


# --- zero-column mask, types, descriptors ----------------------------------------------------


def zcmask_spans() -> Probe:
    images = Images(columns=64)
    op = f16_mma(images, np.ones((128, 16)), np.ones((64, 16)), 128, ws=True,
                 zero_column_mask=zcmask_codec.encode(zcmask_codec.ZeroColumnMask(skip_span=0, use_span=2)))
    return Probe(
        "A-ZCMASK-SPANS", images.program("sm_100a", (op,)),
        "Table 45's field descriptions and its worked examples give the skip and use spans opposite meanings.",
        ".ws M=128 N=64 f16, A = B = 1, mask with skip span 0, use span 2, fs0 = 0: the examples' runs "
        "(use span + 1 = 3 columns using B, then skip span + 1 = 1 zeroed) give D columns 4i..4i+2 = K = 16 and "
        "column 4i+3 = 0.",
        "the field descriptions (1 column using B, 3 zeroed) give D column 4i = 16 and columns 4i+1..4i+3 = 0.",
    )


def mixed_f16() -> Probe:
    images = Images(columns=32)
    a_word, b_word = operands(images, [codes("f16", np.full((128, 16), 1.5))], [codes("bf16", np.full((16, 16), 1.5))],
                              "f16", "bf16")
    op = Tcgen05Mma(kind="f16", idesc=idesc_word("f16", 128, 16, "f16", "bf16"), a_desc=a_word, b_desc=b_word,
                    enable_input_d=False)
    return Probe(
        "A-MIXED-F16", images.program("sm_100a", (op,)),
        "May A be f16 while B is bf16 under .kind::f16 (Table 39 has one atype/btype column)?",
        "no (rule idesc.abtype-mixed); the oracle still computes the mixed product, A = 1.5 (f16 0x3E00) times "
        "B = 1.5 (bf16 0x3FC0): D = 16 x 2.25 = 36 everywhere, the result if mixing is honoured.",
        "B read as f16 (0x3FC0 = 1.9375): D = 46.5; A read as bf16 (0x3E00 = 0.125): D = 3; a fault: mixing is refused.",
        breaks="idesc.abtype-mixed",
    )


def max_shift() -> Probe:
    images = Images(columns=64)
    op = f16_mma(images, quarters(128, 16, 7, 3), quarters(64, 16, 5, 11), 128, max_shift=3)
    return Probe(
        "A-MAXSHIFT", images.program("sm_100a", (op,)),
        "Are Table 42 bits 30-31 (maximum B-reuse shift in .ws) read by a non-.ws MMA?",
        "they must be 0 outside .ws (rule idesc.max-shift); the oracle ignores them: D = A B^T of the patterned "
        "A [128, 16], B [64, 16] (distinct columns, so a reuse shift would show).",
        "a fault, or D differing from A B^T, shows the bits are read.",
        breaks="idesc.max-shift",
    )


def sdesc_fixed53() -> Probe:
    images = Images(columns=32)
    op = f16_mma(images, quarters(128, 16, 7, 3), quarters(16, 16, 5, 11), 128)
    op = dataclasses.replace(op, a_desc=op.a_desc | 1 << 53)
    return Probe(
        "A-SDESC-FIXED53", images.program("sm_100a", (op,)),
        "Table 40 prints bits 53-60 as \"Fixed constant value of 0xb00000000\".",
        "eight zero bits (rule sdesc.fixed); A's descriptor has bit 53 set and the oracle decodes the address fields "
        "only: D = A B^T as if it were clear.",
        "a fault confirms the bits must be 0; a changed D shows they select something.",
        breaks="sdesc.fixed",
    )


def lane_align() -> Probe:
    images = Images(columns=32)
    rows = np.repeat((np.arange(128)[:, None] + 1) / 4, 16, axis=1)
    op = f16_mma(images, rows, np.ones((16, 16)), 128, d_tmem=taddr_codec.encode(32, 0))
    return Probe(
        "A-LANE-ALIGN", images.program("sm_100a", (op,)),
        "Is lane 32 (the start of another warp quarter) a \"lane alignment 0\" D address?",
        "alignment is taken within a 32-lane quarter, so the legality model accepts D at lane 32; the 128 rows of "
        "M = 128 from lane 32 run past lane 127, and the oracle refuses the program.",
        "a fault (lane 32 is not allowed), or D row r (value 4 (r + 1), A row r being (r + 1) / 4) at a shifted or "
        "wrapped lane.",
        refusal="D reaches TMEM lane 159, beyond lane 127",
    )


# --- block scaling with K = 96 (sm_103a) ----------------------------------------------------------


def k96_program(kind: str, scale_vec: str | None, a_scales: np.ndarray | None, sfa_id: int = 0, n: int = 16,
                cta_group: int = 2) -> tuple[Images, Tcgen05Mma]:
    """A = B = 1 (e2m1), K = 96, M = 128 per CTA; the scale_A bytes [128, 8] of every row as given
    (None: left for the caller), every scale_B 1."""
    images = Images(ctas=cta_group, columns=32)
    ones = codes("e2m1", np.ones((128, 96)))
    a_word, b_word = operands(images, [ones] * cta_group, [ones[:n // cta_group]] * cta_group, "e2m1", "e2m1")
    sfa, sfb = n, n + 8
    for cta in range(cta_group):
        if a_scales is not None:
            images.k96_scale_bytes(cta, sfa, a_scales, scale_factor_groups("A", 128, 1, True))
        images.k96_scale_bytes(cta, sfb, np.full((n, 8), UE8M0_ONE), scale_factor_groups("B", n, 1, True))
    idesc = idesc_word(kind, 128 * cta_group, n, "e2m1", "e2m1", scale_type="ue8m0", sfa_id=sfa_id, k96=True)
    return images, Tcgen05Mma(kind=kind, cta_group=cta_group, block_scale=True, scale_vec=scale_vec, idesc=idesc, a_desc=a_word,
                              b_desc=b_word, scale_a_tmem=taddr_codec.encode(0, sfa), scale_b_tmem=taddr_codec.encode(0, sfb),
                              enable_input_d=False)


def k96_scalevec() -> Probe:
    images, op = k96_program("mxf4nvf4", "scale_vec::2X", np.broadcast_to(UE8M0_ONE + np.arange(8), (128, 8)))
    return Probe(
        "A-K96-SCALEVEC", images.program("sm_103a", (op,)),
        "Does .scale_vec::2X hold for K = 96 (Table 54: \"all supported values of K\"), and which factors does it read?",
        "no: with K = 96 only .block32 and .block16 exist (rule mma.scale-vec.k96), so the oracle refuses it.",
        "if it runs, scale_A factor b of each row's 8 being 2^b and scale_B 1, each D element is the sum over the "
        "factors read of (elements each covers) x 2^b: factors 0-1 over 48 elements give 144, factors 0-2 over 32 "
        "give 224.",
        breaks="mma.scale-vec.k96",
        refusal="no Table 54/55 scale vector for mxf4nvf4 scale_vec::2X K=96",
    )


def sfid_k96() -> Probe:
    images, op = k96_program("mxf4", "block32", np.broadcast_to(UE8M0_ONE + np.arange(8), (128, 8)), sfa_id=1)
    return Probe(
        "A-SFID-K96", images.program("sm_103a", (op,)),
        "Are the scale-factor IDs 0 or 2 (Table 44) or 0-3 (9.7.16.10.7.2.4) for block32 with K = 96?",
        "0-3: SFA_ID 1 selects scale_A factors 1-3 (factor b holds 2^b), one per 32-element block: D = 32 x (2 + 4 + 8) = 448.",
        "a fault (ID 1 is not allowed), or another factor set, named by D / 32 in binary (factors 0-2: 224; 2-4: 896).",
    )


SF_K96_CELLS = 8  # TMEM columns of the scale_A region the A-SF-K96-LAYOUT probe marks


def sf_k96_layout() -> Probe:
    images, op = k96_program("mxf4nvf4", "block16", None, sfa_id=2)
    column, byte = np.meshgrid(np.arange(SF_K96_CELLS), np.arange(4), indexing="ij")
    for cta in range(2):  # cell (column c, byte y) of every lane holds 2^(4c + y)
        lanes = np.broadcast_to(np.arange(128)[:, None, None], (128, *column.shape))
        images.tmem_fields(cta, lanes, np.broadcast_to(16 + column, lanes.shape), np.broadcast_to(8 * byte, lanes.shape),
                           np.broadcast_to(UE8M0_ONE + 4 * column + byte, lanes.shape), 8)
    return Probe(
        "A-SF-K96-LAYOUT", images.program("sm_103a", (op,)),
        "Where do the 3 or 6 scale factors of a K = 96 row sit in TMEM (Figures 234-239, 243-258)?",
        "CUTLASS's sm_103 collective: factor f of row r at column r // 32 + 4 ((SF_ID + f) // 4), byte (SF_ID + f) % 4 "
        "from the scale_A address. Every lane's cell (column c, byte y) of that region holds 2^(4c + y); with SF_ID 2, "
        "block16 (16 elements a factor) and A = B = 1, row r of row group g = r // 32 reads cells (g, 2), (g, 3), "
        "(g + 4, 0..3): D row r = 16 x (2^(4g+2) + 2^(4g+3) + 2^(4g+16) + ... + 2^(4g+19)) = 15728832 x 2^(4g).",
        "the earlier reading (two columns per 32 rows, factor f at byte SF_ID + f of their 8 bytes) reads cells "
        "(2g, 2), (2g, 3), (2g + 1, 0..3): D row r = 4032 x 2^(8g). D / 16 in binary names the cells read.",
    )


def k96_shapes() -> Probe:
    images, op = k96_program("mxf4", "block32", np.full((128, 8), UE8M0_ONE), cta_group=1)
    return Probe(
        "A-K96-SHAPES", images.program("sm_103a", (op,)),
        "Does K = 96 exist for cta_group::1 M = 128 (and cta_group::2 M = 128), which CUTLASS's SM103 atoms build but "
        "the text copy of Table 39 prints only for cta_group::2 M = 256?",
        "yes (CUTLASS's reading): cta_group::1 M = 128 N = 16, K = 96, A = B = 1 and every scale factor 1: "
        "D = 96 everywhere.",
        "the earlier reading (K1 = 96 only for M = 256): a fault, or D = 64 if the K bit is ignored.",
    )


def lbo_absolute_split() -> Probe:
    images = Images(ctas=2, columns=128, smem_fill=0x11)  # unread bytes: e2m1 0.5 in both nibbles
    k = np.arange(96)
    a = np.broadcast_to(np.where(k < 64, 1, -1) * E2M1_POSITIVE[k % 6], (128, 96))
    a_desc = sdesc_codec.SmemDescriptor(0, 16 * 1024, 1024, "128B", lbo_absolute=True)
    b_desc = kmajor(32 * 1024, 48, "128B")
    for cta in range(2):
        images.smem_operand(cta, a_desc, True, codes("e2m1", a), "e2m1")
        images.smem_operand(cta, b_desc, True, codes("e2m1", np.eye(96)[48 * cta:48 * (cta + 1)]), "e2m1")
        images.k96_scale_bytes(cta, 96, np.full((128, 8), UE8M0_ONE), scale_factor_groups("A", 128, 1, True))
        images.k96_scale_bytes(cta, 104, np.full((96, 8), UE8M0_ONE), scale_factor_groups("B", 96, 1, True))
    op = Tcgen05Mma(kind="mxf4", cta_group=2, block_scale=True, scale_vec="block32",
                    idesc=idesc_word("mxf4", 256, 96, "e2m1", "e2m1", scale_type="ue8m0", k96=True),
                    a_desc=sdesc_codec.encode(a_desc), b_desc=sdesc_codec.encode(b_desc),
                    scale_a_tmem=taddr_codec.encode(0, 96), scale_b_tmem=taddr_codec.encode(0, 104), enable_input_d=False)
    return Probe(
        "A-LBO-ABSOLUTE-SPLIT", images.program("sm_103a", (op,)),
        "In the absolute leading-dimension mode (K = 48 bytes), which bytes come from the start address and which "
        "from the LBO address?",
        "the first 32 bytes from the start address, the last 16 from the LBO address: with B the identity, D = A, "
        "columns 0-63 positive (written at the start address) and 64-95 negative (at the LBO address).",
        "another split moves the sign change (one 16-byte chunk from the start address: negative from column 32); "
        "a D of 0.5 marks a byte read outside both (every unwritten byte holds 0.5).",
    )


# --- sparsity metadata -------------------------------------------------------------------------


def sparse_selectors() -> Program:
    """Four sparse f16 M=128 N=8 MMAs, selectors 0-3, D at columns 8s; metadata column c (of 7,
    from column 32) holds 2:4 value META_2_4[c] in every nibble."""
    images = Images(columns=64)
    a_word, b_word = operands(images, [codes("f16", np.tile(STORED_PAIR, (128, 8)))], [codes("f16", one_hot_chunks(8))],
                              "f16", "f16")
    for c, value in enumerate(META_2_4):
        images.tmem[0, :, 32 + c] = value * 0x11111111
    ops = tuple(
        Tcgen05Mma(kind="f16", sparse=True, idesc=idesc_word("f16", 128, 8, "f16", "f16", sparse=True, sparse_selector=s),
                   a_desc=a_word, b_desc=b_word, d_tmem=taddr_codec.encode(0, 8 * s), sp_meta_tmem=taddr_codec.encode(0, 32),
                   enable_input_d=False)
        for s in range(4))
    return images.program("sm_100a", ops)


def _column_values() -> str:
    return ", ".join(f"{chunk_value(v):g}" for v in META_2_4)


def spsel_f16_tf32() -> Probe:
    return Probe(
        "A-SPSEL-F16-TF32", sparse_selectors(),
        "Which sparsity-selector values are meaningful for .kind::f16 / .kind::tf32 (Figures 262-265 only)?",
        "all of 0-3: the MMA with selector s reads metadata column s; with stored pairs (1, 16) and B one-hot per "
        f"chunk, D column q = 2^i0 + 16 x 2^i1 of the metadata read, {_column_values()} for metadata columns 0-6, "
        "so D columns 8s..8s+7 = 33, 65, 129, 66 for s = 0-3.",
        "a fault, or the value of another column, for a selector the kind does not support.",
    )


def spsel_columns() -> Probe:
    return Probe(
        "A-SPSEL-COLUMNS", sparse_selectors(),
        "Which TMEM sub-columns does the sparsity selector pick (Figures 262-265)?",
        "selector s adds s columns to the metadata address: D columns 8s..8s+7 hold column s's value; columns 0-6 "
        f"give {_column_values()}, so selectors 0-3 give 33, 65, 129, 66.",
        "other sub-columns give their columns' values (2s: 33, 129, 130, 132; one column for all: 33 throughout).",
    )


def spmeta_half() -> Probe:
    images = Images(columns=32)
    a_word, b_word = operands(images, [codes("f16", np.tile(STORED_PAIR, (64, 8)))], [codes("f16", one_hot_chunks(8))],
                              "f16", "f16")
    lanes, nibbles = np.indices((128, 8))
    meta = np.array(META_2_4)[(lanes + nibbles) % len(META_2_4)]
    images.tmem[0, :, 8] = (meta << (4 * nibbles)).sum(axis=1)
    op = Tcgen05Mma(kind="f16", sparse=True, idesc=idesc_word("f16", 64, 8, "f16", "f16", sparse=True),
                    a_desc=a_word, b_desc=b_word, sp_meta_tmem=taddr_codec.encode(0, 8), enable_input_d=False)
    return Probe(
        "A-SPMETA-HALF", images.program("sm_100a", (op,)),
        "Where is the sparsity metadata of the half data path (layouts C, F; not in CUTLASS)?",
        "M=64 sparse f16, metadata nibble q of lane L = META[(L + q) mod 7]: row r reads its D lane "
        "L = r % 16 + 32 (r // 16), chunk q at bits 4q..4q+3, so D row r column q = 2^i0 + 16 x 2^i1 of "
        "META[(L + q) mod 7] (B one-hot per chunk, stored pairs (1, 16)).",
        "another lane or bit map (e.g. CUTLASS's 4x1 tmem_e_frg, rows r and r + 8 sharing a lane) gives other "
        "values, which name the (lane, nibble) each row read.",
    )


# --- TMEM data-path layouts and CTA pairs ---------------------------------------------------------


def tmem_own_lane() -> Probe:
    images = Images(ctas=2, columns=32)
    _, b_word = operands(images, None, [codes("f16", np.ones((16, 16)))] * 2, "f16", "f16")
    lanes = np.arange(128)
    a_in_tmem(images, 16, lanes, codes("f16", np.repeat(np.where(lanes < 64, 1.0, 2.0)[:, None], 16, axis=1)), 16, 16)
    op = Tcgen05Mma(kind="f16", cta_group=2, idesc=idesc_word("f16", 128, 32, "f16", "f16"), b_desc=b_word,
                    a_tmem=taddr_codec.encode(0, 16), enable_input_d=False)
    return Probe(
        "A-TMEM-OWN-LANE", images.program("sm_100a", (op,)),
        "Which lanes does the 2x2 data path read A in TMEM from for its second column half?",
        "M=128 cta_group::2 TS, N = 32, A = 1 in lanes 0-63 and 2 in lanes 64-127, B = 1: each half reads its own "
        "lanes: D columns 0-15 (lanes 0-63) = 16, columns 16-31 (lanes 64-127, columns 0-15) = 32, in both CTAs.",
        "A read from lanes 0-63 only (one copy): all of D = 16.",
    )


def layout_e_2x2() -> Probe:
    images = Images(columns=32)
    op = f16_mma(images, np.ones((64, 16)), np.repeat((np.arange(64)[:, None] + 1) / 4, 16, axis=1), 64, ws=True)
    return Probe(
        "A-LAYOUT-E-2x2", images.program("sm_100a", (op,)),
        "Is layout E (M=64 .ws) 2x2, as CUTLASS has it, or the \"2x3\" 9.7.16.10.5 prints?",
        "2x2: M=64 .ws N=64, A = 1, B column j = (j + 1) / 4, so D column j = 4 (j + 1): lanes 0-63 hold columns "
        "0-31 and lanes 64-127 columns 32-63, both at TMEM columns 0-31.",
        "any other split puts the values 132..256 of columns 32-63 at other lanes or columns.",
    )


def cta_pair_split() -> Probe:
    images = Images(ctas=2, columns=32)
    ones = codes("f16", np.ones((128, 16)))
    a_word, b_word = operands(images, [ones] * 2, [ones[:16], codes("f16", np.zeros((16, 16)))], "f16", "f16")
    op = Tcgen05Mma(kind="f16", cta_group=2, idesc=idesc_word("f16", 256, 32, "f16", "f16"), a_desc=a_word,
                    b_desc=b_word, enable_input_d=False)
    return Probe(
        "A-CTA-PAIR-SPLIT", images.program("sm_100a", (op,)),
        "With cta_group::2, which part of A, B and D does each CTA hold?",
        "M=256 N=32, A = 1, CTA 0's B = 1, CTA 1's B = 0: B's columns 16-31 come from CTA 1, so D columns 0-15 = "
        "16 and 16-31 = 0 in both CTAs.",
        "each CTA using its own B for all columns: CTA 0's D = 16, CTA 1's = 0; B split along K: D = 8 everywhere.",
    )


def dol_cta2() -> Probe:
    images = Images(ctas=2, columns=32, tmem_fill=codes("f32", -1.0).item())
    op = f16_mma(images, np.ones((128, 16)), np.ones((16, 16)), 256, disable_output_lane=(0, 0, 0, 0, 1, 0, 0, 0))
    return Probe(
        "A-DOL-CTA2", images.program("sm_100a", (op,)),
        "Which lanes do the 256 disable-output-lane bits of cta_group::2 name?",
        "bits 0-127 the issuing CTA's (CTA 0's) lanes, 128-255 the peer's: with only bit 128 set, CTA 1's lane 0 keeps "
        "-1.0 (the initial TMEM) and every other D element of M=256 N=32 is 16.",
        "CTA 0's lane 0 keeps -1.0 (bits counted from the peer), or no lane is kept (bits 128-255 ignored).",
    )


def sparse_cta2_m128() -> Probe:
    images = Images(ctas=2, columns=64)
    rows = np.arange(128)[:, None] + 1.0
    b = np.arange(32)[:, None] + 1.0
    a_word, b_word = operands(images, [codes("f16", np.repeat(rows[64 * c:64 * (c + 1)], 16, axis=1)) for c in range(2)],
                              [codes("f16", np.repeat(b[16 * c:16 * (c + 1)], 32, axis=1)) for c in range(2)], "f16", "f16")
    images.tmem[:, :, 32:34] = META_2_4[0] * 0x11111111  # every nibble 0b0100: stored elements at chunk positions 0, 1
    op = Tcgen05Mma(kind="f16", cta_group=2, sparse=True, idesc=idesc_word("f16", 128, 32, "f16", "f16", sparse=True),
                    a_desc=a_word, b_desc=b_word, sp_meta_tmem=taddr_codec.encode(0, 32), enable_input_d=False)
    return Probe(
        "A-SPARSE-CTA2-M128", images.program("sm_100a", (op,)),
        "Which data-path layout holds D of a sparse cta_group::2 M = 128 MMA: layout C (the ISA's table) or the dense "
        "2x2 layout B (CUTLASS's tmem_frg_2sm, never exercised: its metadata fragment refuses M = 64 per CTA)?",
        "layout C: sparse f16 N = 32, A row r (of 128; CTA c holds rows 64c..) all r + 1, B column j all j + 1, metadata "
        "0b0100 everywhere: D row r column j = 16 (r + 1)(j + 1), CTA c's local row r at lane (r % 16) + 32 (r // 16), "
        "column j, lanes 16-31, 48-63, 80-95, 112-127 untouched.",
        "the 2x2 layout: local row r at lane r for columns 0-15 and lane 64 + r for columns 16-31 (TMEM columns 0-15).",
    )


def blockscaled_idesc_bits() -> Probe:
    images = Images(columns=64)
    a_word, b_word = operands(images, [codes("e4m3", np.tile(STORED_PAIR, (128, 16)))], [codes("e4m3", one_hot_chunks(16))],
                              "e4m3", "e4m3")
    for c, value in enumerate(META_2_4):  # metadata column 32 + c: META_2_4[c] in every nibble
        images.tmem[0, :, 32 + c] = value * 0x11111111
    images.tmem[0, :, 48:56] = 0x7F7F7F7F  # every scale factor 1 (ue8m0), wherever it is read
    idesc = idesc_word("mxf8f6f4", 128, 16, "e4m3", "e4m3", sparse=True, scale_type="ue8m0") | 1
    op = Tcgen05Mma(kind="mxf8f6f4", sparse=True, block_scale=True, idesc=idesc, a_desc=a_word, b_desc=b_word,
                    sp_meta_tmem=taddr_codec.encode(0, 32), scale_a_tmem=taddr_codec.encode(0, 48),
                    scale_b_tmem=taddr_codec.encode(0, 52), enable_input_d=False)
    return Probe(
        "A-BLOCKSCALED-IDESC-BITS", images.program("sm_100a", (op,)),
        "Tables 43/44 call bits 0-1 of a block-scaled descriptor reserved (and hold M >> 7 in bits 27-28, a 2-bit B "
        "type for mxf4); CUTLASS's InstrDescriptorBlockScaled has a sparsity selector in bits 0-1, M >> 4 in 24-28 and "
        "a 3-bit B type. Does the selector exist for sparse block-scaled MMAs?",
        "reserved (rule idesc.reserved); the oracle ignores the bits: sparse mxf8f6f4 M=128 N=16 with bits 0-1 = 1, "
        f"stored pairs (1, 16), B one-hot per chunk, metadata column 32 + c holding META[c]: D columns 0-7 = "
        f"{chunk_value(META_2_4[0]):g} and 8-15 = {chunk_value(META_2_4[1]):g} (columns 32-33, as selector 0).",
        "CUTLASS's selector: the metadata read one column on (A-SPSEL-COLUMNS): D columns 0-7 = "
        f"{chunk_value(META_2_4[1]):g} and 8-15 = {chunk_value(META_2_4[2]):g}; a fault shows the bits must be 0. "
        "(M >> 4 and the 3-bit B type give the same bits as the ISA's fields for every legal M and type.)",
        breaks="idesc.reserved",
    )


# --- shared-memory layouts -------------------------------------------------------------------------


def sw128_32b() -> Probe:
    images = Images(columns=32)
    j, k = np.indices((32, 8))
    b = 1.0 + j + 32 * k
    b_desc = sdesc_codec.SmemDescriptor(0, 1024, 512, "128B_base32B")  # one MN atom: LBO unused
    images.smem_operand(0, b_desc, False, codes("tf32", b), "tf32")
    a_desc = kmajor(images.end(), 128)
    images.smem_operand(0, a_desc, True, codes("tf32", np.eye(128, 8)), "tf32")
    op = Tcgen05Mma(kind="tf32", idesc=idesc_word("tf32", 128, 32, "tf32", "tf32", transpose_b=True),
                    a_desc=sdesc_codec.encode(a_desc), b_desc=sdesc_codec.encode(b_desc), enable_input_d=False)
    return Probe(
        "A-SW128-32B", images.program("sm_100a", (op,)),
        "What is the MN-major canonical layout of 128B swizzle with 32B atomicity (the ISA figure is missing)?",
        "CUTLASS's Layout_MN_SW128_32B_Atom: 128-byte K rows, 4 per 512-byte atom, Swizzle<2,5,2>, K groups of 4 at "
        "SBO; B (N=32, K=8: two atoms) holds 1 + j + 32k at (j, k) and A is the identity, so D rows 0-7 read B back: "
        "D[r][j] = 1 + j + 32r, rows 8-127 zero.",
        "another atom (the self-overlapping ((8,n),(4,k)):((1,LBO),(4,SBO)) of CUTLASS's comment, or 8 K rows) puts "
        "other values, naming the 16-byte chunk read, in D rows 0-7.",
    )


def f4f6_smem_padded() -> Probe:
    images = Images(columns=32, smem_fill=0xFF)  # the padding bytes: 0xFF
    r, k = np.indices((128, 32))
    a = E2M1_VALUES[(r + 3 * k) % len(E2M1_VALUES)]
    a_word, b_word = operands(images, [codes("e2m1", a)], [codes("e2m1", np.eye(32))], "e2m1", "e2m1", padded=True)
    op = Tcgen05Mma(kind="f8f6f4", idesc=idesc_word("f8f6f4", 128, 32, "e2m1", "e2m1"), a_desc=a_word, b_desc=b_word,
                    enable_input_d=False)
    return Probe(
        "A-F4F6-SMEM-PADDED", images.program("sm_100a", (op,)),
        "How are 4-bit f8f6f4 elements \"contiguously packed along with padding\" in shared memory?",
        "16 elements in the first 8 bytes of each 16-byte chunk, padding (here 0xFF) ignored: with B the identity, D = A "
        "(A[r][k] = E2M1_VALUES[(r + 3k) mod 15]).",
        "the padding read as elements (32 per chunk, or elements spread over the chunk) shows -6 (code 0xF) or shifted "
        "values in D.",
    )


def f4f6_tmem_container() -> Probe:
    images = Images(columns=64)
    r, k = np.indices((128, 32))
    a = codes("e2m1", E2M1_VALUES[(r + 3 * k) % len(E2M1_VALUES)])
    _, b_word = operands(images, None, [codes("e2m1", np.eye(32))], "e2m1", "e2m1", padded=True)
    a_in_tmem(images, 32, np.arange(128), a, 4, 8)
    op = Tcgen05Mma(kind="f8f6f4", idesc=idesc_word("f8f6f4", 128, 32, "e2m1", "e2m1"), b_desc=b_word,
                    a_tmem=taddr_codec.encode(0, 32), enable_input_d=False)
    return Probe(
        "A-F4F6-TMEM-CONTAINER", images.program("sm_100a", (op,)),
        "Where does a 4-bit A element sit in its 8-bit TMEM container (Figures 199-201)?",
        "at bits 2-5, where tcgen05.cp decompression puts it; A's codes are written at bits 0-3 here, so the oracle "
        "reads code >> 2: with B the identity, D[r][j] = the e2m1 value of (A's code >> 2).",
        "bits 0-3: D = A (A[r][k] = E2M1_VALUES[(r + 3k) mod 15]).",
    )


def f6_tmem_container() -> Probe:
    images = Images(columns=64)
    r, k = np.indices((128, 32))
    a = ((r + 3 * k) % 32).astype(np.uint32)  # e3m2 codes 0-31: every positive value, no NaN in the format
    _, b_word = operands(images, None, [codes("e3m2", np.eye(32))], "e3m2", "e3m2", padded=True)
    a_in_tmem(images, 32, np.arange(128), a, 6, 8)
    op = Tcgen05Mma(kind="f8f6f4", idesc=idesc_word("f8f6f4", 128, 32, "e3m2", "e3m2"), b_desc=b_word,
                    a_tmem=taddr_codec.encode(0, 32), enable_input_d=False)
    return Probe(
        "A-F6-TMEM-CONTAINER", images.program("sm_100a", (op,)),
        "Where does a 6-bit A element sit in its 8-bit TMEM container: bits 1-6 (tcgen05.cp's decompression) or bits "
        "0-5 (the .kind::f8f6f4 text's \"lower 6 bits\"; MMA-Sim's fp6 inputs)?",
        "at bits 1-6; A's e3m2 codes are written at bits 0-5 here, so the oracle reads code >> 1: with B the identity, "
        "D[r][j] = the e3m2 value of (A's code >> 1).",
        "bits 0-5: D = A (A[r][k] = the e3m2 value of code (r + 3k) mod 32).",
    )


# --- D words, .ashift, accumulator -----------------------------------------------------------------


def d16_high_half() -> Probe:
    images = Images(columns=32, tmem_fill=0xFFFFFFFF)
    op = f16_mma(images, quarters(128, 16, 7, 3), quarters(16, 16, 5, 11), 128, dtype="f16")
    return Probe(
        "A-D16-HIGH-HALF", images.program("sm_100a", (op,)),
        "What do the high 16 bits of a D word hold after an MMA with a 16-bit D?",
        "0: the D words of M=128 N=16 (TMEM filled with 0xFFFFFFFF) read back as 0x0000xxxx, xxxx the f16 of A B^T.",
        "the high halves keep 0xFFFF (untouched), or hold something else (a second element, a sign extension).",
    )


def ashift_row0() -> Probe:
    images = Images(columns=32)
    _, b_word = operands(images, None, [codes("f16", np.ones((16, 16)))], "f16", "f16")
    a_in_tmem(images, 16, np.arange(128), codes("f16", np.repeat((np.arange(128)[:, None] + 1) / 4, 16, axis=1)), 16, 16)
    op = Tcgen05Mma(kind="f16", ashift=True, idesc=idesc_word("f16", 128, 16, "f16", "f16"), b_desc=b_word,
                    a_tmem=taddr_codec.encode(0, 16), enable_input_d=False)
    return Probe(
        "A-ASHIFT-ROW0", images.program("sm_100a", (op,)),
        ".ashift shifts A's rows down one \"except for the last row\": what does row 0 use, and does TMEM change?",
        "row r uses A row r - 1, row 0 its own row, TMEM unchanged: with A row r = (r + 1) / 4 and B = 1, D row 0 = 4, "
        "D row r = 4r, and A reads back as written (TMEM columns 16-23).",
        "row 0 = 0 (a zero row shifted in) or 512 (row 127 rotated in); A in TMEM shifted too.",
    )


def no_accumulator() -> Probe:
    images = Images(columns=32, tmem_fill=codes("f32", 1.0).item())
    op = f16_mma(images, np.full((128, 16), -0.0), np.ones((16, 16)), 128)
    return Probe(
        "A-NO-ACCUMULATOR", images.program("sm_100a", (op,)),
        "With enable-input-d false (D = A B), is an exact zero sum +0 or -0?",
        "the sum starts from -0, the identity of IEEE addition: A = -0, B = 1 gives D = -0 (0x80000000).",
        "a +0 start gives +0 (0x00000000).",
    )


def scale_input_d() -> Probe:
    images = Images(columns=32, tmem_fill=3)  # 3 x 2^-149
    op = f16_mma(images, np.zeros((128, 16)), np.ones((16, 16)), 128, enable_input_d=True, scale_input_d=1)
    return Probe(
        "A-SCALE-INPUT-D", images.program("sm_100a", (op,)),
        "D x 2^-scale-input-d may be inexact (subnormal): how is it rounded?",
        "not modelled: 3 x 2^-149 x 2^-1 is inexact, so the oracle refuses the program.",
        "D = 0x00000002 (round to nearest even), 0x00000001 (truncation) or 0 (flush to zero), A B^T being 0.",
        refusal="scale-input-d 1 makes D inexact before accumulation (not modelled)",
    )


def ws_max_shift() -> Probe:
    images = Images(columns=256)
    op = f16_mma(images, quarters(128, 16, 7, 3), quarters(64, 16, 5, 11), 128, ws=True)
    ops = tuple(dataclasses.replace(op, idesc=idesc_word("f16", 128, 64, "f16", "f16", max_shift=s),
                                    d_tmem=taddr_codec.encode(0, 64 * s)) for s in range(4))
    return Probe(
        "A-WS-MAXSHIFT", images.program("sm_100a", ops),
        "Do Table 42 bits 30-31 (maximum B-reuse shift in .ws) change results?",
        "no: four .ws M=128 N=64 MMAs with max-shift 0-3 write identical D = A B^T at columns 0, 64, 128, 192.",
        "D blocks that differ show the shift changes results.",
    )


# --- wgmma (sm_90a) --------------------------------------------------------------------------------


B_START = 16 * 1024  # B of the wgmma probes: past every A


def wgmma_program(a_desc: sdesc_codec.SmemDescriptor, b_desc: sdesc_codec.SmemDescriptor) -> Program:
    """wgmma m64n16k16 f32.f16.f16 of patterned A [64, 16] and B [16, 16], both K-major in shared memory."""
    images = Images()
    images.smem_operand(0, a_desc, True, codes("f16", quarters(64, 16, 7, 3)), "f16")
    images.smem_operand(0, b_desc, True, codes("f16", quarters(16, 16, 5, 11)), "f16")
    op = WgmmaMma(n=16, k=16, dtype="f32", atype="f16", btype="f16", imm_trans_a=0, imm_trans_b=0,
                  a_desc=sdesc_codec.encode(a_desc, "sm90"), b_desc=sdesc_codec.encode(b_desc, "sm90"))
    return images.program("sm_90a", (op,), tmem=False)


def wgmma_desc() -> list[Probe]:
    pairs = (("128B", "64B"), ("32B", "none"))
    return [
        Probe(
            "A-WGMMA-DESC", wgmma_program(kmajor(0, 64, a), kmajor(B_START, 16, b)),
            "What is the sm_90 wgmma descriptor layout (not in shared/spec)?",
            f"CUTLASS GmmaDescriptor: swizzle in bits 62-63 (0 none, 1 128B, 2 64B, 3 32B); A {a}-, B {b}-swizzled "
            "K-major (the two A-WGMMA-DESC programs cover the four codes): D = A B^T of the patterned operands.",
            "another code assignment or field position reads A or B in another order: a different D.",
            variant=f"a{a}-b{b}",
        )
        for a, b in pairs
    ]


def sdesc_base_offset() -> Probe:
    return Probe(
        "A-SDESC-BASE-OFFSET",
        wgmma_program(kmajor(1024 + 128, 64, "128B", base_offset=1), kmajor(B_START + 128, 16, "128B", base_offset=0)),
        "How does the matrix base offset (bits 49-51, Table 41) enter the swizzle?",
        "the swizzle row phase is (address bits 7.. - base offset) mod 8: A (128B, 128 bytes past a 1024-byte "
        "boundary, base offset 1) and B (likewise, base offset 0) written so, D = A B^T.",
        "a phase from the address alone (base offset ignored) misreads A; one that adds the offset misreads both.",
    )


def wgmma_sparse_kmajor_atom() -> Probe:
    """Sparse wgmma m64n16k32 f32.f16.f16: B K-major with 64-byte rows in a 32B swizzle atom. K 0-15
    of B sit where the canonical layout puts them, K 16-31 (plus 8, to tell them apart) at start +
    LBO (LBO = 4096); where the canonical layout would continue each row (the next 32 bytes) lies
    the next row's first half."""
    images = Images()
    a_desc = kmajor(0, 64)
    images.smem_operand(0, a_desc, True, codes("f16", quarters(64, 16, 7, 3)), "f16")
    b_values = quarters(16, 32, 5, 11)
    b_desc = dataclasses.replace(kmajor(B_START, 16, "32B"), leading_byte_offset=4096)
    images.smem_operand(0, b_desc, True, codes("f16", b_values[:, :16]), "f16")
    images.smem_operand(0, dataclasses.replace(b_desc, start_address=B_START + 4096), True,
                        codes("f16", b_values[:, 16:] + 8), "f16")
    op = WgmmaMma(n=16, k=32, dtype="f32", atype="f16", btype="f16", sparse=True, imm_trans_a=0, imm_trans_b=0,
                  a_desc=sdesc_codec.encode(a_desc, "sm90"), b_desc=sdesc_codec.encode(b_desc, "sm90"))
    # metadata 0b0100 in every group of every row: stored element s of group j is logical 4 j + s
    e = np.full(128, 0x44444444, np.uint32)
    program = dataclasses.replace(images.program("sm_90a", (op,), tmem=False),
                                  matrices=(MatrixImage("e", 128, 1, e.astype("<u4").tobytes()),))
    return Probe(
        "A-WGMMA-SP-KMAJOR-ATOM", program,
        "Where does sparse wgmma read the second 32-byte half of a 64-byte K-major B row in a 32B swizzle atom?",
        "the next atom along K is at start + LBO (settled on the H100): D = A times B's K columns selected by the "
        "metadata (0,1,4,5,...,16,17,...), K 16-31 read as B + 8.",
        "K 16-31 read as the next row's K 0-15: the ISA formula's contiguous chunks; anything else, another rule.",
    )


WGMMA_SP_SELECTOR = 1  # the sparsity selector of the A-WGMMA-SP-METADATA probe
META_CHUNKS_01, META_CHUNKS_23 = 0x44444444, 0xEEEEEEEE  # every nibble 0b0100 (elements 0, 1) or 0b1110 (2, 3)


def wgmma_sparse_metadata() -> Probe:
    """Sparse wgmma m64n16k32 f32.f16.f16, A and B K-major without swizzle, selector 1: the thread
    pair the selector names (lanes 2-3 of each quad under the adopted reading) holds metadata
    selecting elements 0 and 1 of every group of four, the other pair elements 2 and 3."""
    images = Images()
    a_desc, b_desc = kmajor(0, 64), kmajor(B_START, 16)
    images.smem_operand(0, a_desc, True, codes("f16", quarters(64, 16, 7, 3)), "f16")
    images.smem_operand(0, b_desc, True, codes("f16", quarters(16, 32, 5, 11)), "f16")
    op = WgmmaMma(n=16, k=32, dtype="f32", atype="f16", btype="f16", sparse=True, imm_trans_a=0, imm_trans_b=0,
                  sparse_selector=WGMMA_SP_SELECTOR, a_desc=sdesc_codec.encode(a_desc, "sm90"),
                  b_desc=sdesc_codec.encode(b_desc, "sm90"))
    pair = np.arange(128) % 4 // 2
    e = np.where(pair == WGMMA_SP_SELECTOR, META_CHUNKS_01, META_CHUNKS_23).astype(np.uint32)
    program = dataclasses.replace(images.program("sm_90a", (op,), tmem=False),
                                  matrices=(MatrixImage("e", 128, 1, e.astype("<u4").tobytes()),))
    return Probe(
        "A-WGMMA-SP-METADATA", program,
        "Which threads hold the sparsity metadata that sparse wgmma's selector picks?",
        "CUTLASS's ELayout: for 16-bit inputs selector 1 reads lanes 2-3 of each quad, which hold metadata 0b0100 "
        "(elements 0 and 1 of every group); lanes 0-1 hold 0b1110 (elements 2 and 3): D = A times B's K columns 4j, "
        "4j + 1.",
        "selector 1 reading lanes 0-1: D = A times B's K columns 4j + 2, 4j + 3; a mix of the two pairs gives other "
        "sums.",
    )


def mma_sp_metadata() -> Probe:
    """Warp-level mma.sp m16n8k32 f32.f16.f16.f32 (every operand in registers), selector 1: the lane
    pair it names (lanes 2-3 of each quad under the adopted reading) holds metadata selecting
    elements 0 and 1 of every group of four, the other pair elements 2 and 3."""
    pair = np.arange(32) % 4 // 2
    e = np.where(pair == WGMMA_SP_SELECTOR, META_CHUNKS_01, META_CHUNKS_23).astype(np.uint32)
    matrices = tuple(MatrixImage(name, *values.shape, values.astype("<u4").tobytes()) for name, values in (
        ("a", codes("f16", quarters(16, 16, 7, 3))), ("b", codes("f16", quarters(8, 32, 5, 11))),
        ("c", codes("f32", np.zeros((16, 8)))), ("e", e[:, None])))
    op = MmaSp(k=32, dtype="f32", atype="f16", btype="f16", ctype="f32", sparse_selector=WGMMA_SP_SELECTOR)
    return Probe(
        "A-MMA-SP-METADATA", Program(target="sm_90a", ops=(op,), matrices=matrices),
        "Which lanes hold the sparsity metadata that warp-level mma.sp's selector picks?",
        "as the sparse wgmma ELayouts restricted to one warp: for 16-bit inputs at K = 32, selector 1 reads lanes 2-3 of "
        "each quad, which hold metadata 0b0100 (elements 0 and 1 of every group); lanes 0-1 hold 0b1110: D = A times B's "
        "K columns 4j, 4j + 1.",
        "selector 1 reading lanes 0-1: D = A times B's K columns 4j + 2, 4j + 3; another lane map gives other sums.",
    )


def mma_probes() -> list[Probe]:
    """The probes of this module, in the order of docs/assumptions.md."""
    return [
        zcmask_spans(), mixed_f16(), k96_scalevec(), sfid_k96(), max_shift(), spsel_f16_tf32(), lane_align(),
        sdesc_fixed53(), *wgmma_desc(), tmem_own_lane(), layout_e_2x2(), cta_pair_split(), sdesc_base_offset(),
        lbo_absolute_split(), sw128_32b(), f4f6_smem_padded(), f4f6_tmem_container(), f6_tmem_container(), d16_high_half(), ashift_row0(),
        dol_cta2(), spmeta_half(), spsel_columns(), sf_k96_layout(), no_accumulator(), scale_input_d(), ws_max_shift(),
        wgmma_sparse_kmajor_atom(), wgmma_sparse_metadata(), mma_sp_metadata(), k96_shapes(), sparse_cta2_m128(), blockscaled_idesc_bits(),
    ]
