"""Programs as values: JSON round trip, canonical form, content-hash case ids, strict loading."""

import dataclasses
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcgen05_conformance.core.instructions import INSTRUCTION_TYPES, Tcgen05Commit, Tcgen05Cp, Tcgen05Ld, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.operands import DOMAINS
from tcgen05_conformance.core.program import (
    Program,
    ProgramError,
    SmemSegment,
    TmemRegion,
    canonical_json,
    case_id,
    dumps,
    from_json,
    load,
    loads,
    to_json,
)
from tcgen05_conformance.generators.programs import hopper_programs, tcgen05_programs


@given(st.sampled_from(TCGEN05_TARGETS).flatmap(tcgen05_programs))
def test_tcgen05_programs_round_trip_through_json(p):
    assert loads(dumps(p)) == p
    assert loads(canonical_json(p)) == p


@given(hopper_programs())
def test_hopper_programs_round_trip_through_json(p):
    assert loads(dumps(p)) == p


def _program(**changes) -> Program:
    base = dict(target="sm_100a", ops=(Tcgen05Mma(kind="f16", idesc=0x08200490),),
                smem=(SmemSegment(0, bytes(range(32))),), tmem_columns=64)
    return Program(**(base | changes))


def test_canonical_json_is_key_order_and_whitespace_independent():
    p = _program()
    shuffled = json.dumps(dict(reversed(list(to_json(p).items()))), indent=3)
    assert canonical_json(loads(shuffled)) == canonical_json(p)


def test_case_id_depends_on_content_not_on_the_label():
    p = _program()
    assert case_id(p) == case_id(_program(label="renamed"))
    assert case_id(p) != case_id(_program(smem=(SmemSegment(0, bytes(31) + b"\x01"),)))
    assert case_id(p) != case_id(_program(ops=(Tcgen05Mma(kind="f16", idesc=0x08200491),)))
    assert len(case_id(p)) == 16 and int(case_id(p), 16) >= 0


def _mutated(path: list, value) -> str:
    obj = to_json(_program(tmem=(TmemRegion(0, 0, 1, 2, bytes(8)),)))
    node = obj
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(obj)


@pytest.mark.parametrize("path, value, message", [
    (["ops", 0, "kindd"], "f16", "$.ops[0].kindd: unknown field"),
    (["ops", 0, "cta_group"], "1", "$.ops[0].cta_group: expected an integer"),
    (["ops", 0, "ws"], 1, "$.ops[0].ws: expected true or false"),
    (["ops", 0, "op"], "tcgen05.mmaa", "$.ops[0].op: 'tcgen05.mmaa' is not one of"),
    (["ops", 0, "kind"], KeyError, "$.ops[0].kind: missing required field"),
    (["ops", 0, "disable_output_lane"], [1, "x"], "$.ops[0].disable_output_lane[1]: expected an integer"),
    (["tmem_columns"], 48, "$.tmem_columns: 48 is not a power of 2"),
    (["target"], "sm_99", "$.target: 'sm_99' is not one of"),
    (["ctas"], 3, "$.ctas: 3 is out of range"),
    (["smem", 0, "base64"], "@@@", "$.smem[0].base64: not valid base64"),
    (["smem", 0, "offset"], 227 * 1024, "$.smem[0]: 32 bytes at offset"),
    (["tmem", 0, "base64"], "AAAA", "$.tmem[0].base64: holds 3 bytes, expected 4 x 1 x 2"),
    (["schema"], "tcgen05-conformance/program/0", "$.schema:"),
    (["extra"], 1, "$.extra: unknown field"),
])
def test_malformed_programs_get_one_line_errors_naming_the_path(path, value, message):
    with pytest.raises(ProgramError) as e:
        loads(_mutated(path, value))
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def test_not_json_is_reported_with_its_position():
    with pytest.raises(ProgramError, match=r"^\$: not JSON \(.* line 1 column 2\)"):
        loads("{oops")


def test_negative_immediates_survive_only_where_the_type_allows_them():
    op = WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16", imm_scale_a=-1, imm_trans_a=0, imm_trans_b=0)
    p = Program(target="sm_90a", ops=(op,))
    assert loads(dumps(p)).ops[0].imm_scale_a == -1
    bad = to_json(p)
    bad["ops"][0]["n"] = -8
    with pytest.raises(ProgramError, match=r"\$\.ops\[0\]\.n: -8 is not one of 8, 16, ..., 256"):
        from_json(bad)


# --- issue 15: the loader accepts exactly what the instruction model represents ----------------


def _with_op(target: str, op, **changes) -> str:
    """A one-operation program's JSON with fields of the operation changed (KeyError: removed)."""
    obj = to_json(Program(target=target, ops=(op,)))
    for name, value in changes.items():
        if value is KeyError:
            del obj["ops"][0][name]
        else:
            obj["ops"][0][name] = value
    return json.dumps(obj)


MMA = Tcgen05Mma(kind="f16", idesc=0x08200490)


