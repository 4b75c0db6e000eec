"""`tcgen05-conformance probe` (conformance/assumptions/probe.py) and the readings table beside the probes
(probes/readings.py): every ledger probe has its readings, each alternative's predicted state
differs from the adopted one, the oracle confirms every assumption, a backend implementing an
alternative reading refutes its assumption and is named, and GPU backends without their GPU are
not runnable here, with the reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_NOTHING_RAN, EXIT_OK, EXIT_USAGE
from tcgen05_conformance.core.legality.check import check
from tcgen05_conformance.core.legality.undefined import undefined_behaviour
from tcgen05_conformance.harness.diff import diff_states
from tcgen05_conformance.harness.judge import profile_for
from tcgen05_conformance.assumptions import probe
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.oracles.numerics import probes as numeric_probes
from tcgen05_conformance.probes.readings import READINGS, STATE, initial_state
from tests.test_probes import ASSUMPTIONS, LINK, table


def probe_json(tmp_path, backend: str, *extra: str) -> tuple[int, dict]:
    status = main(["probe", "--backend", backend, "--out", str(tmp_path), *extra])
    return status, json.loads((tmp_path / "probe.json").read_text())


@pytest.fixture(scope="module")
def oracle_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("oracle")
    return (*probe_json(folder, "oracle"), folder)


def test_every_ledger_row_with_probe_files_has_readings_and_vice_versa():
    with_files = {assumption for assumption, cell in table().items() if LINK.findall(cell)}
    assert with_files == set(READINGS)


def test_every_computed_alternative_differs_from_the_adopted_prediction():
    for pp in probe.ledger_programs():
        adopted, predictions = probe.predictions(pp, profile_for(pp.program))
        base = adopted if adopted is not None else initial_state(pp.program)
        assert len(predictions) == 1 + len(pp.readings.alternatives)
        for p in predictions[1:]:
            if p.reading.outcome == STATE and p.state is not None:
                assert diff_states(pp.program, base, p.state).mismatched, (pp.name, p.reading.name)


def test_numeric_probe_programs_compute_the_adopted_hypothesis_in_d_lane_0():
    programs = probe.numeric_programs()
    vectors = {v.name: v for v in numeric_probes.PROBES}
    assert len(programs) == len(vectors)
    assert {v.kind for v in vectors.values()} >= {"mxf4", "mxf8f6f4"}  # block-scaled probes are programs too
    for pp in programs:
        vector = vectors[pp.name.split(".", 1)[1]]
        word = int(run(pp.program, profile_for(pp.program)).tmem[0, 0, 0])
        expected = numeric_probes.predictions(vector)[probe.NUMERIC_ADOPTED]
        assert word == expected, pp.name
        others = run(pp.program, profile_for(pp.program)).tmem[0, :, :16].copy()
        others[0, 0] = 0
        assert not others.any(), pp.name  # only D[0][0] holds a product


def test_numeric_probe_programs_are_legal_tcgen05_forms():
    """Every numeric probe is a legal, defined program (the legality model the ptxas backend is
    judged against); the block-gap ladder covers 2**-20 to 2**-40 with the small value in either block
    and separates the readings."""
    for pp in probe.numeric_programs():
        assert not [r for op in pp.program.ops for r in check(op, pp.program.target)], pp.name
        assert not undefined_behaviour(pp.program), pp.name
    ladder = [v for v in numeric_probes.PROBES if v.name.startswith("mxf4-gap-")]
    assert {v.name for v in ladder} == {f"mxf4-gap-{g}-block{b}" for g in range(20, 41, 2) for b in (1, 2)}
    tcgen05 = {v.name: numeric_probes.predictions(v) for v in ladder}
    assert {p["tcgen05"] == p["recorded"] for p in tcgen05.values()} == {True, False}


def test_the_oracle_confirms_every_assumption(oracle_report):
    status, report, folder = oracle_report
    assert status == EXIT_OK
    assert {a["verdict"] for a in report["assumptions"].values()} == {probe.CONFIRMED}
    assert set(report["assumptions"]) == set(READINGS) | {probe.NUMERIC_ASSUMPTION}
    assert report["counts"] == {probe.REFUTED: 0, probe.CONFIRMED: len(report["assumptions"]), probe.NOT_RUNNABLE: 0}
    html = (folder / "probe.html").read_text()
    assert all(f'data-key="assumptions.{a}.verdict">confirmed<' in html for a in report["assumptions"])


def test_a_backend_with_the_zcmask_field_reading_refutes_it_and_is_named(tmp_path):
    status, report = probe_json(tmp_path, "tests.alternative_backends:ZcmaskFieldReading")
    assert status == EXIT_FAILED
    refuted = {a: v for a, v in report["assumptions"].items() if v["verdict"] == probe.REFUTED}
    assert list(refuted) == ["A-ZCMASK-SPANS"]
    assert "predicted by 'field descriptions'" in refuted["A-ZCMASK-SPANS"]["detail"]
    (program,) = [p for p in report["programs"] if p["assumption"] == "A-ZCMASK-SPANS"]
    first = program["diff"]["first"][0]  # column 1 of lane 0: 16 under the examples, 0 under the fields
    assert (first["row"], first["column"], first["expected"], first["actual"]) == (0, 1, "16", "0")
    assert program["matched"] == ["field descriptions"]
    assert "field descriptions" in (tmp_path / "probe.html").read_text()


def test_a_positive_zero_start_refutes_the_no_accumulator_reading(tmp_path):
    status, report = probe_json(tmp_path, "tests.alternative_backends:PositiveZeroStart")
    assert status == EXIT_FAILED
    assert report["assumptions"]["A-NO-ACCUMULATOR"]["verdict"] == probe.REFUTED
    assert "'+0 start'" in report["assumptions"]["A-NO-ACCUMULATOR"]["detail"]
    assert report["assumptions"]["A-ZCMASK-SPANS"]["verdict"] == probe.CONFIRMED


def test_a_device_faulting_on_illegal_forms_refutes_the_readings_that_run_them(tmp_path):
    status, report = probe_json(tmp_path, "tests.alternative_backends:FaultOnIllegal")
    assert status == EXIT_FAILED
    verdicts = report["assumptions"]
    for assumption in ("A-MAXSHIFT", "A-SDESC-FIXED53", "A-MIXED-F16"):
        assert verdicts[assumption]["verdict"] == probe.REFUTED, assumption
        assert "predicted by 'refused'" in verdicts[assumption]["detail"]
    assert verdicts["A-K96-SCALEVEC"]["verdict"] == probe.CONFIRMED  # undefined: a fault is consistent with it
    assert verdicts["A-ZCMASK-SPANS"]["verdict"] == probe.CONFIRMED


def test_write_ledger_changes_only_the_verdict_cells_of_assumptions_that_ran(tmp_path):
    ledger = tmp_path / "assumptions.md"
    assert main(["probe", "--backend", "tests.alternative_backends:ZcmaskFieldReading", "--out", str(tmp_path),
                 "--out-ledger", str(ledger)]) == EXIT_FAILED
    before = ASSUMPTIONS.read_text(encoding="utf-8").splitlines()
    after = ledger.read_text(encoding="utf-8").splitlines()
    assert len(before) == len(after)
    changed = {b.split(" | ")[0][2:]: (b, a) for b, a in zip(before, after) if a != b}
    assert set(changed) == set(READINGS) | {probe.NUMERIC_ASSUMPTION}
    for b, a in changed.values():
        assert probe.ledger_cells(a)[:5] == probe.ledger_cells(b)[:5]
    cell = probe.ledger_cells(changed["A-ZCMASK-SPANS"][1])[5]
    assert cell.startswith("refuted by `probe --backend tests.alternative_backends:ZcmaskFieldReading`")
    assert "'field descriptions'" in cell
    assert probe.ledger_cells(changed["A-MIXED-F16"][1])[5].startswith("confirmed by")


@pytest.mark.parametrize("backend", ["blackwell", "hopper"])
def test_gpu_backends_without_their_gpu_are_not_runnable_here_with_the_reason(tmp_path, backend, capsys):
    from tcgen05_conformance.harness.backends.registry import backend_from_spec

    reason = backend_from_spec(backend).unavailable_reason()
    if reason is None:
        pytest.skip(f"the {backend} backend can run here")
    status, report = probe_json(tmp_path, backend)
    assert status == EXIT_NOTHING_RAN
    assert report["unavailable"] == reason
    assert all(v["verdict"] == probe.NOT_RUNNABLE and reason in v["detail"] for v in report["assumptions"].values())
    assert "not runnable here" in capsys.readouterr().out


def test_the_json_option_prints_the_report(tmp_path, capsys):
    assert main(["probe", "--backend", "oracle", "--out", str(tmp_path), "--json"]) == EXIT_OK
    printed = json.loads(capsys.readouterr().out)
    assert printed["assumptions"] == json.loads((tmp_path / "probe.json").read_text())["assumptions"]
    assert printed["command"].startswith("tcgen05-conformance probe --backend oracle")
    assert np.all([p["readings"][0]["reading"] == "adopted" for p in printed["programs"]])


class StandInHopperRunner:
    """The Hopper batch runner without a GPU: each program's kernel form and inputs are built as on
    the GPU (`tcgen05_conformance.device.hopper_batch`), and D is the oracle's under the profile that judges it."""

    def run(self, programs, finished) -> None:
        from tcgen05_conformance.device.hopper_batch import pack
        from tcgen05_conformance.device.ptx.kernels import hopper_form, hopper_kernel

        for i, p in enumerate(programs):
            hopper_kernel(hopper_form(p))
            pack([p])
            finished(i, run(p, profile_for(p)).hopper_d)


