"""`fuzz --harness`: each surface runs its inputs through the real command line and counts how
each ended; a command that exits 0 for a misbehaving plugin, writes no reports, merges counts
that are not the cases' or reports a failure from an edited journal is counted `wrong`, so the
fuzz fails (exit 1), as a traceback or a hang does."""

import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.fuzz import journals, plugins
from tcgen05_conformance.fuzz.command_calls import Wrong
from tcgen05_conformance.fuzz.harness_surfaces import SURFACES, measure


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_each_surface_ends_its_inputs_accepted_or_refused(surface):
    report = measure(main, 6, 3, 120.0, (surface,))
    counts = report[surface]
    assert counts["inputs"] == 6 and counts["accepted"] + counts["refused"] == 6, counts["failures"]


def test_a_run_that_exits_0_for_a_misbehaving_plugin_is_wrong(tmp_path):
    script = {"factory": "ok", "observe": "none", "reason": "none", "role": "backend", "isolated": False, "examples": 1}

    def lenient(argv):  # a harness that trusts the plugin: its answer ignored, every case passed
        out = argv[argv.index("--out") + 1]
        assert main([*argv[:argv.index("--backend")], "--backend", "oracle", "--out", out]) == 0
        summary = json.loads(open(f"{out}/summary.json").read())
        summary["backends"][plugins.AGENT] = summary["backends"]["oracle"]
        open(f"{out}/summary.json", "w").write(json.dumps(summary))
        return 0

    assert plugins.expected(script) == "error"
    with pytest.raises(Wrong, match="exit 0 for a plugin whose cases should be error"):
        plugins.plugin_outcome(lenient, script, tmp_path)


def test_a_run_that_reports_nothing_is_wrong(tmp_path):
    script = {"factory": "ok", "observe": "ok", "reason": "none", "role": "backend", "isolated": False, "examples": 1}
    with pytest.raises(Wrong, match="no .*summary.json"):
        plugins.plugin_outcome(lambda argv: 0, script, tmp_path)


def test_a_resume_that_fails_a_case_the_run_passed_is_wrong(tmp_path):
    base = journals.make_journal(main, tmp_path / "base")
    with pytest.raises(Wrong, match="exit 1 resuming a journal of a run that passed"):
        journals.journal_outcome(lambda argv: 1, base, ("raw", "truncate", 0, b""), tmp_path / "case")


def test_fuzz_harness_counts_and_exits_0_when_nothing_broke(tmp_path, capsys):
    assert main(["fuzz", "--harness", "profiles", "--examples", "5", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "fuzz-harness.json").read_text())
    assert report["profiles"]["inputs"] == 5 and report["profiles"]["wrong"] == 0
    assert "| profiles |" in (tmp_path / "fuzz-harness.md").read_text()
    assert main(["fuzz", "--harness", "nope", "--examples", "1"]) == 2
