"""The judge: backends observe, the harness decides. A state is diffed against the reference's with
the decoded first mismatches; what the reference does not give is carried to the backends it
judges, naming it; an assembler's observation is compared with the legality model; the profile of
each case is chosen by the harness, a Hopper program's being Hopper's whatever Blackwell profile
the run asks for; and no device-under-test backend imports the oracle or the diff."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tcgen05_conformance.core.encoding import idesc
from tcgen05_conformance.core.instructions import Tcgen05Ld, Tcgen05Mma, Tcgen05St
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.harness.backends.hopper import HopperBackend
from tcgen05_conformance.harness.judge import assembly_result, profile_for, reference_result, state_result
from tcgen05_conformance.harness.runner import execute, generate_programs
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run

TCGEN05 = generate_programs(2, 0)
HOPPER = {inputs: draw_examples(hopper_programs(inputs=inputs, forms="modelled"), 40, 3) for inputs in ("exact", "discriminating")}
WGMMA = [p for p in HOPPER["discriminating"] if p.ops[0].OP == "wgmma.mma_async"]
MMA_SP = [p for p in HOPPER["discriminating"] if p.ops[0].OP == "mma.sp"]


# --- states against the reference's ------------------------------------------------------------------


def test_a_wrong_state_fails_with_the_decoded_diff_the_judge_computes():
    p = TCGEN05[0]
    expected = run(p)
    tmem = expected.tmem.copy()
    tmem[0, 3, 7] ^= 0x80000000  # the sign bit of one word
    r = state_result(p, "oracle", Observation(p.case_id, state=expected), Observation(p.case_id, state=dataclasses.replace(expected, tmem=tmem)))
    assert r.status == "fail" and r.data["diff"]["mismatched"] == 1
    [m] = r.data["diff"]["first"]
    assert (m["place"], m["cta"], m["row"], m["column"]) == ("tmem", 0, 3, 7)
    assert (m["expected_bits"], m["actual_bits"]) == (int(expected.tmem[0, 3, 7]), int(expected.tmem[0, 3, 7]) ^ 0x80000000)
    assert r.detail.startswith(f"1 of {expected.tmem.size} words differ; first: tmem lane 3 column 7")


def test_an_equal_state_passes_and_a_state_of_another_shape_is_an_error():
    p = TCGEN05[0]
    expected = Observation(p.case_id, state=run(p))
    same = state_result(p, "oracle", expected, Observation(p.case_id, state=run(p)))
    assert same.status == "pass" and same.data["digest"] == run(p).digest()
    short = dataclasses.replace(expected.state, tmem=expected.state.tmem[:, :64])
    r = state_result(p, "oracle", expected, Observation(p.case_id, state=short))
    assert r.status == "error" and r.detail.startswith("the state does not fit the program: actual tmem has shape")


def test_what_the_reference_does_not_give_is_carried_naming_it():
    p = TCGEN05[1]
    skipped = state_result(p, "sim:ref", Observation(p.case_id, skip="simulator: unsupported: no"), None)
    errored = state_result(p, "sim:ref", Observation(p.case_id, error="crash: it died"), None)
    assert (skipped.status, skipped.detail) == ("skip", "no reference state from sim:ref: simulator: unsupported: no")
    assert (errored.status, errored.detail) == ("error", "no reference state from sim:ref: crash: it died")
    own = reference_result(Observation(p.case_id, error="undefined behaviour: x", data={"batch_failure": "b"}))
    assert (own.status, own.detail, own.data) == ("error", "undefined behaviour: x", {"batch_failure": "b"})


def test_an_observation_holds_exactly_one_thing():
    with pytest.raises(ValueError, match="exactly one of state, assembled, skip and error, not skip and error"):
        Observation("c", skip="a", error="b")
    with pytest.raises(ValueError, match="not none"):
        Observation("c")


# --- the assembler against the legality model ---------------------------------------------------------


def _illegal() -> Program:
    """N = 264 is no N of Table 39 (N <= 256)."""
    word = idesc.encode("f16", idesc.InstrDescriptor(m=128, n=264, atype="f16", btype="f16"))
    return Program(target="sm_100a", ops=(Tcgen05Mma(kind="f16", idesc=word, b_desc=1 << 46),))


def test_a_legal_program_the_assembler_rejects_fails_naming_the_diagnostics_rule():
    p = TCGEN05[0]
    rejected = Observation(p.case_id, assembled=False, data={"diagnostics": [{"message": "bad N", "rule": "idesc.shape-n"}]})
    r = assembly_result(p, "ptxas", rejected)
    assert (r.status, r.detail, r.data) == ("fail", "ptxas rejected it: bad N [idesc.shape-n]", {"diagnostics": ["bad N"]})
    accepted = assembly_result(p, "ptxas", Observation(p.case_id, assembled=True, data={"ptx_lines": 9}))
    assert (accepted.status, accepted.data) == ("pass", {"ptx_lines": 9})


def test_an_illegal_program_the_assembler_accepts_fails_naming_the_rule():
    p = _illegal()
    r = assembly_result(p, "ptxas", Observation(p.case_id, assembled=True))
    assert r.status == "fail" and r.detail.startswith("illegal program: [idesc.shape-n]") and r.detail.endswith("; ptxas accepted it")
    rejected = assembly_result(p, "ptxas", Observation(p.case_id, assembled=False, data={"diagnostics": []}))
    assert rejected.status == "fail" and rejected.detail.endswith("; ptxas rejected it")


def test_a_run_of_an_assembler_is_judged_by_the_harness_without_the_reference():
    spec = "tests.fault_backends:Rejecting"
    outcome = execute(TCGEN05 + [_illegal()], [spec])
    assert list(outcome.results) == [spec] and outcome.reference is None  # the oracle never ran
    assert outcome.summaries[spec].role == "assembled; compared with the legality model"
    details = [r.detail for r in outcome.results[spec]]
    assert details[:2] == ["rejecting rejected it: planted rejection [syntax.qualifier]"] * 2
    assert details[2].startswith("illegal program: [idesc.shape-n]") and details[2].endswith("; rejecting rejected it")


def test_an_assembler_cannot_be_the_reference():
    with pytest.raises(ValueError, match="the reference ptxas observes assembly, not machine states"):
        execute(TCGEN05, ["oracle"], reference="ptxas")


# --- the profile of each case ------------------------------------------------------------------------


@pytest.mark.parametrize("requested", [None, "sm_100a"])
def test_a_hopper_program_is_judged_by_hoppers_profile_whatever_blackwell_profile_is_asked(requested):
    assert {profile_for(p, requested) for p in WGMMA} == {"sm_90a"}
    assert {profile_for(p, requested) for p in MMA_SP} == {"sm_90a.mma_sync"}  # the measured warp-level variant
    assert {p.profile for p in HOPPER["exact"]} == {"exact"}  # the generator's own, overridden by Hopper's
    assert {profile_for(p, requested) for p in HOPPER["exact"] if p.ops[0].OP == "wgmma.mma_async"} == {"sm_90a"}


def test_a_profile_applies_to_its_own_architecture_and_exact_to_every_one():
    tcgen05 = TCGEN05[0]
    assert [profile_for(tcgen05, r) for r in (None, "exact", "sm_100a", "sm_90a")] == ["exact", "exact", "sm_100a", "exact"]
    assert profile_for(WGMMA[0], "exact") == "exact" and profile_for(MMA_SP[0], "exact") == "exact"
    assert profile_for(dataclasses.replace(tcgen05, profile="sm_100a")) == "sm_100a"  # the program's own, for its architecture
    with pytest.raises(ValueError, match="unknown profile 'sm_80'"):
        profile_for(tcgen05, "sm_80")


class _Silicon:
    """Stands in for the H100 under the hopper backend: D as the measured hardware gives it (the
    oracle's sm_90a result, mma.sp its mma.sync variant)."""

    def __init__(self):
        self.kernels = {}

    def run(self, programs, finished):
        for k, p in enumerate(programs):
            finished(k, run(p, "sm_90a.mma_sync" if p.ops[0].OP == "mma.sp" else "sm_90a").hopper_d)


@pytest.fixture
def silicon(monkeypatch):
    monkeypatch.setattr(HopperBackend, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(HopperBackend, "runner", lambda self: _Silicon())


def test_the_hopper_backend_pins_no_profile_the_harness_chooses(silicon):
    """Discriminating inputs tell the profiles apart: the stand-in silicon passes under the Hopper
    profile the harness picks (also when the run asks for Blackwell's), and fails where the run
    asks for the exact model, which applies to Hopper programs too."""
    programs = WGMMA[:6] + MMA_SP[:3]
    differ = [p for p in programs if run(p, "exact").hopper_d.tobytes() != run(p, profile_for(p)).hopper_d.tobytes()]
    assert differ
    for requested in (None, "sm_100a"):
        outcome = execute(programs, ["hopper"], requested)
        assert outcome.profiles == [profile_for(p) for p in programs]
        assert [r.status for r in outcome.results["hopper"]] == ["pass"] * len(programs)
        assert [r.data["digest"] for r in outcome.results["oracle"]] == [run(p, profile_for(p)).digest() for p in programs]
    exact = execute(programs, ["hopper"], "exact")
    assert exact.profiles == ["exact"] * len(programs)
    assert [r.case_id for r in exact.results["hopper"] if r.status == "fail"] == [p.case_id for p in differ]


def test_a_simulator_as_the_reference_of_the_hopper_backend_without_the_oracle(silicon, monkeypatch):
    """`run --reference 'sim:CMD' --backend hopper`: the example adapter computes the Hopper
    profile it is sent in case.json; the oracle is not a row of the run."""
    adapter = Path(__file__).resolve().parents[1] / "examples" / "sim_adapter" / "oracle_sim.py"
    reference = "sim:" + shlex.join([sys.executable, str(adapter)])
    programs = WGMMA[:3] + MMA_SP[:2]
    outcome = execute(programs, ["hopper"], reference=reference)
    assert list(outcome.results) == [reference, "hopper"] and outcome.reference == reference
    assert [r.status for r in outcome.results["hopper"]] == ["pass"] * len(programs)
    assert outcome.summaries["hopper"].role == f"state compared with the reference {reference}"


def test_tcgen05_programs_are_skipped_by_the_hopper_backend_without_a_gpu(silicon):
    observed = HopperBackend().observe(TCGEN05)
    assert [o.skip for o in observed] == ["not a Hopper program (tcgen05 needs sm_100a/sm_103a: the blackwell backend)"] * 2


# --- devices under test import neither the oracle nor the diff ---------------------------------------


@pytest.mark.parametrize("backend", ["hopper", "blackwell", "sim", "ptxas"])
def test_no_device_under_test_backend_imports_the_oracle_or_the_diff(backend):
    probe = (f"import sys, tcgen05_conformance.harness.backends.{backend}\n"
             "print(sorted(m for m in sys.modules if m.startswith('tcgen05_conformance.oracles') or m in "
             "('tcgen05_conformance.harness.diff', 'tcgen05_conformance.harness.judge')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_state_travels_between_processes_whole():
    from tcgen05_conformance.core.state import state_from_json, state_to_json

    p = Program(target="sm_100a", tmem_columns=32, ops=(Tcgen05St(shape="16x64b", num=2, values_seed=9), Tcgen05Ld(shape="16x64b", num=2),
                                                        Tcgen05Ld(shape="32x32b", num=2, red_op="min", red_type="u32")))
    state = dataclasses.replace(run(p), hopper_d=np.arange(64 * 8, dtype=np.uint32).reshape(64, 8))
    back = state_from_json(state_to_json(state))
    assert back.digest() == state.digest() and [w.shape for w in back.loads] == [w.shape for w in state.loads]
