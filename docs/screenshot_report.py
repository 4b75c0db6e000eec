"""Render a run's report.html in headless Chromium: save a PNG of the page, check that the
numbers the rendered page shows (the run's facts, the backend table, every heat-map cell) are
those of the run's summary.json, and that the page fits the window's width: no heat map reaches
past its right edge and no replay command is cut off.

    python docs/screenshot_report.py reports/default-run --png docs/images/report.png

Chromium is looked up as $CHROMIUM, then `chromium`, `chromium-browser`, `google-chrome` and
`chrome` on PATH (Debian: `apt-get install chromium`). Exit status 0 when the page agrees with
the summary and fits the window, 1 when it does not, 2 when there is no Chromium or no report."""

from __future__ import annotations

import argparse
import html
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
WINDOW = (1400, 1500)  # the top of the page: facts, backends, the class heat map and the first failures


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable to use, or None."""
    if os.environ.get("CHROMIUM"):
        return shutil.which(os.environ["CHROMIUM"])
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def _chromium(browser: str, *arguments: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                               "--hide-scrollbars", "--no-first-run", f"--user-data-dir={profile}", *arguments],
                              capture_output=True, text=True, timeout=120, check=True)


def screenshot(browser: str, page: Path, png: Path, window: tuple[int, int] = WINDOW) -> None:
    """Save a PNG of the top `window` (width, height) pixels of the page."""
    png.parent.mkdir(parents=True, exist_ok=True)
    _chromium(browser, f"--window-size={window[0]},{window[1]}", f"--screenshot={png.resolve()}", page.resolve().as_uri())
    if not png.exists():
        raise RuntimeError(f"{browser} wrote no screenshot to {png}")


def rendered_dom(browser: str, page: Path) -> str:
    """The page's DOM after Chromium has loaded and laid it out, serialised as HTML."""
    return _chromium(browser, "--dump-dom", page.resolve().as_uri()).stdout


#: Run in a copy of the page once Chromium has laid it out: what reaches past the window's right
#: edge, written into the DOM as JSON (the report itself holds no script).
_MEASURE = """<script>(() => {
  const width = window.innerWidth, found = [];
  const page = document.documentElement.scrollWidth;
  if (page > width) found.push(`the page is ${page} px wide`);
  for (const svg of document.querySelectorAll("svg[aria-label]")) {
    const right = Math.ceil(svg.getBoundingClientRect().right);
    if (right > width) found.push(`${svg.getAttribute("aria-label")} reaches ${right} px`);
  }
  for (const pre of document.querySelectorAll("pre")) {
    if (pre.scrollWidth > pre.clientWidth) found.push(`${pre.textContent.slice(0, 40)}... is cut off: ${pre.scrollWidth} px in ${pre.clientWidth}`);
  }
  const out = document.createElement("pre");
  out.id = "layout-problems";
  out.textContent = JSON.stringify({width, found});
  document.body.appendChild(out);
})();</script>"""


def layout_problems(browser: str, page: Path, width: int) -> list[str]:
    """What does not fit a window `width` pixels wide, as Chromium lays the page out: the page
    wider than the window, a heat map (an SVG with a label) reaching past its right edge, a `pre`
    (a replay command) whose text is cut off."""
    with tempfile.TemporaryDirectory() as folder:
        measured = Path(folder) / "measured.html"
        measured.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
        dom = _chromium(browser, f"--window-size={width},900", "--dump-dom", measured.as_uri()).stdout
    found = re.search(r'<pre id="layout-problems">(.*?)</pre>', dom, re.DOTALL)
    if found is None:
        raise RuntimeError(f"{browser} ran no script in {page}: the layout was not measured")
    result = json.loads(html.unescape(found.group(1)))
    if result["width"] != width:
        raise RuntimeError(f"{browser} laid {page} out {result['width']} px wide, not {width}")
    return result["found"]


