"""tcgen05_conformance.harness.diff: differences planted into a copy of an oracle result are found at their
positions, counted, ordered and limited, and their words decoded as the element types the
program gives them. Expected positions come from the data-path layout of PTX ISA 9.7.16.10.5
(layout D: row r at lane r, column j at column j) and decoded values from struct / ml_dtypes,
independently of the code under test."""

from __future__ import annotations

import copy
import json
import struct

import ml_dtypes
import numpy as np
import pytest

from tcgen05_conformance.core.encoding import idesc, taddr
from tcgen05_conformance.core.instructions import Tcgen05Ld, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.diff import diff_states
from tcgen05_conformance.generators.programs import hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run

CLASSES = {c.id: c for c in mma.SHAPE_CLASSES}


def _programs(class_id: str, count: int = 12, seed: int = 1) -> list[Program]:
    return draw_examples(tcgen05_programs("sm_100a", CLASSES[class_id]), count, seed)


def _f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _f16_bits(value: float) -> int:
    return struct.unpack("<H", struct.pack("<e", value))[0]


def _values(text: str) -> list[float]:
    """The numbers of a decoded word: "1.5" or "[1.5, -2, nan]"."""
    return [float(x) for x in text.strip("[]").split(", ")]


def _assert_reads_back(text: str, elements: np.ndarray) -> None:
    """The decoded text, rounded to the elements' format, is the elements (NaN equal to NaN)."""
    read = np.array(_values(text)).astype(elements.dtype).astype(np.float64)
    np.testing.assert_array_equal(read, elements.astype(np.float64))


def _d_origin(p: Program) -> tuple[int, int, str]:
    """(lane, column, D type) of D row 0 column 0 for a layout-D MMA (M = 128, cta_group::1)."""
    op = p.ops[0]
    lane, column = taddr.decode(op.d_tmem)
    return lane, column, idesc.decode(op.kind, op.idesc).dtype


@pytest.mark.parametrize("class_id", ["f16.dense.cta1.m128.k16", "tf32.dense.cta1.m128.k8", "i8.dense.cta1.m128.k32"])
def test_planted_d_word_is_found_and_decoded(class_id):
    p = _programs(class_id, 1)[0]
    expected = run(p)
    lane0, col0, dtype = _d_origin(p)
    actual = copy.deepcopy(expected)
    planted = {"f32": _f32_bits(1.25), "f16": _f16_bits(1.25), "s32": 125}[dtype]
    if expected.tmem[0, lane0 + 5, col0 + 17] == planted:
        planted ^= 1 << 20
    actual.tmem[0, lane0 + 5, col0 + 17] = planted
    diff = diff_states(p, expected, actual)
    assert (diff.words, diff.mismatched) == (expected.tmem.size, 1)
    (m,) = diff.first
    assert (m.place, m.cta, m.row, m.column) == ("tmem", 0, lane0 + 5, col0 + 17)
    assert (m.expected_bits, m.actual_bits) == (int(expected.tmem[0, lane0 + 5, col0 + 17]), planted)
    old = int(expected.tmem[0, lane0 + 5, col0 + 17])
    if dtype == "f32":
        assert m.element == "D f32"
        assert m.actual == "1.25" or planted != _f32_bits(1.25)
        assert np.float32(float(m.expected)) == struct.unpack("<f", struct.pack("<I", old))[0]
    elif dtype == "f16":
        assert m.element == "D f16 (low half)"
        assert m.actual == "1.25" or planted != _f16_bits(1.25)
        assert np.float16(float(m.expected)) == struct.unpack("<e", struct.pack("<H", old & 0xFFFF))[0]
        actual.tmem[0, lane0 + 5, col0 + 17] = 0x12340000 | _f16_bits(1.25)  # a 16-bit D's high half is shown when not 0
        assert diff_states(p, expected, actual).first[0].actual == "1.25 (high half 0x1234)"
    else:
        assert m.element == "D s32"
        assert int(m.expected) == struct.unpack("<i", struct.pack("<I", old))[0]
    assert f"tmem lane {lane0 + 5} column {col0 + 17} ({m.element})" in diff.summary_line()
    assert diff.summary_line().startswith(f"1 of {expected.tmem.size} words differ")


