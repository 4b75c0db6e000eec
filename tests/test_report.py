"""Reports: the coverage heat maps against counts taken independently from the programs, and a
run with a planted failing backend whose decoded first mismatch, recomputed here from the
oracle, must appear in summary.json, report.md, report.html and junit.xml; the HTML page is
well-formed and self-contained, and what headless Chromium shows of it matches summary.json."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.encoding import idesc, taddr
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Mma, WgmmaMma
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import TCGEN05_TARGETS
from tcgen05_conformance.core.program import load
from tcgen05_conformance.harness.coverage import coverage
from tcgen05_conformance.harness.report import junit
from tcgen05_conformance.harness.runner import generate_programs
from tcgen05_conformance.generators.programs import hopper_programs, tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run as oracle_run
from tests.fault_backends import PERTURBED_BIT

PERTURBED = "tests.fault_backends:Perturbed"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def programs():
    """Programs of every kind, Hopper ones among them: a run's first 30 (one of each instruction family, a wgmma and an
    mma.sp among them, then Table 39 classes), 60 random tcgen05 and 20 Hopper programs."""
    mixed = st.sampled_from(TCGEN05_TARGETS).flatmap(tcgen05_programs)
    return generate_programs(30, 2) + draw_examples(mixed, 60, 7) + draw_examples(hopper_programs(), 20, 8)


def _matrix(hm: dict, key: str) -> dict[tuple[str, str], int]:
    return {(r, c): hm[key][i][j] for i, r in enumerate(hm["rows"]) for j, c in enumerate(hm["columns"])}


def _shape_column(op: Tcgen05Mma) -> str:
    """The heat map's column for an MMA, spelled here from the instruction's own fields."""
    d = idesc.decode(op.kind, op.idesc)
    return f"{'ws.' if op.ws else ''}{'sp' if op.sparse else 'dense'}.cta{op.cta_group}.m{d.m}{'.k96' if d.k96 else ''}"


def test_class_heat_map_counts_equal_a_count_from_the_instructions(programs):
    failing = {p.case_id for p in programs[::3]}
    hm = coverage(programs, failing)["heat_maps"]["class"]
    cases, failed = Counter(), Counter()
    for p in programs:
        for cell in {(op.kind, _shape_column(op)) for op in p.ops if isinstance(op, Tcgen05Mma)}:
            cases[cell] += 1
            failed[cell] += p.case_id in failing
    assert sum(cases.values()) == sum(1 for p in programs if any(isinstance(op, Tcgen05Mma) for op in p.ops))
    assert _matrix(hm, "cases") == {cell: cases[cell] for cell in _matrix(hm, "cases")}
    assert _matrix(hm, "failed") == {cell: failed[cell] for cell in _matrix(hm, "failed")}
    assert set(cases) <= set(_matrix(hm, "cases"))  # no instruction fell outside the map
    applicable = _matrix(hm, "applicable")
    assert sum(applicable.values()) == len(mma.SHAPE_CLASSES)  # one allowed cell per Table 39 class
    assert all(applicable[cell] for cell in cases)


def test_hopper_heat_map_counts_equal_a_count_from_the_instructions(programs):
    hm = coverage(programs)["heat_maps"]["hopper"]
    cases = Counter()
    for p in programs:
        for op in p.ops:
            if isinstance(op, WgmmaMma):
                cases["wgmma.mma_async.sp" if op.sparse else "wgmma.mma_async", op.atype] += 1
            elif isinstance(op, MmaSp):
                cases["mma.sp", op.atype] += 1
    assert sum(cases.values()) == 22  # the run's wgmma and mma.sp, and the 20 Hopper programs
    assert _matrix(hm, "cases") == {cell: cases[cell] for cell in _matrix(hm, "cases")}
    assert all(_matrix(hm, "applicable")[cell] for cell in cases)
    assert not any(sum(row) for row in hm["failed"])


@pytest.mark.parametrize("family", ["a.source", "enable_input_d", "negate_b", "collector", "layout", "lane_alignment"])
def test_each_option_family_partitions_a_kinds_cases(programs, family):
    """Every MMA has exactly one value of these options, so per kind their cells add up to the kind's
    row of the class map (one MMA per program); and no case lands in a cell the ISA does not allow."""
    maps = coverage(programs)["heat_maps"]
    per_kind = {kind: sum(row) for kind, row in zip(maps["class"]["rows"], maps["class"]["cases"])}
    options = maps["option"]
    for j, kind in enumerate(options["columns"]):
        total = sum(options["cases"][i][j] for i, row in enumerate(options["rows"]) if row.split("=")[0] == family)
        assert total == per_kind[kind], (family, kind)
    assert not any(n and not ok for ns, oks in zip(options["cases"], options["applicable"]) for n, ok in zip(ns, oks))


# --- a run with a planted failing backend ------------------------------------------------------------


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """A 26-case run (each family first: the 14 f16 classes among data movement, wgmma and mma.sp,
    then the first 6 tf32 classes) on the oracle and on a backend that flips bit 22 of the first D
    word of every tf32 MMA."""
    out = tmp_path_factory.mktemp("failing-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PERTURBED_KINDS", "tf32")
        status = main(["run", "--backend", PERTURBED, "--backend", "oracle", "--count", "26", "--out", str(out)])
    return status, out, json.loads((out / "summary.json").read_text())


def _expected_first_mismatch(path: Path) -> dict:
    """The planted mismatch of a failing case, recomputed from its program and the oracle."""
    p = load(str(path))
    [op] = [op for op in p.ops if isinstance(op, Tcgen05Mma)]
    lane, column = taddr.decode(op.d_tmem)
    word = int(oracle_run(p).tmem[0, lane, column])
    return {"where": f"tmem lane {lane} column {column}", "expected_bits": word, "actual_bits": word ^ (1 << PERTURBED_BIT)}


def test_a_failing_backend_fails_the_run_and_its_cases_carry_the_decoded_diff(failing_run):
    status, out, s = failing_run
    assert status == 1
    tf32 = [c.id for c in mma.SHAPE_CLASSES[:20] if c.kind == "tf32"]
    assert sorted(f["label"] for f in s["failures"]) == sorted(tf32) and len(tf32) == 6
    assert s["backends"][PERTURBED]["failed"] == 6 and s["backends"]["oracle"]["passed"] == 26
    assert s["totals"] == {"ran": 52, "passed": 46, "failed": 6, "errors": 0, "skipped": 0}
    for f in s["failures"]:
        want = _expected_first_mismatch(out / "cases" / f"{f['case_id']}.json")
        [m] = f["diff"]["first"]
        assert (m["place"], m["cta"], m["expected_bits"], m["actual_bits"]) == ("tmem", 0, want["expected_bits"], want["actual_bits"])
        assert f"tmem lane {m['row']} column {m['column']}" == want["where"]
        assert m["element"] == "D f32"  # tf32 MMAs accumulate in f32 (Table 39)
        for text, bits in ((m["expected"], m["expected_bits"]), (m["actual"], m["actual_bits"])):
            assert np.float32(float(text)) == np.array([bits], dtype=np.uint32).view(np.float32)[0]
        assert f["classes"] == [f["label"]]


def test_the_class_heat_map_marks_exactly_the_failing_cells(failing_run):
    _, _, s = failing_run
    hm = s["coverage"]["heat_maps"]["class"]
    failing_cells = {(r, c) for (r, c), n in _matrix(hm, "failed").items() if n}
    assert failing_cells == {("tf32", c) for (r, c), n in _matrix(hm, "cases").items() if r == "tf32" and n}
    assert len(failing_cells) == 6


def test_markdown_shows_each_failures_decoded_mismatch_and_replay(failing_run):
    _, out, s = failing_run
    md = (out / "report.md").read_text()
    for f in s["failures"]:
        want = _expected_first_mismatch(out / "cases" / f"{f['case_id']}.json")
        m = f["diff"]["first"][0]
        row = f"| {want['where']} | D f32 | {m['expected']} | {want['expected_bits']:#010x} | {m['actual']} | {want['actual_bits']:#010x} |"
        assert row in re.sub(r" +", " ", md)
        case = shlex.quote(str(out / "cases" / f"{f['case_id']}.json"))
        assert f"Replay (in {os.getcwd()}): `tcgen05-conformance replay {case} --backend {PERTURBED}`" in md
    assert "## Failures (6)" in md


def test_junit_has_one_suite_per_backend_with_the_summary_counts_and_the_decoded_mismatch(failing_run):
    _, out, s = failing_run
    root = ET.parse(out / "junit.xml").getroot()
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert sorted(suites) == sorted(s["backends"])
    for name, suite in suites.items():
        b = s["backends"][name]
        cases = suite.findall("testcase")
        counted = {k: sum(1 for c in cases if c.find(k) is not None) for k in ("failure", "error", "skipped")}
        assert int(suite.get("tests")) == len(cases) == s["cases"]
        assert (int(suite.get("failures")), int(suite.get("errors")), int(suite.get("skipped"))) == (b["failed"], b["errors"], b["skipped"])
        assert (counted["failure"], counted["error"], counted["skipped"]) == (b["failed"], b["errors"], b["skipped"])
    assert int(root.get("failures")) == s["totals"]["failed"] == 6
    for f in s["failures"]:
        want = _expected_first_mismatch(out / "cases" / f"{f['case_id']}.json")
        [case] = [c for c in suites[PERTURBED].findall("testcase") if c.get("name").endswith(f["case_id"])]
        failure = case.find("failure")
        for text in (failure.get("message"), failure.text):
            assert want["where"] in text and f"{want['expected_bits']:#010x}" in text and f"{want['actual_bits']:#010x}" in text
        assert f["replay"] in failure.text


def test_junit_stays_valid_xml_with_control_characters_in_a_detail(failing_run):
    _, _, s = failing_run
    s = json.loads(json.dumps(s))
    f = s["failures"][0]
    f["detail"], f["diff"] = "colour \x1b[31mred\x1b[0m & <tag> \ud800", None
    results = {f["backend"]: [{"case_id": f["case_id"], "status": "fail", "detail": f["detail"], "label": f["label"]}]}
    failure = ET.fromstring(junit(s, results)).find("testsuite/testcase/failure")
    assert failure.get("message") == "colour \ufffd[31mred\ufffd[0m & <tag> \ufffd"


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class TagBalance(HTMLParser):
    """Fails on an end tag that does not close the innermost open element."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if not self.open or self.open.pop() != tag:
            self.problems.append(f"</{tag}> at {self.getpos()}")


