"""The hopper backend's host side (no GPU needed): register operands carried by programs, their
packing into per-thread fragments and control records, the oracle's use of C and scale-d, the
skip reasons, and the campaign's chunks. The GPU side is tests/device."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from conformance.backends.hopper import HopperBackend, expected_state, reason_for
from conformance.program import MatrixImage, ProgramError, dumps, loads
from device.hopper_batch import pack, unpack_d
from device.hopper_campaign import input_formats, prepare
from device.ptx.kernels import HOPPER_CONTROL_BYTES, hopper_form, hopper_kernel
from generators.programs import hopper_programs
from generators.sampling import draw_examples
from oracles.execute import run

EXACT = draw_examples(hopper_programs(inputs="exact", forms="modelled"), 12, 5)
DISCRIMINATING = draw_examples(hopper_programs(inputs="discriminating", forms="modelled"), 12, 6)


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


def _fragment_element(thread: int, i: int, per_register: int) -> tuple[int, int]:
    """(row, column) of accumulator element i of a thread, from the PTX ISA's wgmma D fragment
    (9.7.15.5.1.1): row = 16 warp + groupID (+ 8 for the second pair of each group of four),
    column = 8 (i // 4) + 2 threadID_in_group + (i % 2)."""
    warp, lane = divmod(thread, 32)
    group, in_group = divmod(lane, 4)
    return 16 * warp + group + 8 * ((i % 4) // 2), 8 * (i // 4) + 2 * in_group + i % 2


@pytest.mark.parametrize("p", [p for p in EXACT + DISCRIMINATING][:12], ids=lambda p: f"{p.ops[0].dtype}-n{p.ops[0].n}")
def test_c_is_packed_by_the_isa_fragment_and_d_unpacks_back(p):
    batch = pack([p])
    op, c = p.ops[0], p.matrix("c")
    per = 2 if op.dtype == "f16" else 1
    words = batch.registers[0]
    for thread in (0, 5, 37, 127):
        for i in range(0, op.n // 2, 3):
            row, col = _fragment_element(thread, i, per)
            word = int(words[thread, i // per])
            got = (word >> (16 * (i % per))) & 0xFFFF if per == 2 else word
            assert got == int(c[row, col]), (thread, i)
    assert np.array_equal(unpack_d(batch.form, batch.registers[:, :, :batch.form.words_out])[0], c)


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
    return codes.astype(np.uint32).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("p", EXACT, ids=lambda p: p.case_id)
def test_d_is_ab_plus_c_and_scale_d_false_ignores_c(p):
    """Metamorphic, exact inputs: D(C) = D(C = 0) + C exactly; with scale-d false D does not
    depend on C."""
    op = p.ops[0]
    with_c = dataclasses.replace(p, ops=(dataclasses.replace(op, scale_d=True),))
    zero_c = dataclasses.replace(with_c, matrices=(MatrixImage("c", 64, op.n, bytes(4 * 64 * op.n)),))
    no_acc = dataclasses.replace(p, ops=(dataclasses.replace(op, scale_d=False),))
    d_c, d_0, d_off = (run(q, "exact").hopper_d for q in (with_c, zero_c, no_acc))
    np.testing.assert_array_equal(_values(d_c, op.dtype), _values(d_0, op.dtype) + _values(p.matrix("c"), op.dtype))
    np.testing.assert_array_equal(_values(d_off, op.dtype), _values(d_0, op.dtype))


def test_skip_reasons():
    assert reason_for("sm_90", "NVIDIA H100 80GB HBM3") is None
    assert "sm_80" in reason_for("sm_80", "NVIDIA A100") and "sm_90" in reason_for("sm_80", "NVIDIA A100")
    reason = HopperBackend().unavailable_reason()  # None on an sm_90 GPU
    assert reason is None or ("\n" not in reason and ("no CUDA device" in reason or "sm_90" in reason))
    from conformance.runner import generate_programs

    tcgen05 = generate_programs(1, 0)[0]
    assert expected_state(tcgen05).status == "skip" and "blackwell" in expected_state(tcgen05).detail
    sparse = draw_examples(hopper_programs(), 60, 7)
    skipped = [expected_state(p) for p in sparse if getattr(p.ops[0], "sparse", False) or p.ops[0].OP == "mma.sp"]
    assert skipped and all(s.status == "skip" and "not modelled" in s.detail for s in skipped)


def test_campaign_chunks_alternate_inputs_and_name_their_kernels():
    first, second = prepare(0, 3, 3), prepare(1, 3, 3)
    assert (first["inputs"], second["inputs"]) == ("exact", "discriminating")
    for chunk in (first, second):
        assert [hopper_kernel(hopper_form(p)) for p in chunk["programs"]] == chunk["texts"]
        assert all(e.hopper_d.shape == (64, p.ops[0].n) for p, e in zip(chunk["programs"], chunk["expected"]))
    mixed = [p for p in DISCRIMINATING + EXACT if p.ops[0].atype != p.ops[0].btype]
    assert all(len(input_formats(p)) == 2 for p in mixed)