class ShownNumbers(HTMLParser):
    """The text of every element carrying `data-key`, and of every heat-map cell, keyed by
    (map, row, column)."""

    def __init__(self) -> None:
        super().__init__()
        self.keyed: dict[str, str] = {}
        self.cells: dict[tuple[str, str, str], str] = {}
        self._open: list[tuple[str, object]] = []  # (tag, key it collects text for, or None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        key: object = None
        if "data-key" in a:
            key = a["data-key"]
            self.keyed[key] = ""
        elif tag == "g" and "data-map" in a:
            key = (a["data-map"], a["data-row"], a["data-column"])
            self.cells[key] = ""
        self._open.append((tag, key))

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        inside_title = any(tag == "title" for tag, _ in self._open)
        for _, key in reversed(self._open):
            if isinstance(key, str):
                self.keyed[key] += data
                break
            if isinstance(key, tuple) and not inside_title:
                self.cells[key] += data
                break


def expected_cell_text(cases: int, failed: int) -> str:
    """What a heat-map cell must show: "f/n" when f of its n cases failed, else n, nothing for an
    empty cell the ISA does not allow."""
    return f"{failed}/{cases}" if failed else str(cases)


def disagreements(summary: dict, dom: str) -> list[str]:
    """Every place where the rendered page shows another number than summary.json."""
    shown = ShownNumbers()
    shown.feed(dom)
    cov = summary["coverage"]
    want = {"cases": str(summary["cases"]), "seed": str(summary["seed"]), "duration_s": str(summary["duration_s"]),
            "coverage.classes": f"{cov['classes_hit']} / {cov['classes_total']}",
            "coverage.options": f"{cov['options_hit']} / {cov['options_total']}",
            "failures": str(len(summary["failures"]))}
    for name, b in summary["backends"].items():
        want.update({f"backends.{name}.{k}": str(b[k]) for k in ("ran", "passed", "failed", "errors", "skipped")})
    want.update({f"totals.{k}": str(sum(b[k] for b in summary["backends"].values())) for k in ("ran", "passed", "failed", "errors", "skipped")})
    problems = [f"{key}: page shows {shown.keyed.get(key)!r}, summary.json has {value!r}"
                for key, value in want.items() if shown.keyed.get(key, "").strip() != value]
    for name, hm in cov["heat_maps"].items():
        for i, row in enumerate(hm["rows"]):
            for j, column in enumerate(hm["columns"]):
                cases, failed, applicable = hm["cases"][i][j], hm["failed"][i][j], hm["applicable"][i][j]
                value = expected_cell_text(cases, failed) if cases or applicable else ""
                got = shown.cells.get((name, row, column))
                if got is None or got.strip() != value:
                    problems.append(f"heat map {name} [{row}, {column}]: page shows {got!r}, summary.json has {value!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    top.add_argument("report_dir", type=Path, help="a run's --out folder (holds report.html and summary.json)")
    top.add_argument("--png", type=Path, help="where to save the screenshot (default: REPORT_DIR/report.png)")
    top.add_argument("--window", default=f"{WINDOW[0]}x{WINDOW[1]}", help="WIDTHxHEIGHT of the page's visible top")
    args = top.parse_args(argv)
    browser = find_chromium()
    page, summary_path = args.report_dir / "report.html", args.report_dir / "summary.json"
    if browser is None:
        print("screenshot_report: no Chromium: install it (apt-get install chromium) or set CHROMIUM", file=sys.stderr)
        return 2
    if not page.is_file() or not summary_path.is_file():
        print(f"screenshot_report: {args.report_dir} lacks report.html or summary.json", file=sys.stderr)
        return 2
    width, _, height = args.window.partition("x")
    png = args.png or args.report_dir / "report.png"
    screenshot(browser, page, png, (int(width), int(height)))
    problems = disagreements(json.loads(summary_path.read_text(encoding="utf-8")), rendered_dom(browser, page))
    overflows = layout_problems(browser, page, int(width))
    for problem in problems + overflows:
        print(problem)
    print(f"{png}: saved; the rendered page {'disagrees with' if problems else 'agrees with'} {summary_path}"
          + (f" in {len(problems)} places" if problems else "")
          + f", and {'does not fit' if overflows else 'fits'} a {width}-pixel window")
    return 1 if problems or overflows else 0


if __name__ == "__main__":
    sys.exit(main())