def test_html_is_well_formed_self_contained_and_shows_the_decoded_mismatches(failing_run):
    _, out, s = failing_run
    page = (out / "report.html").read_text()
    balance = TagBalance()
    balance.feed(page)
    balance.close()
    assert balance.problems == [] and balance.open == []
    assert page.startswith("<!doctype html>")
    for external in ("http://", "https://", "<script", "<link", " src=", " href=", "url(", "@import"):
        assert external not in page, external
    for f in s["failures"]:
        want = _expected_first_mismatch(out / "cases" / f"{f['case_id']}.json")
        block = page[page.index(f'data-case="{f["case_id"]}"'):]
        block = block[:block.index("</div>")]
        m = f["diff"]["first"][0]
        cells = [want["where"], "D f32", m["expected"], f"{want['expected_bits']:#010x}", m["actual"], f"{want['actual_bits']:#010x}"]
        assert "<tr>" + "".join(f'<td>{c}</td>' for c in cells) + "</tr>" in block
        case = html.escape(shlex.quote(str(out / "cases" / f"{f['case_id']}.json")))
        assert f"replay (in {html.escape(os.getcwd())}): tcgen05-conformance replay {case} --backend {PERTURBED}" in block


def _screenshot_module():
    spec = importlib.util.spec_from_file_location("screenshot_report", ROOT / "docs" / "screenshot_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_heat_map_of_report_md_is_in_report_html(failing_run):
    _, out, s = failing_run
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert set(s["coverage"]["heat_maps"]) == {"class", "option", "hopper", "data_movement"}
    for name, hm in s["coverage"]["heat_maps"].items():
        assert f"### {hm['title']}" in md
        assert f"<h3>{html.escape(hm['title'])}</h3>" in page
        shown = set(re.findall(rf'<g class="cell" data-map="{name}" data-row="([^"]*)" data-column="([^"]*)"', page))
        assert shown == {(html.escape(r), html.escape(c)) for r in hm["rows"] for c in hm["columns"]}, name
    assert "## Value coverage" in md and 'data-map="values"' in page


def _browser(shot):
    """The Chromium to render with; in CI (CI=true, where .ci/run installs it) a missing one fails the test."""
    browser = shot.find_chromium()
    if browser is None and os.environ.get("CI") == "true":
        pytest.fail("no Chromium in CI: .ci/run installs it (apt-get install chromium)")
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set CHROMIUM=/path/to/chrome)")
    return browser


