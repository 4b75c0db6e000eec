"""`numerics infer`: profiles inferred from nothing by directed feature tests.

The strongest check: every built-in profile, used as a vector source through the numeric model,
is inferred back parameter for parameter, and a handful of random datapaths from the model's
parameter space are too (up to the values the tests show act alike). The rest: profile files
load wherever a profile name is accepted, the simulator line protocol, what the recorded B200 and
H100 folders determine, and the command line (a GPU backend skips with its reason here)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.numerics import infer as ni
from tcgen05_conformance.numerics.sources import ModelSource, SimulatorError, SimulatorSource, SourceUnavailable
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS, PROFILES, Datapath, Profile, ProfileFileError, get_profile
from tcgen05_conformance.oracles.numerics.vectors import RECORDINGS as DATA
SIMULATOR = Path(__file__).parent / "line_protocol_simulator.py"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_is_inferred_back_parameter_for_parameter(name):
    """From nothing: every datapath of the profile, every parameter but the instruction's name,
    the widened inputs and the integer overflow; the confirmation vectors agree too."""
    result = ni.infer_profile(ModelSource(name), confirm_vectors=256)
    assert result.errors == {}
    assert ni.compare_profiles(result.profile, get_profile(name)) == []  # block-scaled datapaths included
    assert set(result.profile.datapaths) == {p for p in ModelSource(name).pairs() if p[1] != "s32"}
    assert all(c["confirmation"]["mismatches"] == 0 for key, c in result.checks.items() if "->" in key)  # datapaths
    assert all(s["reading"] != "none" for c in result.checks.values() if isinstance(c, dict) for s in c.get("block_scales", []))


def _random_datapath(rng: random.Random) -> tuple[str, str, dict]:
    in_fmt, acc = rng.choice([("f16", "f32"), ("bf16", "f32"), ("e4m3", "f16"), ("e5m2", "f32"), ("tf32", "f32")])
    k = ModelSource("exact").k(in_fmt, acc)
    step = rng.choice([d for d in (4, 8, 16, 32) if d <= k])
    ways = rng.choice([w for w in (1, 2, 4) if step % w == 0])
    precision = 24 if acc == "f32" else 11
    return in_fmt, acc, dict(
        instruction="random", k_step=step, split_ways=ways,
        split_stride=1 if ways == 1 else rng.choice([s for s in (1, 2, 4) if ways * s <= step]),
        align_frac_bits=rng.choice([None, *range(10, 32)]),
        align_floor=rng.choice([None, -152, -158]) if acc == "f32" else None,
        group_precision=rng.choice([None, *range(precision - 8, precision)]), group_rounding=rng.choice(["rz", "rne"]),
        c_entry=rng.choice(["first_group", "final_add"]), final_rounding=rng.choice(["rz", "rne"]),
        subnormal_inputs=rng.random() < 0.8, subnormal_outputs=rng.random() < 0.8,
        zero_sign=rng.choice(["ieee", "positive"]))


FP8 = ("e4m3", "e5m2")


def _fp8_datapaths(profile) -> dict:
    return {(f, acc): profile.datapath(f, acc) for f in FP8 for acc in ("f32", "f16")}


@pytest.mark.parametrize("name, want", [("sm_90a.mma_sync", {"e4m3": "f16", "e5m2": "f16"}), ("sm_90a", {}),
                                         ("sm_100a", {}), ("exact", {})])
def test_the_widening_is_inferred_from_mixed_vectors(name, want):
    """The expected values are the profiles' (sm_90a.mma_sync's from the H100's SASS and 3.4 x 10^7
    silicon results): mixed vectors settle e4m3's reading; e5m2's, which no vector shows, follows
    e4m3's; with nothing shown (exact arithmetic), nothing is widened."""
    source = ModelSource(name)
    result = ni.infer_widening(source, _fp8_datapaths(get_profile(name)))
    assert result.value == want
    assert "e5m2" in result.evidence["open"] and result.evidence["vectors"] > 1000
    if name == "sm_90a.mma_sync":
        assert result.evidence["determined"] == {"e4m3": "f16"}
        assert "read as e4m3 is" in result.provenance


