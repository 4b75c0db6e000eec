"""Mutation testing (`tcgen05_conformance.mutation.mutants`, `tcgen05_conformance.mutation.suite`, `tcgen05-conformance
mutants`): every mutant changes what the oracle computes on an input built here for the bug it
plants (written out below, not taken from the suite), `applied()` leaves the oracle exactly as it
found it, the suite's kill logic, and the command's JSON."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core import formats
from tcgen05_conformance.core import program as program_model
from tcgen05_conformance.core.encoding import idesc, sdesc, taddr, zcmask
from tcgen05_conformance.core.instructions import Tcgen05Cp, Tcgen05Ld, Tcgen05Shift, Tcgen05St
from tcgen05_conformance.core.layouts import smem as smem_operand
from tcgen05_conformance.core.layouts import tmem as tmem_layout
from tcgen05_conformance.core.program import Program, SmemSegment, TmemRegion
from tcgen05_conformance.mutation.mutants import FAMILIES, MUTANTS, ORACLE_PACKAGES, Mutant
from tcgen05_conformance.mutation.suite import Case, Suite, numeric_cases, outcome
from tcgen05_conformance.oracles import execute, mma
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.generators.numeric_vectors import draw_vectors

MATMUL = importlib.import_module("tcgen05_conformance.oracles.numerics.matmul")  # the package's `matmul` is the function

PROBES = Path(__file__).resolve().parents[1] / "probes"


def fingerprint(value: Any) -> Any:
    """A comparable, hashable form of a witness's value (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple(fingerprint(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, (tuple, list)):
        return tuple(fingerprint(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, fingerprint(v)) for k, v in value.items())
    if isinstance(value, execute.MachineState):
        return value.digest()
    return value


def observe(witness: Callable[[], Any]) -> Any:
    try:
        return fingerprint(witness())
    except Exception as e:  # a mutant may make the oracle refuse or crash: that is a change too
        return ("raises", type(e).__name__)


# --- inputs, each designed for the bugs that name it --------------------------------------------

# Instruction descriptors (Tables 42-44): every field the codec mutants read has a telling value.
F16_WORD = idesc.encode("f16", idesc.InstrDescriptor(m=128, n=64, atype="f16", btype="f16", dtype="f32",
                                                     transpose_a=True, negate_a=True))
F6_WORD = idesc.encode("f8f6f4", idesc.InstrDescriptor(m=128, n=64, atype="e2m3", btype="e3m2", dtype="f32"))
MX_WORD = idesc.encode("mxf4nvf4", idesc.InstrDescriptor(m=128, n=64, atype="e2m1", btype="e2m1", sfa_id=2, sfb_id=0,
                                                         scale_type="ue4m3", k96=True))
# A 128B-swizzled descriptor with an absolute LBO, base offset 3 and a start not 128-byte aligned.
SDESC = sdesc.SmemDescriptor(0x1230, 0x100, 0x400, "128B", base_offset=3, lbo_absolute=True)
SDESC_WORD = sdesc.encode(SDESC)
SM90_WORD = sdesc.encode(dataclasses.replace(SDESC, lbo_absolute=False), "sm90")
# Zero-column mask: distinct start counts, first spans, spans and a column shift.
ZC_WORD = zcmask.encode(zcmask.ZeroColumnMask((1, 2, 0, 3), (0, 1, 0, 1), True, skip_span=2, use_span=4, column_shift=8))


def decoded_descriptors():
    return (idesc.decode("f16", F16_WORD), idesc.decode("f8f6f4", F6_WORD), idesc.decode("mxf4nvf4", MX_WORD),
            sdesc.decode(SDESC_WORD), sdesc.decode(SM90_WORD, "sm90"))


def zero_column_mask():
    z = zcmask.decode(ZC_WORD)
    return z, zcmask.generate_mask(z, 32, 64)