def test_headless_chromium_renders_the_report_and_shows_the_summarys_numbers(failing_run, tmp_path):
    shot = _screenshot_module()
    browser = _browser(shot)
    _, out, s = failing_run
    png = tmp_path / "report.png"
    shot.screenshot(browser, out / "report.html", png, (1200, 900))
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (1200, 900)
    dom = shot.rendered_dom(browser, out / "report.html")
    assert shot.disagreements(s, dom) == []
    # The check can fail: a summary that says otherwise disagrees exactly where it was changed.
    changed = json.loads(json.dumps(s))
    changed["cases"] += 1
    changed["backends"]["oracle"]["passed"] -= 1
    changed["coverage"]["heat_maps"]["class"]["cases"][1][0] += 1
    problems = shot.disagreements(changed, dom)
    assert len(problems) == 4  # cases, the oracle's passed count, the totals' passed count, one heat-map cell
    assert {p.split(":")[0] for p in problems} == {"cases", "backends.oracle.passed", "totals.passed",
                                                  f"heat map class [tf32, {changed['coverage']['heat_maps']['class']['columns'][0]}]"}


def test_in_a_1400_pixel_window_the_value_map_fits_and_no_replay_command_is_cut_off(failing_run):
    shot = _screenshot_module()
    browser = _browser(shot)
    _, out, s = failing_run
    page = out / "report.html"
    assert len(s["value_coverage"]["per_kind_operand"]) >= 14 and s["failures"]  # the map at full width, replay commands
    assert shot.layout_problems(browser, page, 1400) == []
    # A replay command longer than the window (a deep report folder: one long word) wraps.
    deep = out / "deep.html"
    deep.write_text(page.read_text().replace("/cases/", "/" + "a-deep-report-folder/" * 12 + "cases/"))
    assert shot.layout_problems(browser, deep, 1400) == []
    # The check can fail: in a narrower window the value map reaches past the edge, and a command
    # left unwrapped is cut off.
    narrow = shot.layout_problems(browser, page, 900)
    assert any(p.startswith("value coverage reaches ") for p in narrow), narrow
    unwrapped = out / "unwrapped.html"
    unwrapped.write_text(deep.read_text().replace("<pre>replay", "<pre style='white-space:pre;overflow-x:auto'>replay", 1))
    cut = shot.layout_problems(browser, unwrapped, 1400)
    assert len(cut) == 1 and cut[0].startswith("replay (in ") and " is cut off: " in cut[0], cut