def test_an_e4m3_widening_alone_is_found_and_a_reading_of_neither_is_an_error():
    """A source widening only e4m3 acts as one widening both (e5m2 widens to itself, in effect);
    a source whose mixed results no reading reproduces (its datapath is not the inferred one)
    is inconsistent, and `infer_profile` records that instead of a value."""
    truth = get_profile("sm_90a.mma_sync")
    only_e4m3 = dataclasses.replace(truth, widened_inputs={"e4m3": "f16"})
    result = ni.infer_widening(ModelSource(only_e4m3), _fp8_datapaths(truth))
    assert result.value == {"e4m3": "f16", "e5m2": "f16"}
    narrower = {key: dataclasses.replace(dp, align_frac_bits=12) for key, dp in _fp8_datapaths(truth).items()}
    with pytest.raises(ni.Inconsistent, match="no reading of e4m3, e5m2"):
        ni.infer_widening(ModelSource(truth), narrower)


def test_a_source_without_mixed_inputs_widens_nothing_and_says_why():
    class SameTypeOnly:  # a plugin source of the protocol's required methods only
        name = "same-type"

        def __init__(self):
            self.model = ModelSource("sm_90a.mma_sync")

        def __getattr__(self, attribute):
            if attribute in ("mixed_pairs", "evaluate_mixed"):
                raise AttributeError(attribute)
            return getattr(self.model, attribute)

    result = ni.infer_widening(SameTypeOnly(), _fp8_datapaths(get_profile("sm_90a.mma_sync")))
    assert result.value == {} and result.provenance.startswith("not inferred: the source evaluates no mixed fp8")


@pytest.mark.parametrize("seed", range(6))
def test_random_datapaths_are_inferred(seed):
    """A datapath drawn from the parameter space: every parameter's true value is among those the
    tests leave (structures compared by their sequence of groups when c joins the first group,
    where step and group boundaries act alike), and the chosen datapath computes like it."""
    in_fmt, acc, values = _random_datapath(random.Random(seed))
    truth = Datapath(**values, provenance={p: "random" for p in PARAMETERS})
    source = ModelSource(Profile("random", "random datapath", {(in_fmt, acc): truth}))
    inf = ni.infer_datapath(source, in_fmt, acc)
    k = inf.k
    for p in ni.SEARCHED:
        if p == ni.STRUCTURE:
            want = (values["k_step"], values["split_ways"], values["split_stride"])
            if values["c_entry"] == "first_group":
                seq = [ni.groups_of(k, s) for s in inf.allowed(p)]
                assert ni.groups_of(k, want) in seq, (p, want, inf.allowed(p))
                continue
            assert want in inf.allowed(p), (p, want, inf.allowed(p))
        else:
            assert values[p] in inf.allowed(p), (p, values[p], inf.allowed(p))
    chosen = ni.datapath(ni.choose_one({(in_fmt, acc): inf}, (in_fmt, acc)))
    a, b, c, _ = ni.mix(in_fmt, acc, k, 2000, np.random.default_rng(seed))
    assert np.array_equal(inner_product(a, b, c, in_fmt, acc, ni._as_profile(chosen, in_fmt, acc)),
                          inner_product(a, b, c, in_fmt, acc, source.profile))


def test_an_inferred_profile_file_loads_wherever_a_profile_name_does(tmp_path):
    out = tmp_path / "inferred.json"
    assert main(["numerics", "infer", "--backend", "oracle", "--profile", "sm_90a", "--formats", "f16", "--confirm", "64",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["provenance"]["target"] == "sm_90a"
    assert data["provenance"]["source"] == "model:sm_90a" and "command" in data["provenance"] and "date" in data["provenance"]
    assert data["inference"]["datapaths"]["f16->f32"]["parameters"]["align_frac_bits"]["chosen_by"] == "determined"
    loaded = get_profile(str(out))
    assert loaded.datapath("f16", "f32").align_frac_bits == 25
    rng = np.random.default_rng(0)
    a, b, c, _ = ni.mix("f16", "f32", 16, 500, rng)
    assert np.array_equal(inner_product(a, b, c, "f16", "f32", str(out)), inner_product(a, b, c, "f16", "f32", "sm_90a"))
    assert main(["vectors", "check", str(DATA / "H100" / "fp16"), "--profile", str(out)]) == 0


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.pop("datapaths"), "$.datapaths: missing"),
    (lambda d: d["datapaths"]["f16->f32"]["k_step"].update(value=0), "must be at least 1"),
    (lambda d: d["datapaths"]["f16->f32"]["c_entry"].update(value="middle"), "is not one of first_group, final_add"),
    (lambda d: d.update(colour="red"), "$.colour: unknown field"),
])
def test_malformed_profile_files_give_one_line_errors(tmp_path, edit, message):
    data = json.loads(json.dumps(PROFILES["sm_90a"].as_dict()))
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileFileError) as e:
        get_profile(str(path))
    assert message in str(e.value) and "\n" not in str(e.value) and str(path) in str(e.value)


