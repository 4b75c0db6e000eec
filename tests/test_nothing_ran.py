"""`run` exits 5 when nothing ran, also where the reference is the only backend and skipped every
case (found by fuzz --harness: `run --backend hopper --reference hopper` without a GPU exited 0)."""

from tcgen05_conformance.cli import main


def test_a_reference_alone_that_skips_every_case_is_nothing_ran(tmp_path, capsys):
    assert main(["run", "--backend", "hopper", "--reference", "hopper", "--examples", "1",
                 "--report-dir", str(tmp_path / "out")]) == 5
    assert "tcgen05-conformance: nothing ran: every backend skipped every case" in capsys.readouterr().err
    assert (tmp_path / "out" / "summary.json").exists()