# --- reports that say what happened, and a report directory that keeps them (issue 15) -----------

PLANTED, PLANTED_REFERENCE = "tests.fault_backends:Planted", "tests.fault_backends:PlantedReference"


def _planted_run(tmp_path, monkeypatch, verdicts: dict[int, str], examples: int, *extra: str) -> tuple[int, dict, str, str]:
    """A run of the planted backend against its reference, the programs at the given indices
    labelled (skip, fail, error): exit status, summary, stdout, stderr."""
    programs = generate_programs(examples, 0)
    monkeypatch.setenv("PLANTED_VERDICTS", " ".join(f"{programs[k].case_id}={label}" for k, label in verdicts.items()))
    out = tmp_path / "out"
    status = main(["run", "--backend", PLANTED, "--reference", PLANTED_REFERENCE, "--count", str(examples),
                   "--out", str(out), *extra])
    return status, json.loads((out / "summary.json").read_text()), out


def test_skips_are_listed_by_reason_in_every_report_and_every_count_adds_up(tmp_path, monkeypatch, capsys):
    status, s, out = _planted_run(tmp_path, monkeypatch, {0: "skip", 2: "skip"}, 4)
    assert status == 0
    programs = generate_programs(4, 0)
    planted = s["backends"][PLANTED]
    assert planted["skips"] == [{"reason": "planted skip", "count": 2, "case_ids": [programs[0].case_id, programs[2].case_id]}]
    for b in s["backends"].values():
        assert b["passed"] + b["failed"] + b["errors"] + b["skipped"] == s["cases"] == 4
        assert sum(g["count"] for g in b["skips"]) == b["skipped"]
    printed = capsys.readouterr().out
    assert f"{PLANTED}: 4 cases: 2 passed, 0 failed, 0 errors, 2 skipped" in printed
    assert "  skipped 2: planted skip" in printed
    md = (out / "report.md").read_text()
    assert f"## Skipped (2)\n\n- {PLANTED}: 2 skipped: planted skip (`{programs[0].case_id}`, `{programs[2].case_id}`)" in md
    page = (out / "report.html").read_text()
    assert f'<li data-backend="{PLANTED}" data-count="2">' in page and programs[2].case_id in page
    junit_xml = ET.parse(out / "junit.xml").getroot()
    assert junit_xml.get("skipped") == "2"


