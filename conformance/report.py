"""Reports of a run from its summary: Markdown, self-contained HTML, JUnit XML, and the JSON
summary itself (the interface other tooling reads, per DESIGN.md)."""

from __future__ import annotations

import html
import json
import os
from xml.sax.saxutils import quoteattr

from tabulate import tabulate


def _backend_rows(s: dict) -> list[list]:
    return [[n, b["ran"], b["passed"], b["failed"], b["errors"], b["skipped"], b["skip_reason"] or "", b["duration_s"]]
            for n, b in s["backends"].items()]


_BACKEND_HEADERS = ["backend", "ran", "passed", "failed", "errors", "skipped", "skip reason", "seconds"]


def markdown(s: dict) -> str:
    cov = s["coverage"]
    lines = [
        "# tcgen05-conformance run",
        "",
        f"- command: `{s['command']}`",
        f"- machine: {s['machine']}",
        f"- seed: {s['seed']}; cases: {s['cases']}; duration: {s['duration_s']} s",
        f"- Table 39 classes covered: {cov['classes_hit']} / {cov['classes_total']}",
        f"- tcgen05.mma options covered: {cov['options_hit']} / {cov['options_total']}"
        + (f" (never: {', '.join(cov['options_missed'])})" if cov["options_missed"] else ""),
        "",
        "## Backends",
        "",
        tabulate(_backend_rows(s), _BACKEND_HEADERS, tablefmt="github"),
        "",
        "## Coverage per Table 39 class (PTX ISA 9.7.16.2.1)",
        "",
        tabulate(sorted(cov["per_class"].items()), ["class", "cases"], tablefmt="github"),
        "",
        "## Coverage per tcgen05.mma option",
        "",
        tabulate(list(cov["per_option"].items()), ["option", "cases"], tablefmt="github"),
        "",
    ]
    if cov["hopper_programs"]:
        lines += ["Hopper programs: " + ", ".join(f"{k} {v}" for k, v in cov["hopper_programs"].items()), ""]
    if s["failures"]:
        lines += ["## Failures", ""]
        lines += [f"- `{f['case_id']}` ({f['backend']}, {f['label']}): {f['detail']}  \n  replay: `{f['replay']}`"
                  for f in s["failures"][:100]]
    else:
        lines += ["No failures."]
    return "\n".join(lines) + "\n"


def html_page(s: dict) -> str:
    cov = s["coverage"]
    rows = "".join(
        f"<tr><td>{html.escape(c)}</td><td class='{'hit' if n else 'miss'}'>{n}</td></tr>"
        for c, n in sorted(cov["per_class"].items())
    )
    options = "".join(
        f"<tr><td>{html.escape(o)}</td><td class='{'hit' if n else 'miss'}'>{n}</td></tr>"
        for o, n in cov["per_option"].items()
    )
    backends = tabulate(_backend_rows(s), _BACKEND_HEADERS, tablefmt="html")
    failures = "".join(
        f"<li><code>{html.escape(f['case_id'])}</code> {html.escape(f['backend'])}: {html.escape(f['detail'])}"
        f"<br><code>{html.escape(f['replay'])}</code></li>" for f in s["failures"][:100]
    ) or "<li>none</li>"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>tcgen05-conformance run</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px}}
.hit{{background:#cfc}}.miss{{background:#fcc}}</style></head><body>
<h1>tcgen05-conformance run</h1>
<p>command <code>{html.escape(s['command'])}</code> on {html.escape(s['machine'])}; seed {s['seed']};
{s['cases']} cases in {s['duration_s']} s; Table 39 classes covered {cov['classes_hit']} / {cov['classes_total']};
tcgen05.mma options covered {cov['options_hit']} / {cov['options_total']}</p>
<h2>Backends</h2>{backends}
<h2>Failures</h2><ul>{failures}</ul>
<h2>Coverage per Table 39 class</h2><table><tr><th>class</th><th>cases</th></tr>{rows}</table>
<h2>Coverage per tcgen05.mma option</h2><table><tr><th>option</th><th>cases</th></tr>{options}</table>
</body></html>
"""


def junit(s: dict, results: dict) -> str:
    suites = []
    for name, cases in results.items():
        b = s["backends"][name]
        body = []
        for case in cases:
            inner = ""
            if case["status"] == "fail":
                inner = f"<failure message={quoteattr(case['detail'][:500])}/>"
            elif case["status"] == "error":
                inner = f"<error message={quoteattr(case['detail'][:500])}/>"
            elif case["status"] == "skip":
                inner = f"<skipped message={quoteattr(case['detail'][:500])}/>"
            body.append(f'    <testcase classname="tcgen05.{name}" name={quoteattr(case["label"] + ":" + case["case_id"])}>{inner}</testcase>')
        suites.append(
            f'  <testsuite name="{name}" tests="{len(cases)}" failures="{b["failed"]}" errors="{b["errors"]}" '
            f'skipped="{b["skipped"]}" time="{b["duration_s"]}">\n' + "\n".join(body) + "\n  </testsuite>"
        )
    return '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n' + "\n".join(suites) + "\n</testsuites>\n"


def write_reports(directory: str, s: dict, results: dict) -> list[str]:
    """Write summary.json, report.md, report.html and junit.xml; returns the paths."""
    os.makedirs(directory, exist_ok=True)
    files = {
        "summary.json": json.dumps(s, indent=1, sort_keys=True) + "\n",
        "report.md": markdown(s),
        "report.html": html_page(s),
        "junit.xml": junit(s, results),
    }
    paths = []
    for name, text in files.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(path)
    return paths
