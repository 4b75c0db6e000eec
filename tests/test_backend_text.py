"""Text a backend gives (an error, a skip reason) is shown, never obeyed (issue 32, item 7): on the
console its control characters (terminal escapes, a bell, newlines) are written as escapes, and
in report.md and report.html its HTML is entities and its table bars escaped, each on one line."""

import json
import xml.etree.ElementTree as ET

from tcgen05_conformance.cli import main
from tests.misbehaving_backends import HOSTILE_TEXT

MISBEHAVING = "tests.misbehaving_backends:Misbehaving"
PLANTED_REFERENCE = "tests.fault_backends:PlantedReference"


def test_hostile_backend_text_is_escaped_on_the_console_and_in_the_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MISBEHAVE", "text")
    out = tmp_path / "out"
    assert main(["run", "--backend", MISBEHAVING, "--reference", PLANTED_REFERENCE, "--examples", "2",
                 "--report-dir", str(out)]) == 1
    console = capsys.readouterr()
    assert HOSTILE_TEXT in [f["detail"] for f in json.loads((out / "summary.json").read_text())["failures"]]  # kept whole
    for text in (console.out, console.err):
        assert not any(ord(c) < 32 and c != "\n" for c in text) and "\\x1b[2J" in console.out
    md = (out / "report.md").read_text()
    assert "<script>" not in md and "\x1b" not in md and "\x07" not in md
    line = next(line for line in md.splitlines() if "alert(1)" in line)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| cell\\nsecond line" in line
    page = (out / "report.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    ET.parse(out / "junit.xml")  # still well-formed XML