def test_the_console_lists_the_first_failures_and_says_how_many_more(tmp_path, monkeypatch, capsys):
    status, s, _ = _planted_run(tmp_path, monkeypatch, {k: "fail" for k in range(8)}, 8)
    assert status == 1 and len(s["failures"]) == 8
    printed = capsys.readouterr().out
    assert printed.count("  FAIL ") == 5 and "  ... and 3 more failures (report.md, summary.json)" in printed
    assert "8 failing cases (8 failures over all backends)" in printed


def test_the_reports_say_what_was_checked(tmp_path, monkeypatch, capsys):
    status, s, out = _planted_run(tmp_path, monkeypatch, {}, 3)
    assert status == 0
    assert s["checked"]["cases_compared"] == 3 and not s["checked"]["nothing_compared"]
    line = f"{PLANTED}: compared the state of 3 of 3 cases with the reference {PLANTED_REFERENCE}'s"
    for text in (capsys.readouterr().out, (out / "report.md").read_text(), (out / "report.html").read_text()):
        assert "No case failed: 3 of 3 cases compared by a backend under test" in text
        assert line in html.unescape(text)
        assert "Every case that ran passed" not in text


def test_a_run_where_every_backend_under_test_skips_exits_5_and_says_nothing_was_compared(tmp_path, monkeypatch, capsys):
    status, s, out = _planted_run(tmp_path, monkeypatch, {0: "skip", 1: "skip"}, 2)
    assert status == 5 and s["checked"]["nothing_compared"]
    captured = capsys.readouterr()
    assert captured.err == f"tcgen05-conformance: nothing ran: no backend under test ({PLANTED}) ran a case\n"
    assert f"Nothing was compared: no backend under test ({PLANTED}) ran a case" in (out / "report.md").read_text()
    assert '<div class="banner none">Nothing was compared' in (out / "report.html").read_text()