def test_counts_order_and_limit_over_both_ctas():
    p = _programs("f16.dense.cta2.m256.k16", 1)[0]
    expected = run(p)
    actual = copy.deepcopy(expected)
    rng = np.random.default_rng(7)
    flat = rng.choice(expected.tmem.size, 40, replace=False)
    places = sorted(np.unravel_index(k, expected.tmem.shape) for k in flat)
    for cta, lane, column in places:
        actual.tmem[cta, lane, column] ^= np.uint32(1 << int(rng.integers(0, 32)))
    diff = diff_states(p, expected, actual, limit=5)
    assert diff.mismatched == 40 and diff.words == expected.tmem.size
    assert [(m.cta, m.row, m.column) for m in diff.first] == [tuple(int(x) for x in t) for t in places[:5]]
    assert len(diff_states(p, expected, actual, limit=100).first) == 40
    assert diff_states(p, expected, actual, limit=0).first == ()
    assert {m.cta for m in diff_states(p, expected, actual, limit=40).first} == {0, 1}


def test_identical_states_match():
    p = _programs("f16.dense.cta1.m64.k16", 1)[0]
    expected = run(p)
    diff = diff_states(p, expected, copy.deepcopy(expected))
    assert (diff.mismatched, diff.first) == (0, ())
    assert diff.summary_line() == f"all {expected.tmem.size} words match"