def test_hopper_probes_the_wgmma_assumptions_and_says_why_not_the_others(tmp_path, monkeypatch):
    from tcgen05_conformance.harness.backends.hopper import NOT_HOPPER, HopperBackend

    monkeypatch.setattr(HopperBackend, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(HopperBackend, "runner", lambda self: StandInHopperRunner())
    status, report = probe_json(tmp_path, "hopper")
    assert status == EXIT_OK
    sm90 = {pp.assumption for pp in probe.ledger_programs() if pp.program.target == "sm_90a"}
    assert sm90 == {"A-WGMMA-DESC", "A-SDESC-BASE-OFFSET", "A-WGMMA-SP-KMAJOR-ATOM", "A-WGMMA-SP-METADATA",
                    "A-MMA-SP-METADATA"}
    confirmed = {a for a, v in report["assumptions"].items() if v["verdict"] == probe.CONFIRMED}
    assert confirmed == sm90
    assert all(NOT_HOPPER in v["detail"] for a, v in report["assumptions"].items() if a not in sm90)


def test_a_report_dir_in_use_is_refused_before_any_probe_runs(tmp_path, capsys, monkeypatch):
    """A --report-dir another run holds is refused in one line, exit 2, and no probe is run."""
    from tcgen05_conformance.harness.report import ReportDir

    def no_probe(*args):
        raise AssertionError("a probe ran before the report directory was checked")

    monkeypatch.setattr(probe, "run_probes", no_probe)
    held = ReportDir(str(tmp_path))
    try:
        assert main(["probe", "--backend", "oracle", "--out", str(tmp_path)]) == EXIT_USAGE
    finally:
        held.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and "in use by another run" in err[0]


def test_reports_and_the_ledger_are_replaced_not_written_through(tmp_path):
    """probe.json is replaced (a symlink in its place is replaced, not followed) and the ledger
    file is written whole, with no temporary file left beside it."""
    outside = tmp_path / "outside.json"
    outside.write_text("untouched")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "probe.json").symlink_to(outside)
    ledger = tmp_path / "ledger.md"
    assert main(["probe", "--backend", "oracle", "--out", str(reports), "--out-ledger", str(ledger)]) == EXIT_OK
    assert outside.read_text() == "untouched" and not (reports / "probe.json").is_symlink()
    assert json.loads((reports / "probe.json").read_text())["backend"] == "oracle"
    assert ledger.read_text().startswith("# ") and sorted(p.name for p in tmp_path.iterdir()) == ["ledger.md", "outside.json", "reports"]
