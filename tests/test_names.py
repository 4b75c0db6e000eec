"""One name per concept: the facts tables the rest of the code reads, checked against the ISA text
(transcribed here, not read from the code) and against their users."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen05_conformance.cli import parser
from tcgen05_conformance.core.encoding import idesc, sdesc
from tcgen05_conformance.core.instructions import Tcgen05Fence
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.layouts.smem import SWIZZLE_BITS, SWIZZLE_ROW_BYTES
from tcgen05_conformance.core.layouts.tmem import META_CHUNK_ELEMENTS, a_tmem_container_bits, data_path
from tcgen05_conformance.core.numeric_profiles import DEFAULT_PROFILE, NUMERIC_PROFILES, PROFILE_NAMES
from tcgen05_conformance.core.program import Program, ProgramError, dumps, loads
from tcgen05_conformance.oracles.numerics.profiles import PROFILES, unregistered_names

# --- numeric profiles ---------------------------------------------------------------------------


def test_the_oracle_models_exactly_the_named_profiles_and_their_variants():
    assert unregistered_names(PROFILES) == []
    assert set(PROFILE_NAMES) <= set(PROFILES)
    assert DEFAULT_PROFILE in PROFILE_NAMES


def test_a_registry_that_drifts_from_the_names_is_reported():
    stray = {**PROFILES, "sm_120a": PROFILES["sm_100a"]}
    assert unregistered_names(stray) == ["profile 'sm_120a' is not named in conformance/core/numeric_profiles.py"]
    short = {name: p for name, p in PROFILES.items() if name != "sm_90a"}
    assert unregistered_names(short) == ["profile 'sm_90a' has no model"]


@pytest.mark.parametrize("name", [n for n, f in NUMERIC_PROFILES.items() if f.gpu])
def test_each_hardware_profile_is_described_by_its_model_as_its_gpu_and_architecture(name):
    facts, description = NUMERIC_PROFILES[name], PROFILES[name].description
    assert facts.gpu in description and facts.architecture in description and name in description


def test_programs_accept_every_profile_name_and_only_those():
    for name in PROFILE_NAMES:
        assert loads(dumps(Program("sm_100a", (Tcgen05Fence(),), profile=name))).profile == name
    text = json.loads(dumps(Program("sm_100a", (Tcgen05Fence(),))))
    text["profile"] = "sm_90a.mma_sync"  # an instruction-family variant, chosen by the oracle, not by programs
    with pytest.raises(ProgramError, match=r"\$\.profile"):
        loads(json.dumps(text))


@pytest.mark.parametrize("command", [["run"], ["export", "--out", "x"], ["replay", "x.json"]])
def test_the_cli_profile_choices_are_the_names(command, capsys):
    """Every profile name is accepted, and an unknown one is refused naming each of them (read from
    argparse's own error) and the profile files that are the other choice."""
    for name in PROFILE_NAMES:
        assert parser().parse_args([*command, "--profile", name]).profile == name
    with pytest.raises(SystemExit):
        parser().parse_args([*command, "--profile", "no-such-profile"])
    err = capsys.readouterr().err
    assert "'no-such-profile'" in err and "profile JSON file" in err
    assert all(f"'{name}'" in err for name in PROFILE_NAMES)


# --- 9.7.16.10.5: data-path layouts ----------------------------------------------------------------

# The table of 9.7.16.10.5: (M, cta_group, sparse, .ws) -> (Layout ID, Datapath organization, lane alignments).
ISA_LAYOUTS = {
    (32, 1, False, True): ("G", "1x4", (0,)), (32, 1, True, True): ("G", "1x4", (0,)),
    (64, 1, False, True): ("E", "2x3", (0,)), (64, 1, True, True): ("E", "2x3", (0,)),
    (64, 1, False, False): ("F", "4x1 half", (0, 16)), (64, 1, True, False): ("F", "4x1 half", (0, 16)),
    (128, 1, False, False): ("D", "4x1", (0,)), (128, 1, True, True): ("D", "4x1", (0,)),
    (128, 2, False, False): ("B", "2x2", (0,)),
    (128, 2, True, False): ("C", "4x1 half", (0, 16)),
    (256, 2, False, False): ("A", "4x1", (0,)), (256, 2, True, False): ("A", "4x1", (0,)),
}


@pytest.mark.parametrize("key", ISA_LAYOUTS)
def test_the_data_path_layout_of_each_isa_row(key):
    layout = mma.data_path_layout(*key)
    assert (layout.layout, layout.organisation, layout.lane_alignments) == ISA_LAYOUTS[key]


def test_each_layout_spreads_n_as_its_organisation_says():
    """"RxC" spreads N over C groups of lanes, "half" uses 16 of each 32 lanes; layout E, which the
    ISA calls "2x3", is read as 2x2 (assumption A-LAYOUT-E-2x2)."""
    for name, layout in mma.DATA_PATH_LAYOUTS.items():
        columns = 2 if name == "E" else int(layout.organisation.split()[0].split("x")[1])
        assert (layout.splits, layout.half) == (columns, "half" in layout.organisation), name
    for (m, group, sparse, ws), (name, _, _) in ISA_LAYOUTS.items():
        dp = data_path(m, group, sparse, ws)
        assert (dp.layout, dp.rows, dp.splits) == (name, m // group, mma.DATA_PATH_LAYOUTS[name].splits)


# --- other ISA tables read in several places -------------------------------------------------------


def test_table_47_largest_num_per_shape():
    """Table 47: the last .num before "NA" per shape."""
    assert {n: s.max_num for n, s in dm.LDST_SHAPES.items()} == {
        "32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32, "16x32bx2": 128}


def test_sparsity_chunks_are_two_four_or_eight_elements():
    """9.7.16.10.8.1-3: tf32 chunks of two, f16 / f8f6f4 / mxf8f6f4 / i8 of four, mxf4 / mxf4nvf4 of eight."""
    assert META_CHUNK_ELEMENTS == {"tf32": 2, "f16": 4, "f8f6f4": 4, "mxf8f6f4": 4, "i8": 4, "mxf4": 8, "mxf4nvf4": 8}


@pytest.mark.parametrize("code, shift", [(0, "none"), (1, "8"), (2, "16"), (3, "32")])
def test_decode_names_the_maximum_b_reuse_shift(code, shift):
    """Table 42 bits 30-31: "no shift = 0, maximum shift of 8 = 1, of 16 = 2, of 32 = 3"."""
    rows = {field: meaning for _, field, _, meaning in idesc.explain("f16", 0x08200490 | code << 30)}
    assert rows["max_shift"].endswith(f": {shift}")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.sampled_from(sdesc.TABLE_40.fields), st.data())
def test_with_value_replaces_one_field_and_keeps_the_others(word, field, data):
    value = data.draw(st.integers(0, (1 << field.width) - 1))
    before, after = sdesc.TABLE_40.unpack(word), sdesc.TABLE_40.unpack(field.with_value(word, value))
    assert after == {**before, field.name: value}


def test_swizzle_functors_and_row_widths():
    """9.7.16.3.3's last column: Swizzle<1,4,3> (32B), <2,4,3> (64B), <3,4,3> (128B); 128B with 32-byte
    atomicity is CUTLASS's Swizzle<2,5,2>; no swizzle moves nothing. A swizzle row is as wide as
    its swizzle, one 16-byte chunk without."""
    assert SWIZZLE_BITS == {"none": (0, 4), "32B": (1, 4), "64B": (2, 4), "128B": (3, 4), "128B_base32B": (2, 5)}
    assert SWIZZLE_ROW_BYTES == {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32B": 128}


def test_narrow_elements_are_padded_for_the_f8f6f4_kinds_only():
    """9.7.16.10.4.3-6: 4/6-bit elements in 8-bit TMEM containers for .kind::(mx)f8f6f4; .kind::mxf4
    packs two 4-bit elements per byte."""
    assert {kind: a_tmem_container_bits(kind, 4) for kind in mma.KINDS if "e2m1" in mma.AB_TYPE_CODES[kind]} == {
        "f8f6f4": 8, "mxf8f6f4": 8, "mxf4": 4, "mxf4nvf4": 4}