def bit_addresses(swizzle: str, k_major: bool, bits: int = 16, start: int = 0, base_offset: int = 0, lbo: int = 0x800,
                  sbo: int = 0x400, padded: bool = False):
    d = sdesc.SmemDescriptor(start, lbo, sbo, swizzle, base_offset)
    return smem_operand.element_bit_addresses(d, k_major, 32, 64 * 16 // bits, smem_operand.storage_for(bits, padded))


def d_positions(m: int, cta_group: int, ws: bool):
    return tmem_layout.d_positions(tmem_layout.data_path(m, cta_group, False, ws), 64, 0)


RNG_WORDS = np.random.default_rng(5).integers(0, 2**32, (128, 64), dtype=np.uint64).astype(np.uint32)


def a_in_tmem():
    lanes = np.arange(128)
    return tmem_layout.a_from_tmem(RNG_WORDS, lanes, 0, 32, tmem_layout.a_tmem_container_bits("f8f6f4", 4), 4)


def scale_factor_codes():
    """Three K = 96 factors from SF_ID 2 of 64 rows: bytes 2 and 3, then byte 0 of the next group of
    four columns (A's 128 rows)."""
    index = np.arange(64)
    return tmem_layout.scale_factors(RNG_WORDS, index // 32, index, 4, 3, 2, 4)


def sparse_dense_a():
    stored = np.arange(1, 9, dtype=np.uint32)[None, :]  # 4 chunks of 2 kept elements
    meta = np.array([[0b0100, 0b1000, 0b1101, 0b1110]], dtype=np.uint32)
    return mma.expand_sparse(stored, meta, "f16", "A")


@lru_cache(maxsize=None)
def probe(name: str) -> Program:
    return program_model.load(str(PROBES / f"{name}.json"))


def probe_result(name: str, op_changes: dict | None = None):
    p = probe(name)
    if op_changes:
        p = dataclasses.replace(p, ops=tuple(dataclasses.replace(op, **op_changes) if op.OP == "wgmma.mma_async" else op for op in p.ops))
    return execute.run(p, "exact")


def mma_op():
    return next(op for op in probe("A-NO-ACCUMULATOR").ops if op.OP == "tcgen05.mma")


F32_ONE = np.array([0x3F800000], dtype=np.uint32)


@lru_cache(maxsize=None)
def vectors(family: str, fmt: str | tuple[str, str], acc: str, k: int):
    return draw_vectors(family, fmt, acc, k, 400, np.random.default_rng(7))


def products(family: str, fmt: str | tuple[str, str], acc: str, profile: str, k: int = 32, **options):
    a, b, c = vectors(family, fmt, acc, k)
    return inner_product(a, b, c, fmt, acc, profile, **options)


CODES = np.arange(256, dtype=np.uint32)


def decoded(name: str):
    return formats.decode(CODES, formats.get_format(name))


def scaled_products(scale: str, codes: tuple[int, int]):
    """e2m1 products scaled by one factor per 32 elements (`codes` over the rows)."""
    a, b, c = vectors("random_finite", "e2m1", "f32", 64)
    sa = np.full((a.shape[0], 2), codes[0], dtype=np.uint8)
    sa[::3] = codes[1]
    return inner_product(a, b, c, "e2m1", "f32", "exact", a_scale=sa, b_scale=sa, scale_fmt=scale)


def exact_fast_path(fmt: str, codes: np.ndarray):
    return MATMUL.values(codes, fmt)


def run_program(ops, ctas: int = 1, smem=(), tmem=()):
    return execute.run(Program(target="sm_100a", ops=tuple(ops), ctas=ctas, smem=tuple(smem), tmem=tuple(tmem)))


SMEM_BYTES = np.random.default_rng(9).integers(0, 256, 8192, dtype=np.uint8).tobytes()
CP_DESC = sdesc.encode(sdesc.SmemDescriptor(0, 2048, 128))


def copies():
    ops = [Tcgen05Cp("64x128b", multicast="warpx2::02_13", taddr=taddr.encode(0, 0), s_desc=CP_DESC),
           Tcgen05Cp("64x128b", multicast="warpx2::01_23", taddr=taddr.encode(0, 8), s_desc=CP_DESC),
           Tcgen05Cp("4x256b", taddr=taddr.encode(0, 16), s_desc=CP_DESC),
           Tcgen05Cp("128x128b", src_fmt="b4x16_p64", taddr=taddr.encode(0, 32), s_desc=CP_DESC),
           Tcgen05Cp("128x128b", src_fmt="b6x16_p32", taddr=taddr.encode(0, 40), s_desc=CP_DESC)]
    return run_program(ops, smem=[SmemSegment(0, SMEM_BYTES)])


def pair_copy_and_shift():
    ops = [Tcgen05Cp("128x128b", cta_group=2, s_desc=CP_DESC), Tcgen05Shift(cta_group=2, taddr=taddr.encode(32, 8))]
    return run_program(ops, ctas=2, smem=[SmemSegment(0, SMEM_BYTES, cta) for cta in (0, 1)],
                       tmem=[TmemRegion(0, 0, 128, 64, RNG_WORDS.tobytes(), cta) for cta in (0, 1)])


# TMEM for the loads: random words, NaNs at column 3 of the even lanes, negative values everywhere.
LD_WORDS = RNG_WORDS.copy()
LD_WORDS[0:32:2, 3] = 0x7FC00001


def loads():
    ops = [Tcgen05Ld("16x64b", 2), Tcgen05Ld("16x256b", 1), Tcgen05Ld("32x32b", 4), Tcgen05Ld("16x32bx2", 2, split_offset=4),
           Tcgen05Ld("32x32b", 2, pack=True), Tcgen05Ld("32x32b", 4, red_op="min", red_type="u32"),
           Tcgen05Ld("32x32b", 4, red_op="max", red_type="f32", red_abs=True),
           Tcgen05Ld("32x32b", 4, red_op="min", red_type="f32", red_nan=True), Tcgen05Ld("32x32b", 4, red_op="min", red_type="s32")]
    return [run_program([op], tmem=[TmemRegion(0, 0, 128, 64, LD_WORDS.tobytes())]) for op in ops]


# TMEM holding +0 then -0 in each lane: min.f32 must pick -0, max.f32 +0 (9.7.16.8.3: -0.0 < +0.0).
SIGNED_ZEROS = np.zeros((128, 64), dtype=np.uint32)
SIGNED_ZEROS[:, 1] = 0x80000000


def signed_zero_reductions():
    return [run_program([Tcgen05Ld("32x32b", 2, red_op=op, red_type="f32")], tmem=[TmemRegion(0, 0, 128, 64, SIGNED_ZEROS.tobytes())])
            for op in ("min", "max")]


def stores():
    ops = [Tcgen05St("32x32b", 4, values_seed=3), Tcgen05St("16x64b", 2, values_seed=4, taddr=taddr.encode(32, 0)),
           Tcgen05St("16x256b", 1, values_seed=5, taddr=taddr.encode(64, 0))]
    return run_program(ops)


def shifted():
    return run_program([Tcgen05Shift(taddr=taddr.encode(32, 8))], tmem=[TmemRegion(0, 0, 128, 64, RNG_WORDS.tobytes())])


WITNESSES: dict[str, Callable[[], Any]] = {
    **{name: decoded_descriptors for name in (
        "idesc-m-field-one-bit-low", "idesc-transposes-swapped", "idesc-negate-a-ignored", "idesc-sf-ids-swapped",
        "idesc-k96-ignored", "idesc-dtype-codes-swapped", "idesc-f6-codes-swapped", "idesc-scale-type-inverted",
        "sdesc-lbo-sbo-swapped", "sdesc-base-offset-ignored", "sdesc-lbo-mode-ignored", "sdesc-start-128B-aligned",
        "sdesc-swizzle-codes-128B-32B", "sdesc-sm90-swizzle-codes-reversed")},
    **{name: zero_column_mask for name in (
        "zcmask-column-shift-ignored", "zcmask-spans-swapped", "zcmask-spans-as-described", "zcmask-first-span-inverted",
        "zcmask-start-count-ignored", "zcmask-sub-masks-reversed")},
    "taddr-lane-mod-32": lambda: taddr.decode(taddr.encode(64, 5)),
    "swizzle-xor-one-bit-high": lambda: bit_addresses("128B", True),
    "swizzle-128B-as-64B": lambda: bit_addresses("128B", True),
    "swizzle-phase-bits-swapped": lambda: bit_addresses("128B", True),
    "swizzle-32B-atom-ignored": lambda: bit_addresses("128B_base32B", False, bits=32),
    "swizzle-base-offset-added": lambda: bit_addresses("128B", True, base_offset=1),
    "swizzle-from-matrix-offset": lambda: bit_addresses("128B", True, start=0x180),
    "mn-major-lbo-sbo-swapped": lambda: bit_addresses("none", False),
    "k-major-swizzled-steps-lbo": lambda: bit_addresses("64B", True),
    "mn-major-32B-atom-8-rows": lambda: bit_addresses("128B_base32B", False, bits=32),
    "f4f6-smem-unpadded": lambda: bit_addresses("none", True, bits=4, padded=True),
    "fp4-nibbles-swapped": lambda: bit_addresses("none", True, bits=4),
    "m64-half-datapath-lanes": lambda: d_positions(64, 1, False),
    "layout-2x2-lane-offset-32": lambda: d_positions(128, 2, False),
    "layout-1x4-as-2x2": lambda: d_positions(32, 1, True),
    "ws-layout-ignored": lambda: d_positions(64, 1, True),
    "a-tmem-container-shift-zero": a_in_tmem,
    "a-tmem-no-containers": a_in_tmem,
    "ashift-ignored": lambda: probe_result("A-ASHIFT-ROW0"),
    "sparse-meta-f16-row-layout": lambda: tmem_layout.meta_positions(tmem_layout.data_path(128, 1, True, False), "f16", 32, 0, 0, 2),
    "sparse-selector-ignored": lambda: tmem_layout.meta_positions(tmem_layout.data_path(128, 1, True, False), "f16", 32, 0, 0, 2),
    "sparse-indices-swapped": sparse_dense_a,
    "scale-sf-id-as-column": scale_factor_codes,
    "scale-k96-one-column": scale_factor_codes,
    "block16-as-block32": lambda: sys.modules["tcgen05_conformance.core.isa.mma"].scale_vector("mxf4nvf4", "block16", False),
    "enable-input-d-ignored": lambda: mma._accumulator(dataclasses.replace(mma_op(), enable_input_d=False), "f32", F32_ONE),
    "no-accumulator-plus-zero": lambda: mma._accumulator(dataclasses.replace(mma_op(), enable_input_d=False), "f32", F32_ONE),
    "negate-sub-byte-container-bit": lambda: formats.decode(mma.negate(CODES[:16], "e2m1"), formats.get_format("e2m1")),
    "cta-pair-b-halves-swapped": lambda: probe_result("A-CTA-PAIR-SPLIT"),
    "cta-pair-dol-first-words": lambda: mma._disabled_lanes(dataclasses.replace(mma_op(), cta_group=2,
                                                                                  disable_output_lane=(1, 0, 0, 0, 0, 0, 0, 2))),
    "dol-bit-order-reversed": lambda: mma._disabled_lanes(dataclasses.replace(mma_op(), disable_output_lane=(1, 0, 0, 0))),
    "scale-input-d-sign": lambda: mma._scaled_accumulator(F32_ONE, "f32", 3),
    "scale-input-d-capped-at-12": lambda: mma._scaled_accumulator(F32_ONE, "f32", 14),
    "zcmask-column-shift-capped-16": lambda: zcmask.decode(zcmask.encode(zcmask.ZeroColumnMask(column_shift=32))),
    "tmem-last-column-refused": lambda: run_program([Tcgen05Ld("32x32b", 1, taddr=taddr.encode(0, 511))]),
    "e4m3-bias-8": lambda: decoded("e4m3"),
    "e3m2-bias-4": lambda: decoded("e3m2"),
    "e2m1-bias-2": lambda: decoded("e2m1"),
    "e4m3-ieee-specials": lambda: decoded("e4m3"),
    "e5m2-no-infinity": lambda: decoded("e5m2"),
    "ue8m0-bias-128": lambda: decoded("ue8m0"),
    "ue8m0-nan-finite": lambda: decoded("ue8m0"),
    "ue4m3-bias-8": lambda: decoded("ue4m3"),
    "ue8m0-code-0-as-2^-126": lambda: decoded("ue8m0"),
    "ue4m3-subnormals-flushed": lambda: decoded("ue4m3"),
    "subnormal-binade-low": lambda: decoded("e4m3"),
    "f32-nan-ieee-quiet": lambda: products("special", "f16", "f32", "sm_100a", 16),
    "exact-bf16-as-f16": lambda: exact_fast_path("bf16", np.arange(0, 1 << 16, 97, dtype=np.uint32)),
    "exact-e4m3-as-fnuz": lambda: exact_fast_path("e4m3", CODES),
    "exact-tf32-low-bits-kept": lambda: exact_fast_path("tf32", np.array([0x3F800001, 0x40001FFF], dtype=np.uint32)),
    "u8-as-s8": lambda: products("uniform_bits", "u8", "s32", "exact"),
    "int-b-signedness-from-a": lambda: products("uniform_bits", ("s8", "u8"), "s32", "exact"),
    "int-saturate-wraps": lambda: products("overflow", "s8", "s32", "exact", saturate=True),
    "int-wrap-saturates": lambda: products("overflow", "s8", "s32", "exact", saturate=False),
    "overflow-saturates": lambda: products("overflow", "f16", "f16", "sm_100a", 16),
    "c-add-no-round-bit": lambda: products("normalisation", "e4m3", "f32", "sm_90a.mma_sync"),
    "sm100-f16-groups-rne": lambda: products("rounding", "f16", "f32", "sm_100a", 16),
    "sm100-align-24": lambda: products("alignment", "f16", "f32", "sm_100a", 16),
    "sm100-k-step-8": lambda: products("cancellation", "f16", "f32", "sm_100a", 16),
    "sm100-c-final-add": lambda: products("cancellation", "f16", "f32", "sm_100a", 16),
    "sm100-fp8-mma-sync-groups": lambda: products("normalisation", "e4m3", "f16", "sm_100a"),
    "sm90-fp8-align-14": lambda: products("normalisation", "e4m3", "f32", "sm_90a"),
    "sm90-fp8-f32-full-precision": lambda: products("random_finite", "e4m3", "f32", "sm_90a"),
    "sm100-subnormal-outputs-flushed": lambda: products("subnormal", "f16", "f32", "sm_100a", 16),
    "hardware-zero-sign-ieee": lambda: products("special", "f16", "f32", "sm_90a", 16),
    "exact-slow-path-rz": lambda: products("rounding", "f16", "f32", "exact", 16),
    "shift-up": shifted,
    "cp-warpx2-patterns-swapped": copies,
    "cp-4x256b-consecutive-lanes": copies,
    "cp-decompress-bit-0": copies,
    "cta-pair-peer-ignored": pair_copy_and_shift,
    **{name: loads for name in (
        "ldst-16x64b-thread-map", "ldst-16x256b-register-order", "ldst-32x32b-num-stride", "ldst-split-offset-ignored",
        "ldst-pack-halves-swapped", "ldred-min-max-swapped", "ldred-abs-ignored", "ldred-nan-ignored", "ldred-s32-unsigned")},
    "ldred-zeros-compare-equal": signed_zero_reductions,
    "st-values-hash-round": stores,
    "wgmma-trans-inverted": lambda: probe_result("A-WGMMA-DESC.a128B-b64B"),
    "wgmma-scale-a-ignored": lambda: probe_result("A-WGMMA-DESC.a128B-b64B", {"imm_scale_a": -1}),
}


def test_every_mutant_has_a_witness_and_at_least_fifty_exist():
    assert set(WITNESSES) == set(MUTANTS)
    assert len(MUTANTS) >= 50
    assert all(m.description and "\n" not in m.description for m in MUTANTS.values())


def _changes_behaviour(name: str) -> None:
    witness = WITNESSES[name]
    before = observe(witness)
    assert before[0] != "raises", f"the witness of {name} fails on the unmutated oracle: {before}"
    with MUTANTS[name].applied():
        during = observe(witness)
    after = observe(witness)
    assert during != before, f"{name} does not change its witness"
    assert after == before, f"{name} left the oracle changed"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_mutant_of_the_family_changes_what_the_oracle_computes_on_its_witness(family):
    for name, mutant in MUTANTS.items():
        if mutant.family == family:
            _changes_behaviour(name)


def test_the_witnesses_hold_the_documented_facts_unmutated():
    """The inputs are what they claim: the unmutated oracle reads them as the ISA says."""
    f16 = idesc.decode("f16", F16_WORD)
    assert (f16.m, f16.transpose_a, f16.transpose_b, f16.negate_a, f16.dtype) == (128, True, False, True, "f32")
    assert sdesc.decode(SDESC_WORD) == SDESC and sdesc.decode(SM90_WORD, "sm90").swizzle == "128B"
    assert taddr.decode(taddr.encode(64, 5)) == (64, 5)
    # Table 45 with M = 32, N = 64: four 16-bit sub-masks of runs of 3 ones (skip span 2 + 1) and 5 zeros
    # (use span 4 + 1). Sub-mask 0 starts with zeros (fs0 = 0), its first bit dropped (sc0 = 1): ones at
    # columns 4-6 and 12-14. Sub-mask 1 starts with ones (fs1 = 1), two bits dropped: ones at 0, 6-8, 14-15.
    z, mask = zero_column_mask()
    assert z.column_shift == 8
    assert mask & 0xFFFF == 0b0111000001110000 and (mask >> 16) & 0xFFFF == 0b1100000111000001
    # enable-input-d false accumulates -0 (A-NO-ACCUMULATOR); scale-input-d 3 divides D by 8.
    assert mma._accumulator(dataclasses.replace(mma_op(), enable_input_d=False), "f32", F32_ONE)[0] == 0x80000000
    assert mma._scaled_accumulator(F32_ONE, "f32", 3).view(np.float32)[0] == 0.125


def test_applied_restores_every_binding_and_table_even_when_the_body_raises():
    def snapshot() -> dict:
        state = {}
        for name, module in sorted(sys.modules.items()):
            if module is not None and any(name == p or name.startswith(p + ".") for p in ORACLE_PACKAGES):
                for attr, value in vars(module).items():
                    contents = tuple((k, id(v)) for k, v in value.items()) if isinstance(value, dict) else None
                    state[(name, attr)] = (id(value), contents)
        return state

    cases = [c for c in numeric_cases(0)[:6]] + [Case(f"probe {n}", "probe", lambda n=n: probe_result(n).digest())
                                                 for n in ("A-CP-PAIR-SOURCE", "A-LDRED-F32", "A-SFID-K96", "A-WGMMA-DESC.a32B-bnone")]
    before_state, before = snapshot(), [outcome(c) for c in cases]
    for mutant in MUTANTS.values():
        with pytest.raises(RuntimeError):
            with mutant.applied():
                raise RuntimeError("the body fails")
        with mutant.applied():
            outcome(cases[0])
    assert snapshot() == before_state
    assert [outcome(c) for c in cases] == before


def _flag_mutant(flag: list, name: str = "flag") -> Mutant:
    """A mutant whose only effect is appending to `flag` while applied."""
    return Mutant(name, "test", "sets a flag", (lambda: (flag.append(1), flag.pop)[1],))


def test_suite_counts_killing_cases_up_to_the_limit_and_tries_killers_first():
    flag: list = []
    telling = Case("telling program", "program", lambda: str(len(flag)))
    constant = Case("constant probe", "probe", lambda: "same")
    raising = Case("probe raising when mutated", "probe", lambda: "ok" if not flag else {}["missing"])
    skipped = Case("not modelled", "program", lambda: (_ for _ in ()).throw(execute.NotModelled("no")))
    suite = Suite([telling, constant, raising, skipped])
    assert [g.case.name for g in suite.golden] == ["telling program", "constant probe", "probe raising when mutated"]
    # Probes come before programs for this family: the raising probe kills it first, and the suite
    # goes on to the program, the second case that tells the mutant apart (KILLS_COUNTED is 2).
    first = suite.try_mutant(_flag_mutant(flag))
    assert first.killed and first.killed_by == "probe raising when mutated" and (first.kills, first.cases_run) == (2, 3)
    assert first.detail.startswith("raises KeyError") and flag == []
    second = suite.try_mutant(_flag_mutant(flag, "again"))
    assert (second.killed_by, second.kills, second.cases_run) == ("probe raising when mutated", 2, 2)  # killers tried first
    survivor = suite.try_mutant(Mutant("noop", "test", "changes nothing", ()))
    assert not survivor.killed and survivor.cases_run == 3 and survivor.killed_by is None and survivor.kills == 0


def test_a_mutant_one_case_tells_apart_counts_one_kill():
    flag: list = []
    only = Case("telling probe", "probe", lambda: str(len(flag)))
    suite = Suite([only, Case("constant program", "program", lambda: "same")])
    result = suite.try_mutant(_flag_mutant(flag))
    assert (result.killed_by, result.kills, result.cases_run) == ("telling probe", 1, 2)


def test_a_mutant_that_reaches_no_instruction_of_a_case_skips_it():
    flag: list = []
    mma_only = Case("mma program", "program", lambda: str(len(flag)), frozenset({"tcgen05.mma"}))
    suite = Suite([mma_only])
    cp_bug = dataclasses.replace(_flag_mutant(flag), reaches=frozenset({"tcgen05.cp"}))
    result = suite.try_mutant(cp_bug)
    assert not result.killed and result.cases_run == 0 and "tcgen05.cp" in result.detail


def test_cli_reports_the_documented_fields(capsys):
    names = ["idesc-transposes-swapped", "ldred-s32-unsigned"]
    status = main(["mutants", "--json", "--count", "2", *(a for n in names for a in ("--only", n))])
    report = json.loads(capsys.readouterr().out)
    for key in ("mutants", "killed", "survived", "results", "seconds", "command", "machine", "suite", "score"):
        assert key in report
    assert report["mutants"] == 2 and report["suite"]["program"] == 2 and report["suite"]["probe"] == len(list(PROBES.glob("*.json")))
    assert [r["name"] for r in report["results"]] == names
    killed = {r["name"] for r in report["results"] if r["killed"]}
    assert "idesc-transposes-swapped" in killed  # probe A-SW128-32B transposes A
    assert report["killed"] == len(killed) and {s["name"] for s in report["survived"]} == set(names) - killed
    assert all(s["reason"] and s["description"] for s in report["survived"])
    assert status == (0 if report["killed"] / 2 >= 0.95 else 1)
    assert "mutants" in report["command"]


def test_cli_refuses_an_unknown_mutant(capsys):
    assert main(["mutants", "--only", "swizzle-xor-one-bit-hi"]) == 2
    err = capsys.readouterr().err
    assert "unknown mutant 'swizzle-xor-one-bit-hi'" in err and "swizzle-xor-one-bit-high" in err and len(err.splitlines()) == 1