def test_the_printed_replay_hint_reproduces_the_failure_as_printed(tmp_path, monkeypatch, capsys):
    """The hint names the directory to run it in and the case file relative to it: run there, as
    printed, it judges the case again (the planted failure: exit 1)."""
    status, s, _ = _planted_run(tmp_path, monkeypatch, {0: "fail"}, 1)
    assert status == 1
    [f] = s["failures"]
    printed = capsys.readouterr().out
    assert f"       {f['replay']}  (in {s['replay_dir']})" in printed
    words = shlex.split(f["replay"])
    assert words[0] == "tcgen05-conformance"
    done = subprocess.run([sys.executable, "-m", "tcgen05_conformance", *words[1:]], cwd=s["replay_dir"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and f"{f['case_id']} [{PLANTED}] fail" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("make, message", [
    ("file", "exists and is not a directory"),
    ("uncreatable", "cannot create or open it"),
    ("cases-link", "cases is a link or not a directory"),
])
def test_an_unusable_report_dir_is_refused_before_any_program_is_drawn(tmp_path, monkeypatch, capsys, make, message):
    target = tmp_path / "reports"
    if make == "file":
        target.write_text("not a folder")
    elif make == "uncreatable":
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "reports"
    else:
        target.mkdir()
        (target / "cases").symlink_to(tmp_path)
    drawn = []
    monkeypatch.setattr("tcgen05_conformance.harness.runner.generate_programs", lambda *a, **k: drawn.append(a) or [])
    assert main(["run", "--backend", "oracle", "--count", "2", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tcgen05-conformance: error: --out: report directory {target}") and message in err
    assert err.count("\n") == 1 and not drawn


def test_a_report_dir_in_use_by_another_run_is_refused(tmp_path, capsys):
    from tcgen05_conformance.harness.report import ReportDir

    held = ReportDir(str(tmp_path))
    try:
        assert main(["run", "--backend", "oracle", "--count", "1", "--out", str(tmp_path)]) == 2
    finally:
        held.close()
    assert capsys.readouterr().err == f"tcgen05-conformance: error: --out: report directory {tmp_path} is in use by another run\n"
    assert main(["run", "--backend", "oracle", "--count", "1", "--out", str(tmp_path)]) == 0


def test_reports_replace_a_symlink_instead_of_writing_through_it(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("keep me")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "summary.json").symlink_to(outside)
    assert main(["run", "--backend", "oracle", "--count", "1", "--out", str(reports)]) == 0
    assert outside.read_text() == "keep me"
    assert not (reports / "summary.json").is_symlink() and json.loads((reports / "summary.json").read_text())["cases"] == 1
    assert not [p for p in reports.iterdir() if p.name.endswith(".tmp")]


def test_reports_that_cannot_be_written_at_the_end_go_to_a_fallback_folder(tmp_path, monkeypatch, capsys):
    from tcgen05_conformance.harness import report

    write = report.ReportDir.write
    reports = str(tmp_path / "reports")

    def full_disk(self, name, text):
        if self.path == reports:
            raise OSError(28, "No space left on device")
        return write(self, name, text)

    monkeypatch.setattr(report.ReportDir, "write", full_disk)
    assert main(["run", "--backend", "oracle", "--count", "1", "--out", reports]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"tcgen05-conformance: error: cannot write the reports to {reports} (No space left on device): "
                          "writing them to ")
    fallback = Path(err.split("writing them to ")[1].split(" instead")[0])
    assert json.loads((fallback / "summary.json").read_text())["cases"] == 1


def test_drawing_reports_progress_and_draws_distinct_programs():
    seen: list[int] = []
    programs = generate_programs(130, 0, seen.append)  # random ones from the 121st on
    assert seen and seen == sorted(seen) and seen[-1] == 130
    assert len({p.case_id for p in programs}) == len(programs)


def test_draw_examples_with_distinct_keys_passes_over_repeats_reproducibly():
    values = draw_examples(st.integers(0, 7), 6, 3, distinct=lambda v: v)
    assert len(set(values)) == 6 and set(values) <= set(range(8))
    assert draw_examples(st.integers(0, 7), 6, 3, distinct=lambda v: v) == values
    with pytest.raises(RuntimeError, match="no more distinct examples after [0-8]$"):
        draw_examples(st.integers(0, 7), 9, 3, distinct=lambda v: v)


def test_export_checks_its_out_folder_before_drawing(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")
    drawn = []
    monkeypatch.setattr("tcgen05_conformance.harness.runner.generate_programs", lambda *a, **k: drawn.append(a) or [])
    assert main(["export", "--count", "2", "--out", str(tmp_path / "file" / "vectors")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tcgen05-conformance: error: --out: report directory {tmp_path / 'file' / 'vectors'}: cannot create") \
        and not drawn


def test_a_resumed_run_says_why_it_draws_the_programs_again(tmp_path, capsys):
    argv = ["run", "--backend", "oracle", "--count", "2", "--journal", str(tmp_path / "j"), "--out", str(tmp_path)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert ("resuming " + str(tmp_path / "j") + ": 2 case results already journaled; drawing the programs again from the seed "
            "(the journal holds results, the reports need each program)") in capsys.readouterr().err