def test_the_line_protocol_carries_a_simulator():
    """A simulator speaking the protocol (tests/numerics/line_protocol_simulator.py: the numeric
    model behind the line protocol) is inferred like the model itself."""
    source = SimulatorSource(f"{sys.executable} {SIMULATOR} sm_100a")
    try:
        assert ("e4m3", "f16") in source.pairs()
        inf = ni.infer_datapath(source, "e4m3", "f16")
        values = ni.choose_one({("e4m3", "f16"): inf}, ("e4m3", "f16"))
        dp = ni.datapath(values)
        ref = PROFILES["sm_100a"].datapath("e4m3", "f16")
        assert (dp.split_ways, dp.split_stride, dp.c_entry, dp.group_rounding) == (ref.split_ways, ref.split_stride,
                                                                                    ref.c_entry, ref.group_rounding)
    finally:
        source.close()


def test_recorded_b200_tf32_determines_its_core_and_leaves_the_rest_open():
    """B200 tf32 -> f32 (K = 4): one group, 25 alignment bits, truncation and c in the group are
    the only values consistent with the 2,500 vectors; subnormals, zero sign and the floor are not
    exercised, and with c in the group the final rounding is unused."""
    [r] = ni.infer_recorded(DATA / "B200" / "tf32")
    assert r.allowed["align_frac_bits"] == [25] and r.allowed["group_rounding"] == ["rz"]
    assert r.allowed["c_entry"] == ["first_group"] and r.allowed[ni.STRUCTURE] == [(4, 1, 1)]
    assert set(r.unexercised) == {"subnormal_inputs", "subnormal_outputs", "zero_sign", "align_floor"}
    assert len(r.allowed["final_rounding"]) == 2
    dp = ni.recorded_datapath(r)
    rec = r.record
    assert np.array_equal(inner_product(rec.a, rec.b, rec.c, "tf32", "f32", ni._as_profile(dp, "tf32", "f32")), rec.d)


@pytest.mark.parametrize("backend,instruction", [("blackwell", None), ("hopper", None), ("hopper", "mma.sync")])
def test_a_gpu_backend_without_its_gpu_runs_nothing_and_says_why(backend, instruction, tmp_path, capsys):
    try:
        ni.source_for_backend(backend, instruction)
    except SourceUnavailable as e:
        reason = str(e)
    else:
        pytest.skip(f"this machine has the {backend} backend's GPU")
    out = tmp_path / "inferred.json"
    argv = ["numerics", "infer", "--backend", backend, "--out", str(out)] + (["--instruction", instruction] if instruction else [])
    assert main(argv) == 5  # nothing ran (conformance/cli/common.py)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tcgen05-conformance: nothing ran: ") and reason in err
    assert not out.exists()


def test_compare_exits_1_on_a_difference(capsys):
    assert main(["numerics", "infer", "--backend", "oracle", "--profile", "sm_90a", "--instruction", "mma.sync",
                 "--formats", "e5m2", "--confirm", "0", "--compare", "sm_90a"]) == 1
    out = capsys.readouterr().out
    assert "differs from sm_90a: e5m2->f32 split_ways" in out


@pytest.mark.parametrize("argv", [["--backend", "oracle"], ["--backend", "nothing"], ["--backend", "ptxas"],
                                  ["--backend", "oracle", "--profile", "no_such_profile"],
                                  ["--backend", "hopper", "--instruction", "tcgen05"],
                                  ["--backend", "recorded:no_such_gpu"],
                                  ["--backend", "math:sqrt"]])