def test_packed_a_in_tmem_is_decoded_element_by_element():
    """A in TMEM (layout D, row r at lane r): 8-bit elements four to a word, f16 two to a word."""
    checked = set()
    for class_id in ("i8.dense.cta1.m128.k32", "f16.dense.cta1.m128.k16", "f8f6f4.dense.cta1.m128.k32"):
        for p in _programs(class_id):
            op = p.ops[0]
            atype = idesc.decode(op.kind, op.idesc).atype
            if op.a_tmem is None or atype in checked:
                continue
            checked.add(atype)
            expected = run(p)
            lane, column = taddr.decode(op.a_tmem)
            actual = copy.deepcopy(expected)
            actual.tmem[0, lane + 3, column] ^= np.uint32(0x01010101)
            (m,) = diff_states(p, expected, actual).first
            assert (m.row, m.column) == (lane + 3, column)
            raw = struct.pack("<I", m.actual_bits)
            if atype in ("s8", "u8"):
                assert m.element == f"A {atype} x4"
                assert _values(m.actual) == list(struct.unpack("<4b" if atype == "s8" else "<4B", raw))
            elif atype in ("f16", "bf16"):
                assert m.element == f"A {atype} x2"
                dtype = np.float16 if atype == "f16" else ml_dtypes.bfloat16
                _assert_reads_back(m.actual, np.frombuffer(raw, dtype=dtype))
            elif atype in ("e4m3", "e5m2"):
                assert m.element == f"A {atype} x4"
                dtype = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[atype]
                _assert_reads_back(m.actual, np.frombuffer(raw, dtype=dtype))
            else:  # 4/6-bit elements in 8-bit containers: 00xxxx00 / 0xxxxxx0 (assumption A-F4F6-TMEM-CONTAINER)
                assert m.element == f"A {atype} x4 (8-bit containers)"
                bits = mma.TYPE_BITS[atype]
                codes = (np.frombuffer(raw, dtype=np.uint8) >> {4: 2, 6: 1}[bits]) & ((1 << bits) - 1)
                dtype = {"e2m1": ml_dtypes.float4_e2m1fn, "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn}[atype]
                _assert_reads_back(m.actual, codes.astype(np.uint8).view(dtype))
    assert len(checked) >= 4


def _wgmma_with_smem_operands() -> Program:
    for p in draw_examples(hopper_programs(), 30, 2):
        op = p.ops[0]
        if isinstance(op, WgmmaMma) and not op.a_in_registers and not op.sparse:
            return p
    raise AssertionError("no wgmma with both operands in shared memory drawn")


def test_hopper_d_mismatch_names_row_and_column():
    p = _wgmma_with_smem_operands()
    expected = run(p)
    actual = copy.deepcopy(expected)
    last = p.ops[0].n - 1
    actual.hopper_d[5, last] ^= np.uint32(0x00000400)
    actual.hopper_d[63, 0] ^= np.uint32(1)
    diff = diff_states(p, expected, actual)
    assert diff.words == expected.tmem.size + 64 * p.ops[0].n
    assert diff.mismatched == 2
    assert [(m.place, m.row, m.column) for m in diff.first] == [("d", 5, last), ("d", 63, 0)]
    dtype = p.ops[0].dtype
    assert diff.first[0].element == ("D f16 (low half)" if dtype == "f16" else f"D {dtype}")
    word = np.array([diff.first[0].actual_bits], dtype=np.uint32)
    value = {"f32": word.view(np.float32), "f16": word.astype(np.uint16).view(np.float16), "s32": word.view(np.int32)}[dtype]
    _assert_reads_back(diff.first[0].actual, value)
    assert f"d row 5 column {last} ({diff.first[0].element})" in diff.summary_line()


def _store_then_load_program() -> Program:
    st = Tcgen05St(shape="32x32b", num=4, taddr=0, values_seed=3)
    return Program(target="sm_100a", tmem_columns=32,
                   ops=(st, Tcgen05Ld(shape="32x32b", num=4), Tcgen05Ld(shape="32x32b", num=4, red_op="max", red_type="f32")))


def test_ld_registers_follow_tmem_and_redval_has_its_type():
    p = _store_then_load_program()
    expected = run(p)
    actual = copy.deepcopy(expected)
    actual.loads[1][3, 4] = np.uint32(_f32_bits(-2.0))
    actual.loads[0][2, 1] ^= np.uint32(1)
    actual.tmem[0, 31, 31] ^= np.uint32(1)
    diff = diff_states(p, expected, actual)
    assert diff.words == expected.tmem.size + 32 * 4 + 32 * 5
    assert [(m.place, m.row, m.column, m.element) for m in diff.first] == [
        ("tmem", 31, 31, "b32"), ("ld[0]", 2, 1, "b32"), ("ld[1]", 3, 4, "redval f32")]
    assert diff.first[2].actual == "-2"
    assert diff.first[1].expected == f"{int(expected.loads[0][2, 1]):#010x}"
    assert "ld[0] thread 2 register 1" in diff_states(p, expected, _with_load_flip(expected)).summary_line()


def _with_load_flip(expected):
    actual = copy.deepcopy(expected)
    actual.loads[0][2, 1] ^= np.uint32(1)
    return actual


def test_as_dict_is_json_and_keeps_every_field():
    p = _store_then_load_program()
    expected = run(p)
    diff = diff_states(p, expected, _with_load_flip(expected))
    data = json.loads(json.dumps(diff.as_dict()))
    assert data["words"] == diff.words and data["mismatched"] == 1
    assert data["first"][0] == {"place": "ld[0]", "cta": 0, "row": 2, "column": 1, "element": "b32",
                                "expected_bits": int(expected.loads[0][2, 1]),
                                "actual_bits": int(expected.loads[0][2, 1]) ^ 1,
                                "expected": f"{int(expected.loads[0][2, 1]):#010x}",
                                "actual": f"{int(expected.loads[0][2, 1]) ^ 1:#010x}"}


def test_states_of_another_shape_are_refused():
    p = _store_then_load_program()
    expected = run(p)
    short = copy.deepcopy(expected)
    short.loads = short.loads[:1]
    with pytest.raises(ValueError, match="1 tcgen05.ld results, expected 2"):
        diff_states(p, expected, short)
    narrow = copy.deepcopy(expected)
    narrow.tmem = narrow.tmem[:, :, :16]
    with pytest.raises(ValueError, match="actual tmem has shape 1x128x16, expected 1x128x32"):
        diff_states(p, expected, narrow)
