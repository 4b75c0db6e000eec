"""The hopper backend's host side (no GPU needed): register operands carried by programs, their
packing into per-thread fragments and control records, the oracle's use of C and scale-d, the
skip reasons (its own, and the reference's carried to it without running the GPU), and the
campaign's chunks. The GPU side is tests/device."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tcgen05_conformance.core.isa.mma import TYPE_BITS
from tcgen05_conformance.core.program import MatrixImage, ProgramError, dumps, loads
from tcgen05_conformance.harness.backends.hopper import HopperBackend, reason_for
from tcgen05_conformance.harness.runner import execute
from tcgen05_conformance.campaign.run import Settings, draw_chunk, input_formats, prepare
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.hopper_batch import pack, pack_d, unpack_d
from tcgen05_conformance.device.kernel_cache import KernelCache
from tcgen05_conformance.device.ptx.kernels import HOPPER_CONTROL_BYTES, hopper_form, hopper_kernel
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run

DRAWN = {inputs: draw_examples(hopper_programs(inputs=inputs, forms="modelled"), 24, seed)
         for inputs, seed in (("exact", 5), ("discriminating", 6))}
EXACT, DISCRIMINATING = ([p for p in DRAWN[i] if p.ops[0].OP == "wgmma.mma_async"][:12] for i in ("exact", "discriminating"))
MMA_SP = [p for i in DRAWN for p in DRAWN[i] if p.ops[0].OP == "mma.sp"]


def test_programs_carry_c_and_round_trip_through_json():
    for p in EXACT + DISCRIMINATING:
        op = p.ops[0]
        assert p.matrix("c").shape == (64, op.n)
        back = loads(dumps(p))
        assert back == p and back.case_id == p.case_id
    assert {p.profile for p in EXACT} == {"exact"} and {p.profile for p in DISCRIMINATING} == {"sm_90a"}


@pytest.mark.parametrize("change, message", [
    (lambda m: {**m, "name": "q"}, "is not one of c"),
    (lambda m: {**m, "rows": m["rows"] + 1}, "expected 4 x"),
    (lambda m: {**m, "extra": 1}, "unknown field"),
])
def test_malformed_matrices_are_one_line_errors(change, message):
    obj = json.loads(dumps(EXACT[0]))
    obj["matrices"][0] = change(obj["matrices"][0])
    with pytest.raises(ProgramError, match=message) as e:
        loads(json.dumps(obj))
    assert "\n" not in str(e.value) and "$.matrices[0]" in str(e.value)


def _fragment_element(thread: int, i: int, _: int) -> tuple[int, int]:
    """(row, column) of accumulator element i of a thread, from the PTX ISA's wgmma D fragment
    (9.7.15.5.1.1): row = 16 warp + groupID (+ 8 for the second pair of each group of four),
    column = 8 (i // 4) + 2 threadID_in_group + (i % 2)."""
    warp, lane = divmod(thread, 32)
    group, in_group = divmod(lane, 4)
    return 16 * warp + group + 8 * ((i % 4) // 2), 8 * (i // 4) + 2 * in_group + i % 2


def _a_element(thread: int, i: int, bits: int) -> tuple[int, int]:
    """(row, column) of A element i of a thread when wgmma reads A from registers: each warp holds
    16 rows as the warp-level mma.m16n8k{8,16,32} A fragment does (PTX ISA 9.7.15.5.1.1 and
    9.7.14.5.x: row = groupID (+ 8), column from threadID_in_group)."""
    warp, lane = divmod(thread, 32)
    group, tig = divmod(lane, 4)
    if bits == 32:
        return 16 * warp + group + 8 * (i % 2), tig + 4 * (i // 2)
    if bits == 16:
        return 16 * warp + group + 8 * ((i // 2) % 2), 2 * tig + i % 2 + 8 * (i // 4)
    return 16 * warp + group + 8 * ((i // 4) % 2), 4 * tig + i % 4 + 16 * (i // 8)


def _field(words: np.ndarray, thread: int, i: int, bits: int) -> int:
    per = 32 // bits
    return (int(words[thread, i // per]) >> (bits * (i % per))) & ((1 << bits) - 1)


SAMPLED = (EXACT + DISCRIMINATING)[:16]


@pytest.mark.parametrize("p", SAMPLED, ids=lambda p: f"{p.ops[0].atype}-{p.ops[0].dtype}-n{p.ops[0].n}-areg{int(p.ops[0].a_in_registers)}")
def test_registers_follow_the_isa_fragments_and_d_unpacks_back(p):
    batch = pack([p])
    op, c = p.ops[0], p.matrix("c")
    words = batch.registers[0]
    first_c = 4 if op.a_in_registers else 0
    c_bits = 16 if op.dtype == "f16" else 32
    for thread in (0, 5, 37, 127):
        for i in range(0, op.n // 2, 3):
            row, col = _fragment_element(thread, i, 0)
            assert _field(words[:, first_c:], thread, i, c_bits) == int(c[row, col]) & ((1 << c_bits) - 1), (thread, i)
        if op.a_in_registers:
            bits = {"tf32": 32, "f16": 16, "bf16": 16}.get(op.atype, 8)
            a = p.matrix("a")
            for i in range(4 * 32 // bits):
                row, col = _a_element(thread, i, bits)
                assert _field(words[:, :4], thread, i, bits) == int(a[row, col]), (thread, i)
    if op.sparse:
        assert np.array_equal(words[:, -1], p.matrix("e")[:, 0])
    d_words = batch.registers[:, :, first_c:first_c + batch.form.words_out]
    assert np.array_equal(unpack_d(batch.form, d_words)[0], c)
    assert np.array_equal(pack_d(batch.form, c[None]), d_words)  # D leaves the threads as C came in


def test_the_sample_reads_a_from_registers_and_from_shared_memory():
    assert {p.ops[0].a_in_registers for p in SAMPLED} == {True, False}


def test_control_records_hold_descriptors_and_scale_d():
    batch = pack([p for p in EXACT if hopper_kernel(hopper_form(p)) == hopper_kernel(hopper_form(EXACT[0]))])
    assert batch.control.shape[1] == HOPPER_CONTROL_BYTES
    record = batch.control[0]
    op = EXACT[0].ops[0]
    assert int.from_bytes(record[:8].tobytes(), "little") == op.a_desc
    assert int.from_bytes(record[8:16].tobytes(), "little") == op.b_desc
    assert int.from_bytes(record[16:20].tobytes(), "little") == int(op.scale_d)
    assert batch.images[0, :len(EXACT[0].smem[0].data)].tobytes() == EXACT[0].smem[0].data


def _values(codes: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "s32":
        return codes.astype(np.uint32).view(np.int32).astype(np.float64)
    if dtype == "f16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "bf16":
        return (codes.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype in ("s8", "u8"):
        return codes.astype(np.uint8).view(np.int8 if dtype == "s8" else np.uint8).astype(np.float64)
    return codes.astype(np.uint32).view(np.float32).astype(np.float64)  # f32, tf32 (exact values use no low bits)


@pytest.mark.parametrize("p", [p for p in EXACT if p.ops[0].dtype != "f16"], ids=lambda p: p.case_id)
def test_d_is_ab_plus_c_and_scale_d_false_ignores_c(p):
    """Metamorphic, exact inputs: D(C) = D(C = 0) + C exactly; with scale-d false D does not
    depend on C. (f32 and s32 only: an f16 accumulator's 11 bits need not hold A B + C exactly.)"""
    op = p.ops[0]
    with_c = dataclasses.replace(p, ops=(dataclasses.replace(op, scale_d=True),))
    zero = MatrixImage("c", 64, op.n, bytes(4 * 64 * op.n))
    zero_c = dataclasses.replace(with_c, matrices=tuple(zero if m.name == "c" else m for m in p.matrices))
    no_acc = dataclasses.replace(p, ops=(dataclasses.replace(op, scale_d=False),))
    d_c, d_0, d_off = (run(q, "exact").hopper_d for q in (with_c, zero_c, no_acc))
    np.testing.assert_array_equal(_values(d_c, op.dtype), _values(d_0, op.dtype) + _values(p.matrix("c"), op.dtype))
    np.testing.assert_array_equal(_values(d_off, op.dtype), _values(d_0, op.dtype))


def test_skip_reasons(monkeypatch):
    assert reason_for("sm_90", "NVIDIA H100 80GB HBM3") is None
    assert "sm_80" in reason_for("sm_80", "NVIDIA A100") and "sm_90" in reason_for("sm_80", "NVIDIA A100")
    reason = HopperBackend().unavailable_reason()  # None on an sm_90 GPU
    assert reason is None or ("\n" not in reason and ("no CUDA device" in reason or "sm_90" in reason))
    from tcgen05_conformance.harness.runner import generate_programs

    tcgen05 = generate_programs(1, 0)[0]
    [observed] = HopperBackend().observe([tcgen05])  # no GPU asked
    assert "blackwell" in observed.skip
    drawn = draw_examples(hopper_programs(), 120, 7)
    unmodelled = [p for p in drawn if (p.ops[0].OP == "mma.sp" and p.ops[0].atype in ("s4", "u4"))
                  or (p.ops[0].OP != "mma.sp" and p.ops[0].sparse and p.ops[0].a_in_registers)]
    monkeypatch.setattr(HopperBackend, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(HopperBackend, "runner", lambda self: pytest.fail("the GPU was asked about a case the oracle skips"))
    skipped = execute(unmodelled, ["hopper"]).results["hopper"]
    assert skipped and all(s.status == "skip" and s.detail.startswith("no reference state from oracle: not modelled") for s in skipped)


def test_campaign_chunks_alternate_inputs_and_group_their_kernels(tmp_path):
    settings = Settings(programs=6, seed=3, data_sets=1, chunk=3)
    first, second = (prepare(c, settings, KernelCache(str(tmp_path), assemble=lambda ptx, arch: ptx.encode()), Stages())
                     for c in (0, 1))
    assert (first[0]["inputs"], second[0]["inputs"]) == ("exact", "discriminating")
    for (chunk, details), c in ((first, 0), (second, 1)):
        programs = draw_chunk(c, settings)[1]
        assert sorted(p.case_id for group_programs, _ in details for p in group_programs) == sorted(p.case_id for p in programs)
        for group, (group_programs, expected) in zip(chunk["groups"], details):
            assert {hopper_kernel(hopper_form(p)) for p in group_programs} == {group.text} and group.cubin == group.text.encode()
            assert np.array_equal(group.expected, pack_d(group.batch.form, np.stack([e.state.hopper_d for e in expected])))
            assert group.operands is None  # the model computed D (Settings' default numerics)
            assert all(e.state.hopper_d.shape == ((64, p.ops[0].n) if p.ops[0].OP == "wgmma.mma_async" else (16, 8))
                       for p, e in zip(group_programs, expected))
            assert group.profile == ("sm_90a.mma_sync" if group_programs[0].ops[0].OP == "mma.sp" else "sm_90a")
    mixed = [p for p in DISCRIMINATING + EXACT if p.ops[0].atype != p.ops[0].btype]
    assert all(len(input_formats(p)) == 2 for p in mixed)


def test_a_from_registers_equals_the_same_a_from_shared_memory():
    """Metamorphic: moving A from its shared-memory layout into the register matrix leaves D."""
    from tcgen05_conformance.core.encoding import sdesc
    from tcgen05_conformance.core.isa.mma import TYPE_BITS
    from tcgen05_conformance.core.images import initial_images
    from tcgen05_conformance.core.layouts.operands import gather
    from tcgen05_conformance.core.layouts.smem import storage_for

    checked = 0
    for p in EXACT + DISCRIMINATING:
        op = p.ops[0]
        if op.a_in_registers or op.sparse or op.imm_scale_a == -1:
            continue
        k = op.k
        a = gather(initial_images(p), 0, sdesc.decode(op.a_desc, "sm90"), not op.imm_trans_a, 64, k,
                   storage_for(TYPE_BITS[op.atype], False), "wgmma")
        moved = dataclasses.replace(p, ops=(dataclasses.replace(op, a_in_registers=True, imm_trans_a=None, a_desc=0),),
                                    matrices=p.matrices + (MatrixImage("a", 64, k, a.astype("<u4").tobytes()),))
        assert np.array_equal(run(moved, "sm_90a").hopper_d, run(p, "sm_90a").hopper_d)
        checked += 1
    assert checked >= 5


def _metadata_word(fields: dict[int, int]) -> int:
    return sum(value << bit for bit, value in fields.items())


def test_sparse_metadata_positions_follow_the_register_layout():
    """Hand-built metadata words decoded as the sparse wgmma layout says (CUTLASS ELayout_64x32 for
    16-bit A: lane pairs (0, 1) and (2, 3) of each quad are the two selector choices; lane % 2 picks
    the K half; bits 0-15 are row groupID, 16-31 row groupID + 8; a group of four columns is one
    nibble of two 2-bit indices)."""
    from tcgen05_conformance.oracles.hopper import sparse_positions

    e = np.zeros(128, np.uint32)
    e[0] = _metadata_word({0: 0b1110, 4: 0b0100, 16: 0b1001})  # row 0 groups 0, 1; row 8 group 0
    e[1] = _metadata_word({0: 0b1100})  # row 0, group 4 (columns 16-19)
    e[2] = _metadata_word({0: 0b1000})  # the other selector's copy of row 0, group 0
    e[36] = _metadata_word({28: 0b1101})  # warp 1, lane 4: row 17 (16 + groupID 1), group 3 ... + 8 -> row 25
    zero = sparse_positions(e, 16, 32, 0)
    assert list(zero[0, :4]) == [2, 3, 4, 5] and list(zero[0, 8:10]) == [16, 19]
    assert list(zero[8, :2]) == [1, 2]
    assert list(zero[25, 6:8]) == [13, 15]
    one = sparse_positions(e, 16, 32, 1)
    assert list(one[0, :2]) == [0, 2]
    # words of threads the selector does not read change nothing
    noisy = e.copy()
    noisy[2] = 0xFFFFFFFF
    assert np.array_equal(sparse_positions(noisy, 16, 32, 0), zero)


def test_tf32_metadata_names_one_element_of_each_pair():
    from tcgen05_conformance.oracles.hopper import sparse_positions

    e = np.zeros(128, np.uint32)
    e[0] = _metadata_word({0: 0b0100, 4: 0b1110})  # row 0: pair 0 -> element 0, pair 1 -> element 3
    e[1] = _metadata_word({0: 0b1110})  # lane 1: columns 8-15, pair 4 -> element 9
    got = sparse_positions(e, 32, 16, 0)
    assert list(got[0, :2]) == [0, 3] and got[0, 4] == 9


def test_generated_sparse_programs_decode_to_what_the_generator_meant():
    """The generator's metadata words and the oracle's decoding agree on every position, and
    every group names two distinct elements of its own four (or one of its pair for tf32)."""
    from tcgen05_conformance.core.isa.fragments import WGMMA_METADATA, mma_sp_fragments
    from tcgen05_conformance.generators.programs import _sparse_metadata
    from tcgen05_conformance.oracles.hopper import sparse_positions

    rng = np.random.default_rng(3)
    ops = [p.ops[0] for p in draw_examples(hopper_programs(forms="modelled"), 90, 9) if getattr(p.ops[0], "sparse", True)]
    assert {32, 16, 8} <= {TYPE_BITS[op.atype] for op in ops} and {"mma.sp", "wgmma.mma_async"} <= {op.OP for op in ops}
    for op in ops:
        bits = TYPE_BITS[op.atype]
        fragment = mma_sp_fragments(bits, op.k).metadata if op.OP == "mma.sp" else WGMMA_METADATA[bits]
        words, positions = _sparse_metadata(rng, fragment, bits, op.k, op.sparse_selector)
        decoded = sparse_positions(words, bits, op.k, op.sparse_selector, fragment)
        assert np.array_equal(decoded, positions)
        group = 2 if bits == 32 else 4
        per_group = 1 if bits == 32 else 2
        assert (decoded // group == np.arange(op.k // 2) // per_group).all()
        if per_group == 2:
            assert (decoded[:, 0::2] != decoded[:, 1::2]).all()


@pytest.mark.parametrize("profile", ["exact", "sm_90a"])
def test_sparse_matmul_is_a_per_row_gathered_matmul(profile):
    """Independent reference: each row of D as an ordinary matrix product over the B rows that
    row's metadata selects."""
    from tcgen05_conformance.oracles.numerics import matmul
    from tcgen05_conformance.oracles.numerics.matmul import sparse_matmul

    rng = np.random.default_rng(8)
    a = rng.integers(0, 2**16, (64, 16), dtype=np.uint32) & 0xBFFF  # finite f16 codes
    b = rng.integers(0, 2**16, (24, 32), dtype=np.uint32) & 0xBFFF
    c = rng.integers(0, 2**32, (64, 24), dtype=np.uint32) & 0xBFFFFFFF
    columns = (4 * np.arange(8)[:, None] + np.sort(rng.permuted(np.tile(np.arange(4), (64, 8, 1)), axis=2)[..., :2], axis=2)).reshape(64, 16)
    want = np.concatenate([matmul(a[r:r + 1], b[:, columns[r]], c[r:r + 1], "f16", "f16", "f32", profile) for r in range(64)])
    assert np.array_equal(sparse_matmul(a, b, columns, c, "f16", "f16", "f32", profile), want)


def _mma_sp_element(operand: str, bits: int, lane: int, i: int) -> tuple[int, int]:
    """(row, column) of element i of a lane in the warp-level fragments, from the PTX ISA's mma
    fragment formulas (9.7.14.5.x): groupID = lane / 4, threadID_in_group = lane % 4. A is the
    compressed 16 x K/2 matrix, B is N x K (row n = groupID)."""
    g, t = divmod(lane, 4)
    if operand == "a":
        if bits == 16:
            return g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)
        if bits == 32:
            return g + 8 * (i % 2), t + 4 * (i // 2)
        return g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)
    if bits == 16:
        return g, 2 * t + i % 2 + 8 * (i // 2)
    if bits == 32:
        return g, t + 4 * i
    return g, 4 * t + i % 4 + 16 * (i // 4)


def test_mma_sp_programs_carry_their_registers_by_the_isa_fragments():
    assert MMA_SP and {TYPE_BITS[p.ops[0].atype] for p in MMA_SP} >= {16, 8}
    for p in MMA_SP:
        op, batch = p.ops[0], pack([p])
        words = batch.registers[0]
        registers = {"a": 0}
        bits = TYPE_BITS[op.atype]
        a_regs = op.k // 2 * 16 * bits // 32 // 32
        registers["b"] = a_regs
        for operand in ("a", "b"):
            matrix = p.matrix(operand)
            per = 32 // bits
            count = matrix.size // 32
            for lane in (0, 6, 31):
                for i in range(count):
                    row, col = _mma_sp_element(operand, bits, lane, i)
                    word = int(words[lane, registers[operand] + i // per])
                    assert (word >> (bits * (i % per))) & ((1 << bits) - 1) == int(matrix[row, col]), (op, operand, lane, i)
        assert np.array_equal(words[:, -1], p.matrix("e")[:, 0])


def test_mma_sp_metadata_words_by_hand():
    """m16n8k16 f16: one lane per quad holds rows groupID (bits 0-15) and groupID + 8 (16-31), the
    selector naming it; m16n8k32 8-bit... lane pairs, lane % 2 the K half (assumption A-MMA-SP-METADATA)."""
    from tcgen05_conformance.core.isa.fragments import mma_sp_fragments
    from tcgen05_conformance.oracles.hopper import sparse_positions

    e = np.zeros(32, np.uint32)
    e[4 * 3 + 2] = _metadata_word({0: 0b1110, 20: 0b1001})  # lane 14: groupID 3, selector 2
    got = sparse_positions(e, 16, 16, 2, mma_sp_fragments(16, 16).metadata)
    assert list(got[3, :2]) == [2, 3] and list(got[11, 2:4]) == [5, 6]
    e = np.zeros(32, np.uint32)
    e[4 * 5 + 3] = _metadata_word({0: 0b1100})  # lane 23: groupID 5, second of selector 1's pair: K half 16-31
    got = sparse_positions(e, 16, 32, 1, mma_sp_fragments(16, 32).metadata)
    assert list(got[5, 8:10]) == [16, 19]


def test_mma_sp_oracle_is_a_sparse_product_computed_independently():
    from tcgen05_conformance.core.isa.fragments import mma_sp_fragments
    from tcgen05_conformance.oracles.hopper import sparse_positions

    exact = [p for p in draw_examples(hopper_programs(inputs="exact", forms="modelled"), 80, 12)
             if p.ops[0].OP == "mma.sp" and p.ops[0].dtype == "f32" and p.ops[0].atype in ("f16", "bf16", "tf32")]
    assert len(exact) >= 3
    for p in exact:
        op = p.ops[0]
        bits = TYPE_BITS[op.atype]
        columns = sparse_positions(p.matrix("e")[:, 0], bits, op.k, op.sparse_selector, mma_sp_fragments(bits, op.k).metadata)
        a, b, c = (_values(p.matrix(x), t) for x, t in (("a", op.atype), ("b", op.btype), ("c", "f32")))
        want = np.array([[(a[r] * b[n, columns[r]]).sum() + c[r, n] for n in range(8)] for r in range(16)])
        got = run(p).hopper_d.view(np.float32).astype(np.float64)
        np.testing.assert_array_equal(got, want)


def test_scale_d_false_is_a_times_b_with_its_zero_sign():
    """A-NO-ACCUMULATOR: with scale-d false, D = A x B (9.7.15.5.2). Under `exact`, a row of -0
    products (A = -0 through imm-scale-a = -1, B = +0) sums to -0, as the IEEE sum of the products
    alone; with scale-d true and C = +0 it is +0. The hardware profile gives +0 either way (every zero
    result +0, measured on H100)."""
    p = next(q for q in EXACT if q.ops[0].dtype == "f32" and q.ops[0].atype in ("f16", "bf16") and not q.ops[0].a_in_registers)
    op = p.ops[0]
    zeros = tuple(dataclasses.replace(s, data=bytes(len(s.data))) for s in p.smem)
    zero_c = tuple(MatrixImage("c", 64, op.n, bytes(4 * 64 * op.n)) if m.name == "c" else m for m in p.matrices)
    negated = dataclasses.replace(op, imm_scale_a=-1)
    no_acc = dataclasses.replace(p, smem=zeros, matrices=zero_c, ops=(dataclasses.replace(negated, scale_d=False),))
    with_c = dataclasses.replace(no_acc, ops=(dataclasses.replace(negated, scale_d=True),))
    assert set(run(no_acc, "exact").hopper_d.ravel().tolist()) == {0x80000000}
    assert set(run(with_c, "exact").hopper_d.ravel().tolist()) == {0}
    assert set(run(no_acc, "sm_90a").hopper_d.ravel().tolist()) == {0}