def test_bad_backends_are_one_line_usage_errors(argv, capsys):
    try:
        status = main(["numerics", "infer", *argv])
    except SystemExit as e:  # refused while parsing
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err


def test_a_plugin_factory_is_a_backend(capsys):
    """MODULE:FACTORY, called with profile=, gives a vector source: ModelSource is one."""
    assert main(["numerics", "infer", "--backend", "tcgen05_conformance.numerics.sources:ModelSource", "--profile", "sm_90a",
                 "--formats", "tf32", "--confirm", "16", "--compare", "sm_90a"]) == 0
    assert "equal to sm_90a, parameter for parameter" in capsys.readouterr().out


def test_recorded_vectors_are_a_backend_and_their_profile_judges_their_target(tmp_path):
    out = tmp_path / "b200-tf32.json"
    assert main(["numerics", "infer", "--backend", "recorded:B200", "--formats", "tf32", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["provenance"]["target"] == "sm_100a" and list(data["datapaths"]) == ["tf32->f32"]
    assert main(["vectors", "check", str(DATA / "B200" / "tf32"), "--profile", str(out)]) == 0


def _profile_file(tmp_path, target: str | None) -> str:
    data = PROFILES["sm_90a"].as_dict()
    if target:
        data["provenance"] = {"target": target}
    path = tmp_path / f"profile-{target}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_profile_file_judges_the_programs_of_its_target_only(tmp_path):
    from tcgen05_conformance.harness.judge import profile_for
    from tcgen05_conformance.harness.runner import generate_programs

    programs = generate_programs(200, 0)
    hopper = next(p for p in programs if p.target == "sm_90a" and p.ops and type(p.ops[0]).__name__ == "WgmmaMma")
    blackwell = next(p for p in programs if p.target == "sm_100a")
    for_hopper, anywhere = _profile_file(tmp_path, "sm_90a"), _profile_file(tmp_path, None)
    assert profile_for(hopper, for_hopper) == for_hopper
    assert profile_for(blackwell, for_hopper) == profile_for(blackwell)  # not its architecture: the default
    assert profile_for(blackwell, anywhere) == anywhere  # names no target: judges every program, as exact does
    bad = tmp_path / "bad-target.json"
    bad.write_text(json.dumps({**PROFILES["sm_90a"].as_dict(), "provenance": {"target": "sm_42"}}))
    with pytest.raises(ProfileFileError, match=r"\$\.provenance\.target: \"sm_42\" is not a target"):
        get_profile(str(bad))


def test_export_and_replay_carry_a_profile_file(tmp_path, capsys):
    profile = _profile_file(tmp_path, None)
    assert main(["export", "--count", "2", "--profile", profile, "--out", str(tmp_path / "vectors")]) == 0
    index = json.loads((tmp_path / "vectors" / "index.json").read_text())
    exported = [e for e in index["cases"] if "skipped" not in e]
    assert exported and all(e["profile"] == profile for e in exported)
    case = tmp_path / "vectors" / "cases" / exported[0]["case_id"] / "case.json"
    assert main(["replay", str(case), "--backend", "oracle"]) == 0
    assert f"profile {profile}" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["run", "--count", "1"], ["vectors", "check", str(DATA / "H100")],
                                     ["numerics", "fit", str(DATA / "H100")]])