@pytest.mark.parametrize("text, message", [
    # Values the ISA forbids and the legality model knows: refused by the loader, not passed by the oracle.
    (_with_op("sm_100a", MMA, kind="f128"), "$.ops[0].kind: 'f128' is not one of f16, tf32, f8f6f4, i8, mxf8f6f4"),
    (_with_op("sm_100a", MMA, collector="a::bogus"), "$.ops[0].collector: 'a::bogus' is not one of a::fill, a::use"),
    (_with_op("sm_100a", MMA, disable_output_lane=[1]), "$.ops[0].disable_output_lane: 1 words for .cta_group::1, "
                                                        "which takes 4"),
    (_with_op("sm_100a", MMA, cta_group=2, disable_output_lane=[0, 0, 0, 0]), "$.ops[0].disable_output_lane: 4 words "
                                                                             "for .cta_group::2, which takes 8"),
    (_with_op("sm_100a", MMA, idesc=KeyError), "$.ops[0].idesc: missing required field"),
    (json.dumps(dict(to_json(Program("sm_100a", (MMA,))), ops=[])), "$.ops: 0 operations; a program issues 1 to 256"),
    (json.dumps(to_json(Program("sm_100a", (Tcgen05Ld("32x32b", 128),) * 257))), "$.ops: 257 operations; a program issues 1 to 256"),
    # Found by fuzzing: enumerations and widths the oracle and the legality check relied on.
    (_with_op("sm_100a", Tcgen05Cp("128x256b"), shape="32x32b"), "$.ops[0].shape: '32x32b' is not one of 128x256b"),
    (_with_op("sm_90a", WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16"), atype="u8x"),
     "$.ops[0].atype: 'u8x' is not one of f16, bf16, tf32, e4m3, e5m2, s8, u8"),
    (_with_op("sm_100a", MMA, cta_group=3), "$.ops[0].cta_group: 3 is not one of 1, 2"),
    (_with_op("sm_100a", MMA, idesc=1 << 32), "$.ops[0].idesc: 4294967296 is not in [0, 4294967295]"),
    (_with_op("sm_100a", MMA, b_desc=1 << 64), "$.ops[0].b_desc: 18446744073709551616 is not in [0, 18446744073709551615]"),
    (_with_op("sm_100a", MMA, zero_column_mask=1 << 64), "$.ops[0].zero_column_mask: 18446744073709551616 is not in"),
    (_with_op("sm_100a", MMA, d_tmem=1 << 40), "$.ops[0].d_tmem: 1099511627776 is not in [0, 4294967295]"),
    (_with_op("sm_100a", Tcgen05Ld("32x32b", 1), num=2**64 - 1), "$.ops[0].num: 18446744073709551615 is not one of "
                                                                 "1, 2, 4, 8, 16, 32, 64, 128"),
    (_with_op("sm_100a", Tcgen05Commit(), cta_mask=1 << 16), "$.ops[0].cta_mask: 65536 is not in [0, 65535]"),
    (_with_op("sm_90a", WgmmaMma(n=64, k=16, dtype="f32", atype="f16", btype="f16"), imm_scale_a=2),
     "$.ops[0].imm_scale_a: 2 is not one of 1, -1"),
])
def test_the_loader_refuses_what_the_instruction_model_cannot_represent(text, message):
    with pytest.raises(ProgramError) as e:
        loads(text)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_every_instruction_field_has_a_domain_and_every_domain_a_field():
    fields = {(cls.OP, f.name): f.type for cls in INSTRUCTION_TYPES.values() for f in dataclasses.fields(cls)}
    assert set(DOMAINS) <= set(fields)
    assert {key for key, hint in fields.items() if "bool" not in str(hint)} == set(DOMAINS)


def test_an_unknown_key_is_named_on_one_line_whatever_it_holds():
    obj = json.loads(_with_op("sm_100a", MMA))
    obj["ops"][0]["bad\nkey\u2028"] = 1
    with pytest.raises(ProgramError) as e:
        from_json(obj)
    assert str(e.value).startswith('$.ops[0]["bad\\nkey\\u2028"]: unknown field') and str(e.value).isprintable()


@pytest.mark.parametrize("text", [
    "[" * 1000 + "]" * 1000,
    "[" * 100_000,
    _with_op("sm_100a", MMA).replace('"ops": [', '"ops": [' + "[" * 200, 1)[:-2] + "]" * 201 + "}",
    '{"label": "' + "[" * 500 + '", "x": ' + "{" * 70,
])
def test_deep_nesting_is_refused_before_json_recurses(text):
    with pytest.raises(ProgramError, match=r"^\$: not accepted: JSON nested more than 64 levels deep \(at line 1 column"):
        loads(text)


def test_brackets_inside_strings_do_not_count_as_nesting():
    p = Program("sm_100a", (MMA,), label="[" * 100 + "{" * 100)
    assert loads(dumps(p)) == p


def test_errors_about_a_file_name_it(tmp_path):
    bad_utf8 = tmp_path / "bad\nname.json"
    bad_utf8.write_bytes(b'{"schema": "\xff"}')
    with pytest.raises(ProgramError) as e:
        load(str(bad_utf8))
    assert str(e.value) == f"{tmp_path}/bad\\nname.json: byte 12 (0xff) is not UTF-8"
    out_of_range = tmp_path / "case.json"
    out_of_range.write_text(_with_op("sm_100a", MMA, d_tmem=1 << 32))
    with pytest.raises(ProgramError, match=rf"^{out_of_range}: \$\.ops\[0\]\.d_tmem: 4294967296 is not in"):
        load(str(out_of_range))
    with pytest.raises(ProgramError, match=rf"^{tmp_path}: not a regular file \(a directory\)$"):
        load(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ProgramError, match=r": not a regular file \(a FIFO\)$"):  # never opened: it would block
        load(str(fifo))


def test_an_integer_of_thousands_of_digits_is_refused_on_one_line():
    with pytest.raises(ProgramError, match=r"^\$: not accepted: Exceeds the limit \(4300 digits\) for integer string "
                                           r"conversion: value has 5000 digits$"):
        loads('{"ctas": ' + "9" * 5000 + "}")