def test_a_malformed_profile_file_is_refused_while_parsing(tmp_path, command, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SystemExit) as e:
        main([*command, "--profile", str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and "not a readable JSON file" in err


def test_agree_counts_where_a_simulator_differs_from_a_profile_and_from_silicon(tmp_path, capsys):
    """The protocol simulator computing sm_90a agrees with sm_90a and the H100's recorded fp16 files
    (0 of 2,500), and differs from sm_100a's datapath on discriminating vectors where the two
    profiles differ (the H100's fp8 wgmma datapath against the B200's mma.sync one)."""
    sim = f"sim:{sys.executable} {SIMULATOR} sm_90a"
    report = tmp_path / "agree.json"
    assert main(["numerics", "agree", "--backend", sim, "--profile", "sm_90a", "--formats", "f16",
                 "--recorded", str(DATA / "H100" / "fp16"), "--count", "64", "--out", str(report)]) == 0
    data = json.loads(report.read_text())
    assert [(p["input"], p["accumulator"], p["mismatches"]) for p in data["discriminating"]] == [("f16", "f32", 0), ("f16", "f16", 0)]
    assert sorted((r["accumulator"], r["vectors"], r["mismatches"]) for r in data["recorded"]) == [("f16", 2500, 0), ("f32", 2500, 0)]
    capsys.readouterr()
    assert main(["numerics", "agree", "--backend", sim, "--profile", "sm_100a", "--formats", "e4m3", "--count", "256"]) == 1
    assert "e4m3 -> f32" in capsys.readouterr().out


KM_MODELS = os.environ.get("KHATTAK_MIKAITIS_MODELS", "")  # models/ of north-numerical-computing/MATLAB-tensor-core
KM_ADAPTER = Path(__file__).resolve().parents[2] / "examples" / "numeric_simulators" / "khattak_mikaitis.py"


@pytest.mark.skipif(shutil.which("octave-cli") is None, reason="GNU Octave (octave-cli) is not installed")
@pytest.mark.skipif(not Path(KM_MODELS, "B200TC.m").is_file(),
                    reason="the publishers' MATLAB models are not here: set KHATTAK_MIKAITIS_MODELS to the models/ folder "
                           "of github.com/north-numerical-computing/MATLAB-tensor-core")
def test_the_publishers_b200_model_in_octave_speaks_the_protocol():
    """Their B200 model through the adapter, on the first recorded B200 bf16 vectors: it answers
    every request, and (their model having been validated on these files) agrees with silicon."""
    source = SimulatorSource(f"{sys.executable} {KM_ADAPTER} {KM_MODELS} B200TC")
    try:
        assert ("bf16", "f32") in source.pairs()
        rec = _recorded_files(DATA / "B200" / "bf16")[0]
        got = source.evaluate("bf16", "f32", rec.a[:20], rec.b[:20], rec.c[:20])
        assert np.array_equal(got.view(np.uint32), rec.d[:20].view(np.uint32))
    finally:
        source.close()


def _recorded_files(folder):
    from tcgen05_conformance.oracles.numerics.vectors import find_folders, load_folder

    return [rec for f in find_folders(folder) for rec in load_folder(f)]


def test_a_simulators_refusals_count_as_disagreements_with_the_first_named(tmp_path):
    sim = f"sim:{sys.executable} {SIMULATOR} sm_90a f16"
    report = tmp_path / "agree.json"
    assert main(["numerics", "agree", "--backend", sim, "--profile", "sm_90a", "--formats", "f16", "--count", "40",
                 "--out", str(report)]) == 1
    pairs = {p["accumulator"]: p for p in json.loads(report.read_text())["discriminating"]}
    assert pairs["f32"]["mismatches"] == 0 and "refused" not in pairs["f32"]
    assert pairs["f16"]["mismatches"] == pairs["f16"]["refused"] == 40
    assert pairs["f16"]["first_refusal"] == {"vector": 1, "error": "this simulator does not produce f16"}
    source = SimulatorSource(sim[4:])
    try:  # without a place for refusals, the first stops the batch (after its block is read: the next works)
        a = np.full((3, 16), 0x3C00, np.uint16)
        with pytest.raises(SimulatorError, match="request 1 \\(f16 -> f16\\): the simulator answered error"):
            source.evaluate("f16", "f16", a, a, np.zeros(3, np.uint16))
        assert list(source.evaluate("f16", "f32", a, a, np.zeros(3, np.uint32)).view(np.float32)) == [16.0] * 3
    finally:
        source.close()


def test_recorded_vectors_no_datapath_fits_exit_1_not_an_empty_profile_with_0(tmp_path, capsys):
    """Issue 32: `numerics infer --backend recorded:` exited 0 with an empty profile when no datapath fit."""
    out = tmp_path / "profile.json"
    assert main(["numerics", "infer", "--backend", "recorded:B200", "--formats", "nosuch", "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["datapaths"] == {} and "no datapath of the model fits" in report["inference"]["errors"]["datapaths"]
