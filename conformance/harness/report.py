"""Reports of a run from its summary: Markdown, a self-contained HTML page (inline CSS and SVG
coverage heat maps, no scripts, nothing fetched), JUnit XML (one testsuite per backend), and the
JSON summary itself (the interface other tooling reads, per DESIGN.md).

Every report shows the reference, each backend's role (`tcgen05_conformance.harness.judge.role`), the
profiles that judged the cases, and the failures with their decoded first mismatches
(`failures[i]["diff"]`, the `Diff.as_dict()` of `tcgen05_conformance.harness.diff`), the profile that
judged each and the command that replays it."""

from __future__ import annotations

import contextlib
import fcntl
import html
import json
import math
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable

from tabulate import tabulate

from tcgen05_conformance.core.inputs import printable
from tcgen05_conformance.harness.diff import Mismatch

FAILURES_SHOWN = 100  # failures listed in full in report.md / report.html (summary.json and junit.xml hold all)
BACKEND_FIELDS = ("ran", "passed", "failed", "errors", "skipped")
_BACKEND_HEADERS = ["backend", *BACKEND_FIELDS, "skip reason", "seconds", "judged"]
MISMATCH_HEADERS = ["where", "element", "expected", "expected bits", "actual", "actual bits"]
HEAT_MAP_ORDER = ("class", "option", "hopper", "data_movement")
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# --- decoded mismatches --------------------------------------------------------------------------


def _bits(word: int) -> str:
    return f"{word:#010x}"


def mismatch_row(m: dict) -> list[str]:
    """One decoded mismatch (a `Mismatch` as a dict) as table cells, in MISMATCH_HEADERS order."""
    return [Mismatch(**m).where(), m["element"], m["expected"], _bits(m["expected_bits"]), m["actual"], _bits(m["actual_bits"])]


def mismatch_line(m: dict) -> str:
    """One decoded mismatch on a line: where, what the word holds, expected and actual values with their bits."""
    where, element, expected, expected_bits, actual, actual_bits = mismatch_row(m)

    def shown(text: str, bits: str) -> str:
        return bits if text == bits else f"{text} ({bits})"

    return f"{where} ({element}): expected {shown(expected, expected_bits)}, got {shown(actual, actual_bits)}"


def failure_message(f: dict) -> str:
    """A failure in one line: the decoded first mismatch where the backend diffed, else its detail."""
    diff = f.get("diff")
    if not diff or not diff.get("first"):
        return f["detail"]
    return f"{diff['mismatched']} of {diff['words']} words differ; first: {mismatch_line(diff['first'][0])}"


def _mismatches(f: dict) -> list[dict]:
    return (f.get("diff") or {}).get("first") or []


# --- what was checked, skips ----------------------------------------------------------------------

SKIPPED_IDS_SHOWN = 10  # case ids shown per skip reason in report.md / report.html (summary.json holds more)


def checked_lines(s: dict) -> list[str]:
    """One line per backend saying what its cases checked: the reference computed states (compared
    with nothing by itself), an assembler's verdicts against the legality model, a backend under
    test's states against the reference's."""
    lines = []
    for name, b in s["backends"].items():
        ran, of = b["ran"], b["ran"] + b["skipped"]
        if name == s.get("reference"):
            what = f"computed the reference state of {ran} of {of} cases (a pass: a state was computed)"
        elif b.get("role", "").startswith("assembled"):
            what = f"assembled {ran} of {of} cases, each result compared with the legality model"
        else:
            what = f"compared the state of {ran} of {of} cases with the reference {s.get('reference')}'s"
        lines.append(f"{name}: {what}")
    return lines


def headline(s: dict) -> str:
    """The run's verdict in one line, saying what was compared."""
    failing = len({f["case_id"] for f in s["failures"]})
    if failing:
        count = len(s["failures"])
        return f"{failing} failing case{'s' if failing != 1 else ''} ({count} failure{'s' if count != 1 else ''} over all backends)"
    checked = s.get("checked") or {}
    if checked.get("nothing_compared"):
        under_test = checked.get("backends_under_test") or []
        return ("Nothing was compared: " + (f"no backend under test ({', '.join(under_test)}) ran a case" if under_test
                                            else "only the reference ran (no backend under test)"))
    return (f"No case failed: {checked.get('cases_compared', 0)} of {s['cases']} cases compared by a backend under test "
            f"({', '.join(checked.get('backends_under_test') or [])})")


def skip_count(s: dict) -> int:
    return sum(b["skipped"] for b in s["backends"].values())


def skips_markdown(s: dict) -> list[str]:
    """The skipped cases of each backend, grouped by reason, with counts and the first case ids."""
    lines = [f"## Skipped ({skip_count(s)})", ""]
    if not skip_count(s):
        return lines + ["No case was skipped.", ""]
    for name, b in s["backends"].items():
        for group in b.get("skips", []):
            ids = group["case_ids"][:SKIPPED_IDS_SHOWN]
            more = f" and {group['count'] - len(ids)} more" if group["count"] > len(ids) else ""
            lines.append(f"- {_md_cell(name)}: {group['count']} skipped: {_md_cell(group['reason'])} "
                         f"({', '.join(f'`{i}`' for i in ids)}{more})")
    return lines + [""]


# --- Markdown --------------------------------------------------------------------------------------


def _backend_rows(s: dict) -> list[list]:
    return [[n, *(b[k] for k in BACKEND_FIELDS), b["skip_reason"] or "", b["duration_s"], b.get("role", "")]
            for n, b in s["backends"].items()]


def _profiles(s: dict) -> str:
    """The profiles that judged the cases with their counts, e.g. `exact 187, sm_90a 6`."""
    return ", ".join(f"{name} {count}" for name, count in (s.get("profiles") or {}).items()) or "none"


def _facts(s: dict) -> list[tuple[str, str, str]]:
    """(key, label, value) of the run's headline facts (the GPUs where the run's GPU backends had
    any); the key names the summary.json field."""
    cov, source = s["coverage"], s.get("source") or {}
    revision = f"{source['commit'][:12]}{' (with local changes)' if source.get('dirty') else ''}" if source else "unknown"
    return [
        ("command", "command", s["command"]),
        ("machine", "machine", s["machine"]),
        *([("gpus", "GPUs (CUDA_VISIBLE_DEVICES)", ", ".join(s["gpus"]))] if s.get("gpus") else []),
        ("source", "source revision", revision),
        ("finished_utc", "finished (UTC)", s.get("finished_utc", "")),
        ("seed", "seed", str(s["seed"])),
        ("reference", "reference", str(s.get("reference") or "none (no backend compares states)")),
        ("profile", "numeric profile asked for", str(s.get("profile") or "none (each architecture its own)")),
        ("profiles", "cases judged by profile", _profiles(s)),
        ("cases", "cases", str(s["cases"])),
        ("duration_s", "duration (s)", str(s["duration_s"])),
        ("coverage.classes", "Table 39 classes covered", f"{cov['classes_hit']} / {cov['classes_total']}"),
        ("coverage.options", "tcgen05.mma options covered", f"{cov['options_hit']} / {cov['options_total']}"),
    ]


def _md_cell(text: object) -> str:
    """Text a backend or a user gave, as Markdown shows it literally, on one line: control
    characters as their escapes, HTML (`<script>`) as entities, table bars and backticks escaped."""
    return html.escape(printable(str(text)), quote=False).replace("|", "\\|").replace("`", "\\`")


def _md_heat_cell(cases: int, failed: int, applicable: bool) -> str:
    if not applicable:
        return "·" if not cases else f"{cases} (not in the ISA)"
    return f"✗ {failed}/{cases}" if failed else str(cases)


def markdown(s: dict) -> str:
    cov = s["coverage"]
    lines = ["# tcgen05-conformance run", ""]
    lines += [f"- {label}: `{value}`" if key == "command" else f"- {label}: {value}" for key, label, value in _facts(s)]
    if cov["options_missed"]:
        lines.append(f"- options never exercised: {', '.join(cov['options_missed'])}")
    if cov["hopper_programs"]:
        lines.append("- Hopper instructions: " + ", ".join(f"{k} {v}" for k, v in cov["hopper_programs"].items()))
    totals = ["all", *(sum(b[k] for b in s["backends"].values()) for k in BACKEND_FIELDS), "", "", ""]
    lines += ["", "## What was checked", "", f"**{headline(s)}**", "", *(f"- {_md_cell(line)}" for line in checked_lines(s))]
    lines += ["", "## Backends", "", tabulate(_backend_rows(s) + [totals], _BACKEND_HEADERS, tablefmt="github"), ""]
    lines += skips_markdown(s)
    lines += [f"## Failures ({len(s['failures'])})", ""]
    if not s["failures"]:
        lines += ["No failures.", ""]
    for f in s["failures"][:FAILURES_SHOWN]:
        lines += [f"### `{f['case_id']}` {f['status']} on {_md_cell(f['backend'])}{_judged(f)}", "",
                  f"{_md_cell(_what(f))}: {_md_cell(failure_message(f))}", ""]
        if _mismatches(f):
            rows = [[_md_cell(c) for c in mismatch_row(m)] for m in _mismatches(f)]
            lines += [f"First mismatches ({f['diff']['mismatched']} of {f['diff']['words']} words differ):", "",
                      tabulate(rows, MISMATCH_HEADERS, tablefmt="github", disable_numparse=True), ""]
        lines += [f"Replay (in {_md_cell(_replay_dir(s))}): `{f['replay']}`", ""]
    if len(s["failures"]) > FAILURES_SHOWN:
        lines += [f"... and {len(s['failures']) - FAILURES_SHOWN} more in summary.json and junit.xml.", ""]
    lines += ["## Coverage heat maps", "",
              "Each cell counts the cases (programs) exercising it; `✗ f/n`: f of its n cases failed or errored on "
              "some backend; `0`: allowed but never exercised; `·`: not in the ISA.", ""]
    for name in HEAT_MAP_ORDER:
        hm = cov["heat_maps"][name]
        rows = [[r, *(_md_heat_cell(n, f, a) for n, f, a in zip(cases, failed, applicable))]
                for r, cases, failed, applicable in zip(hm["rows"], hm["cases"], hm["failed"], hm["applicable"])]
        lines += [f"### {hm['title']}", "", tabulate(rows, [f"{hm['row_axis']} \\ {hm['column_axis']}", *hm["columns"]],
                                                       tablefmt="github", disable_numparse=True), ""]
    return "\n".join(lines + value_coverage_markdown(s))


# --- value coverage --------------------------------------------------------------------------------

MISSED_SHOWN = 50  # missed value coverpoints listed in report.md / report.html (summary.json holds all)


def value_grid(vc: dict) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    """Rows (instruction kinds), columns (operands) and the counts of each cell of the value heat map."""
    rows = list(vc["per_kind_operand"])
    columns = list(dict.fromkeys(o for operands in vc["per_kind_operand"].values() for o in operands))
    cells = {(r, c): vc["per_kind_operand"][r][c] for r in rows for c in vc["per_kind_operand"][r]}
    return rows, columns, cells


def _value_cell_text(cell: dict | None) -> str:
    if cell is None:
        return "·"
    text = f"{cell['hit']}/{cell['reachable']}"
    return text + (f" ({cell['not_reachable']} unreachable)" if cell["not_reachable"] else "")


def value_coverage_markdown(s: dict) -> list[str]:
    """The report's value-coverage section: totals, the kind x operand table, the missed coverpoints."""
    vc = s.get("value_coverage")
    if not vc:
        return []
    rows, columns, cells = value_grid(vc)
    lines = ["", "## Value coverage", "",
             f"{vc['hit']} of {vc['reachable']} reachable value coverpoints hit ({vc['coverpoints']} defined, "
             f"{len(vc['not_reachable'])} not reachable under this run's targets). Each cell: hit/reachable; "
             "summary.json's `value_coverage.points` gives every coverpoint's hit count and the first case that hit it.", ""]
    table = [[r, *(_value_cell_text(cells.get((r, c))) for c in columns)] for r in rows]
    lines += [tabulate(table, ["kind \\ operand", *columns], tablefmt="github", disable_numparse=True), ""]
    if vc["missed"]:
        lines += [f"Missed ({len(vc['missed'])}): " + ", ".join(f"`{m}`" for m in vc["missed"][:MISSED_SHOWN])
                  + (" ..." if len(vc["missed"]) > MISSED_SHOWN else ""), ""]
    for point, why in list(vc["not_reachable"].items())[:MISSED_SHOWN]:
        lines.append(f"- not reachable: `{point}`: {why}")
    return lines


# --- HTML --------------------------------------------------------------------------------------------

_EMPTY, _NOT_IN_ISA = "#fff3c4", "#eeeeee"
_PASS_LOW, _PASS_HIGH = (0xdf, 0xf2, 0xdc), (0x1f, 0x7a, 0x38)
_FAIL_LOW, _FAIL_HIGH = (0xf7, 0x9a, 0x84), (0xa5, 0x0f, 0x15)
_CHAR_W = 6.7  # width of one 11 px monospace character in the SVGs
_CELL_H = 20

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px 32px;color:#1d2330;max-width:1400px}
h1{font-size:24px;margin:0 0 8px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #d8dce3;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d8dce3;padding:3px 9px;text-align:left}
th{background:#f3f5f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{padding:10px 14px;border-radius:6px;font-weight:600;margin:12px 0;font-size:15px}
.banner.pass{background:#dff2dc;color:#1f5f2e;border:1px solid #9fd49a}
.banner.none{background:#fff3c4;color:#6b5300;border:1px solid #e5cf7a}.banner.fail{background:#fde0dc;color:#8a1414;border:1px solid #f2a79c}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;font-size:13.5px;margin:8px 0}
dl.facts dt{color:#5a6473}dl.facts dd{margin:0}
.maps{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start}.map h3{margin-top:8px}
svg text{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:11px}
.failure{border:1px solid #f2a79c;border-left:5px solid #c0392b;border-radius:4px;padding:2px 14px 8px;margin:10px 0}
.failure h3 .note{font-weight:400;margin-left:8px}
.failure pre{background:#f6f7f9;padding:6px 8px;margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.note{color:#5a6473;font-size:13px}
"""


def _mix(low: tuple[int, int, int], high: tuple[int, int, int], t: float) -> str:
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(low, high))


def heat_cell_style(cases: int, failed: int, applicable: bool, most: int) -> tuple[str, str, str]:
    """(fill, text colour, text) of a heat-map cell: failures dominate (red, darker as more of the
    cell's cases fail), then cases run (green, darker as more ran, on a log scale against the
    map's busiest cell `most`), then allowed but never run (amber, "0"), then not in the ISA (grey)."""
    if failed:
        t = failed / cases
        return _mix(_FAIL_LOW, _FAIL_HIGH, t), "#ffffff", f"{failed}/{cases}"
    if cases:
        t = math.log1p(cases) / math.log1p(most) if most > 1 else 1.0
        return _mix(_PASS_LOW, _PASS_HIGH, t), "#ffffff" if t > 0.55 else "#1d2330", str(cases)
    return (_EMPTY, "#8a6d00", "0") if applicable else (_NOT_IN_ISA, "#9aa1ab", "")


def _svg_text(x: float, y: float, text: str, **attributes: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{html.escape(v)}"' for k, v in attributes.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{html.escape(text)}</text>'


def _grid_svg(name: str, label: str, rows: list[str], columns: list[str], min_cell_w: int,
              cell_of: Callable[[int, str, int, str], tuple[str, str, str, str]]) -> str:
    """A grid of cells as inline SVG: row labels left, column labels rotated above, one cell per
    (row, column) carrying `data-map` (`name`), `data-row`, `data-column` and a tooltip;
    `cell_of(i, row, j, column)` gives the cell's fill, ink, shown text and tooltip."""
    cell_w = max(min_cell_w, round(_CHAR_W * max(len(c) for c in columns) * 0.45))
    left = round(_CHAR_W * max(len(r) for r in rows)) + 12
    top = round(_CHAR_W * max(len(c) for c in columns) * 0.72) + 14
    # A column's label, rotated, reaches about 0.72 of its length right of the column's middle.
    right = max(cell_w * len(columns), *(cell_w * j + cell_w / 2 + _CHAR_W * len(c) * 0.72 for j, c in enumerate(columns)))
    width, height = left + round(right) + 4, top + _CELL_H * len(rows) + 4
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{html.escape(label)}">']
    for j, column in enumerate(columns):
        x, y = left + cell_w * j + cell_w / 2, top - 6
        parts.append(_svg_text(x, y, column, transform=f"rotate(-45 {x:.1f} {y:.1f})", fill="#1d2330"))
    for i, row in enumerate(rows):
        y = top + _CELL_H * i
        parts.append(_svg_text(left - 8, y + 14, row, text_anchor="end", fill="#1d2330"))
        for j, column in enumerate(columns):
            fill, ink, text, tip = cell_of(i, row, j, column)
            x = left + cell_w * j
            parts.append(f'<g class="cell" data-map="{name}" data-row="{html.escape(row)}" data-column="{html.escape(column)}">'
                         f'<title>{html.escape(tip)}</title>'
                         f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{_CELL_H - 2}" rx="2" fill="{fill}"/>'
                         + (_svg_text(x + (cell_w - 2) / 2, y + 13, text, text_anchor="middle", fill=ink) if text else "")
                         + "</g>")
    parts.append("</svg>")
    return "".join(parts)


def heat_map_svg(name: str, hm: dict) -> str:
    """One heat map as inline SVG (`_grid_svg`), each cell showing its case count."""
    most = max((n for row in hm["cases"] for n in row), default=0)

    def cell(i: int, row: str, j: int, column: str) -> tuple[str, str, str, str]:
        cases, failed, applicable = hm["cases"][i][j], hm["failed"][i][j], hm["applicable"][i][j]
        fill, ink, text = heat_cell_style(cases, failed, applicable, most)
        tip = (f"{hm['row_axis']} {row}, {hm['column_axis']} {column}: "
               + (f"{cases} cases, {failed} failed" if applicable or cases else "not in the ISA"))
        return fill, ink, text, tip

    return _grid_svg(name, hm["title"], hm["rows"], hm["columns"], 44, cell)


def value_heat_map_svg(vc: dict) -> str:
    """The value heat map as inline SVG: operands down, kinds across (report.md's table turned, so
    that its many operands fit a 1,400-pixel window), each cell hit/reachable, green when every
    reachable coverpoint was hit, red as more were missed, grey where none is reachable or the kind
    has no such operand."""
    kinds, operands, cells = value_grid(vc)

    def cell(i: int, operand: str, j: int, kind: str) -> tuple[str, str, str, str]:
        found = cells.get((kind, operand))
        reachable = found["reachable"] if found else 0
        missed = reachable - found["hit"] if found else 0
        if missed:
            fill, ink = _mix(_FAIL_LOW, _FAIL_HIGH, missed / reachable), "#ffffff"
        elif reachable:
            fill, ink = _mix(_PASS_LOW, _PASS_HIGH, 1.0), "#ffffff"
        else:
            fill, ink = _NOT_IN_ISA, "#9aa1ab"
        text = f"{found['hit']}/{reachable}" if reachable else ""
        tip = f"{kind}, {operand}: " + (f"{found['hit']} of {reachable} reachable coverpoints hit" if found else "no coverpoints")
        if found and found["not_reachable"]:
            tip += f", {found['not_reachable']} not reachable"
        return fill, ink, text, tip

    return _grid_svg("values", "value coverage", operands, kinds, 64, cell)


def _value_section_html(s: dict) -> str:
    vc = s.get("value_coverage")
    if not vc:
        return ""
    missed = ""
    if vc["missed"]:
        shown = ", ".join(f"<code>{html.escape(m)}</code>" for m in vc["missed"][:MISSED_SHOWN])
        missed = f"<p>Missed ({len(vc['missed'])}): {shown}{' ...' if len(vc['missed']) > MISSED_SHOWN else ''}</p>"
    unreachable = "".join(f"<li><code>{html.escape(p)}</code>: {html.escape(why)}</li>"
                          for p, why in list(vc["not_reachable"].items())[:MISSED_SHOWN])
    return (f'<h2>Value coverage</h2><p class="note"><span data-key="value_coverage.hit">{vc["hit"]}</span> of '
            f'<span data-key="value_coverage.reachable">{vc["reachable"]}</span> reachable value coverpoints hit '
            f'({vc["coverpoints"]} defined). Each cell: hit/reachable; summary.json names the first case that hit each '
            f'coverpoint.</p>{value_heat_map_svg(vc)}{missed}' + (f"<ul>{unreachable}</ul>" if unreachable else ""))


def _legend_svg() -> str:
    swatches = [
        (_NOT_IN_ISA, "not in the ISA"),
        (_EMPTY, "allowed, never run"),
        (_mix(_PASS_LOW, _PASS_HIGH, 0.0), "1 case run"),
        (_mix(_PASS_LOW, _PASS_HIGH, 0.5), "more cases"),
        (_mix(_PASS_LOW, _PASS_HIGH, 1.0), "most cases (log scale)"),
        (_mix(_FAIL_LOW, _FAIL_HIGH, 0.0), "f/n: some of n failed"),
        (_mix(_FAIL_LOW, _FAIL_HIGH, 1.0), "all n failed"),
    ]
    parts, x = ['<svg width="1120" height="24" role="img" aria-label="heat map legend">'], 0
    for fill, label in swatches:
        parts.append(f'<rect x="{x}" y="4" width="16" height="16" rx="2" fill="{fill}" stroke="#c4c9d1"/>')
        parts.append(_svg_text(x + 22, 16, label, fill="#1d2330"))
        x += 30 + round(_CHAR_W * len(label))
    parts.append("</svg>")
    return "".join(parts)


def _html_table(headers: list[str], rows: list[list], keys: list[list[str | None]] | None = None) -> str:
    """A table; a cell with a key carries it as `data-key`, so the numbers shown can be checked against summary.json."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, value in enumerate(row):
            key = keys[i][j] if keys else None
            attributes = (f' data-key="{html.escape(key)}"' if key else "") + (' class="num"' if isinstance(value, (int, float)) else "")
            cells.append(f"<td{attributes}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _judged(f: dict) -> str:
    return f" (profile {f['profile']})" if f.get("profile") else ""


def _what(f: dict) -> str:
    """A failing case's label and, where they say more, the classes of its MMAs."""
    classes = [c for c in f.get("classes", []) if c != f["label"]]
    return ", ".join([f["label"] or "unlabelled", *classes])


def _replay_dir(s: dict) -> str:
    """Where the replay commands run: the directory the run was started in."""
    return s.get("replay_dir") or "the directory the run was started in"


def _html_skips(s: dict) -> str:
    if not skip_count(s):
        return "<p>No case was skipped.</p>"
    items = []
    for name, b in s["backends"].items():
        for group in b.get("skips", []):
            ids = group["case_ids"][:SKIPPED_IDS_SHOWN]
            more = f" and {group['count'] - len(ids)} more" if group["count"] > len(ids) else ""
            items.append(f'<li data-backend="{html.escape(name)}" data-count="{group["count"]}">{html.escape(name)}: '
                         f'{group["count"]} skipped: {html.escape(group["reason"])} '
                         f'({", ".join(f"<code>{html.escape(i)}</code>" for i in ids)}{html.escape(more)})</li>')
    return f"<ul>{''.join(items)}</ul>"


def _html_failure(f: dict, replay_dir: str) -> str:
    diff = f.get("diff")
    counts = f"; {diff['mismatched']} of {diff['words']} words differ" if diff else ""
    parts = [f'<div class="failure" data-case="{html.escape(f["case_id"])}" data-backend="{html.escape(f["backend"])}">',
             f"<h3><code>{html.escape(f['case_id'])}</code> {html.escape(f['status'])} on {html.escape(f['backend'])}"
             f"{html.escape(_judged(f))} <span class='note'>{html.escape(_what(f))}{counts}</span></h3>"]
    if _mismatches(f):
        parts.append(_html_table(MISMATCH_HEADERS, [mismatch_row(m) for m in _mismatches(f)]))
    else:
        parts.append(f"<p>{html.escape(f['detail'])}</p>")
    parts.append(f"<pre>replay (in {html.escape(replay_dir)}): {html.escape(f['replay'])}</pre></div>")
    return "".join(parts)


def html_page(s: dict) -> str:
    cov = s["coverage"]
    kind = "fail" if s["failures"] else "none" if (s.get("checked") or {}).get("nothing_compared") else "pass"
    banner = f'<div class="banner {kind}">{html.escape(headline(s))}</div>'
    checked = "".join(f"<li>{html.escape(line)}</li>" for line in checked_lines(s))
    facts = "".join(f'<dt>{html.escape(label)}</dt><dd data-key="{key}">{html.escape(value)}</dd>' for key, label, value in _facts(s))
    names = list(s["backends"])
    rows = _backend_rows(s) + [["all", *(sum(b[k] for b in s["backends"].values()) for k in BACKEND_FIELDS), "", "", ""]]
    keys = [[None, *(f"backends.{n}.{k}" for k in BACKEND_FIELDS), None, None, None] for n in names]
    keys.append([None, *(f"totals.{k}" for k in BACKEND_FIELDS), None, None, None])
    failures = "".join(_html_failure(f, _replay_dir(s)) for f in s["failures"][:FAILURES_SHOWN]) or "<p>No failures.</p>"
    if len(s["failures"]) > FAILURES_SHOWN:
        failures += f'<p class="note">... and {len(s["failures"]) - FAILURES_SHOWN} more in summary.json and junit.xml.</p>'
    maps = {name: (f'<div class="map"><h3>{html.escape(cov["heat_maps"][name]["title"])}</h3>'
                   f'{heat_map_svg(name, cov["heat_maps"][name])}</div>') for name in HEAT_MAP_ORDER}
    missed = f"<p class='note'>Options never exercised: {html.escape(', '.join(cov['options_missed']))}</p>" if cov["options_missed"] else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tcgen05-conformance run</title><style>{_CSS}</style></head><body>
<h1>tcgen05-conformance run</h1>
{banner}
<ul class="checked">{checked}</ul>
<dl class="facts">{facts}</dl>
<h2>Backends</h2>
{_html_table(_BACKEND_HEADERS, rows, keys)}
<h2>Skipped (<span data-key="totals.skipped">{skip_count(s)}</span>)</h2>
{_html_skips(s)}
<h2>Coverage heat maps</h2>
<p class="note">Each cell counts the cases (programs) exercising it; f/n: f of its n cases failed or errored on some
backend. Hover a cell for its row and column. The option, Hopper and data-movement maps follow the failures.</p>
{_legend_svg()}
{missed}
{maps["class"]}
<h2>Failures (<span data-key="failures">{len(s["failures"])}</span>)</h2>
{failures}
<h2>Coverage per option, Hopper instruction and data-movement form</h2>
<div class="maps">{"".join(maps[name] for name in HEAT_MAP_ORDER if name != "class")}</div>
{_value_section_html(s)}
</body></html>
"""


# --- JUnit XML --------------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    """Text with the characters XML 1.0 cannot hold (control characters, lone surrogates) replaced."""
    return _XML_INVALID.sub("\ufffd", text)


def junit(s: dict, results: dict) -> str:
    """JUnit XML: one testsuite per backend, one testcase per case; a failing or erroring case's
    message is its decoded first mismatch (or its detail), its body the first mismatches and the
    replay command."""
    failures = {(f["backend"], f["case_id"]): f for f in s["failures"]}
    t = s.get("totals") or {k: sum(b[k] for b in s["backends"].values()) for k in BACKEND_FIELDS}
    root = ET.Element("testsuites", name="tcgen05-conformance", tests=str(sum(len(c) for c in results.values())),
                      failures=str(t["failed"]), errors=str(t["errors"]), skipped=str(t["skipped"]), time=str(s["duration_s"]))
    for name, cases in results.items():
        b = s["backends"][name]
        suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(cases)), failures=str(b["failed"]),
                              errors=str(b["errors"]), skipped=str(b["skipped"]), time=str(b["duration_s"]))
        properties = ET.SubElement(suite, "properties")
        for key in ("seed", "reference", "profile", "command"):
            ET.SubElement(properties, "property", name=key, value=_xml_text(str(s.get(key))))
        ET.SubElement(properties, "property", name="role", value=_xml_text(str(b.get("role"))))
        for case in cases:
            testcase = ET.SubElement(suite, "testcase", classname=f"tcgen05.{name}", name=_xml_text(f"{case['label']}:{case['case_id']}"))
            if case.get("profile"):
                ET.SubElement(ET.SubElement(testcase, "properties"), "property", name="profile", value=case["profile"])
            if case["status"] == "skip":
                ET.SubElement(testcase, "skipped", message=_xml_text(case["detail"][:500]))
            elif case["status"] in ("fail", "error"):
                f = failures[name, case["case_id"]]
                body = [f["detail"], *(mismatch_line(m) for m in _mismatches(f)),
                        f"replay (in {_replay_dir(s)}): {f['replay']}"]
                element = ET.SubElement(testcase, "failure" if case["status"] == "fail" else "error",
                                        message=_xml_text(failure_message(f)[:1000]), type=case["status"])
                element.text = _xml_text("\n".join(body))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


REPORT_FILE_MODE = 0o666  # as open() creates a file: readable by all, less what the umask takes (0644 under 022)


def _umask() -> int:
    """The process's umask (read by setting it, then setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class ReportDirError(ValueError):
    """A report directory that cannot be used: one line saying which and why."""


class ReportDir:
    """A run's report directory, checked and taken before the run starts: created when needed
    (an existing file, or a path that cannot be created, is refused), locked against another run
    (an exclusive lock on the directory itself, released when this run ends or dies), and written
    only by atomic replacement (a temporary file beside the target, then `os.replace`: a reader
    sees the old file or the new, and a symlink in the directory is replaced, never followed). Its
    `cases` folder must lie inside it."""

    def __init__(self, path: str):
        self.path = path
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ReportDirError(f"report directory {_shown(path)} exists and is not a directory")
        try:
            os.makedirs(path, exist_ok=True)
            self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise ReportDirError(f"report directory {_shown(path)}: cannot create or open it ({e.strerror})") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise ReportDirError(f"report directory {_shown(path)} is in use by another run") from None
        problem = self._problem()
        if problem:
            self.close()
            raise ReportDirError(f"report directory {_shown(path)}: {problem}")

    def _problem(self) -> str | None:
        if not os.access(self.path, os.W_OK | os.X_OK):
            return "not writable"
        cases = os.path.join(self.path, CASES_DIR)
        if os.path.lexists(cases) and (os.path.islink(cases) or not os.path.isdir(cases)):
            return f"{CASES_DIR} is a link or not a directory (failing programs are written only inside the report directory)"
        return None

    def write(self, name: str, text: str) -> str:
        """Write `text` to `name` (relative, `cases/...` at most one level down) atomically; its path."""
        path = os.path.join(self.path, name)
        folder = os.path.dirname(path)
        if folder != self.path:
            os.makedirs(folder, exist_ok=True)
            if os.path.islink(folder):
                raise OSError(f"{folder} is a link")
        fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(name)}.", suffix=".tmp", dir=folder)
        try:
            os.fchmod(fd, REPORT_FILE_MODE & ~_umask())  # mkstemp's 0600 would keep the reports from their readers
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return path

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


CASES_DIR = "cases"


def _shown(path: str) -> str:
    return printable(str(path))


def report_files(s: dict, results: dict) -> dict[str, str]:
    """The four reports by file name: summary.json, report.md, report.html, junit.xml."""
    return {
        "summary.json": json.dumps(s, indent=1, sort_keys=True) + "\n",
        "report.md": markdown(s),
        "report.html": html_page(s),
        "junit.xml": junit(s, results),
    }


def write_reports(directory: str | ReportDir, s: dict, results: dict) -> list[str]:
    """Write summary.json, report.md, report.html and junit.xml (atomically, `ReportDir`); returns the paths."""
    folder = directory if isinstance(directory, ReportDir) else ReportDir(directory)
    try:
        return [folder.write(name, text) for name, text in report_files(s, results).items()]
    finally:
        if folder is not directory:
            folder.close()


# --- the probe report (`tcgen05-conformance probe`) -----------------------------------------------------

def probe_section_html(p: dict) -> str:
    """The probe section: a verdict per assumption, then each refuted program's decoded first
    mismatches and every program's readings with what each predicted."""
    rows = [[a, v["verdict"], v["detail"]] for a, v in p["assumptions"].items()]
    keys = [[None, f"assumptions.{a}.verdict", None] for a in p["assumptions"]]
    parts = ["<h2>Verdicts per assumption</h2>", _html_table(["assumption", "verdict", "why"], rows, keys)]
    refuted = [v for v in p["programs"] if v["verdict"] == "refuted"]
    if refuted:
        parts.append(f"<h2>Refuted programs (<span data-key=\"counts.refuted\">{len(refuted)}</span>)</h2>")
    for v in refuted:
        parts.append(f'<div class="failure" data-case="{html.escape(v["case_id"])}"><h3><code>{html.escape(v["name"])}</code> '
                     f'refuted <span class="note">{html.escape(v["detail"])}</span></h3>')
        if v.get("diff") and v["diff"]["first"]:
            parts.append(_html_table(MISMATCH_HEADERS, [mismatch_row(m) for m in v["diff"]["first"]]))
        parts.append("</div>")
    readings = [[v["name"], r["reading"], r["says"], r["predicted"], "yes" if r["reading"] in v["matched"] else ""]
                for v in p["programs"] for r in v["readings"]]
    parts += ["<h2>Readings and their predictions</h2>",
              '<p class="note">Each probe program\'s readings: the adopted one (the oracle\'s) and the alternatives; '
              "\"seen\" marks the alternatives whose prediction matches what the backend observed.</p>",
              _html_table(["program", "reading", "says", "predicts", "seen"], readings)]
    return "".join(parts)


def probe_page(p: dict) -> str:
    """probe.html: the facts of the probe run, a banner, and `probe_section_html`."""
    counts = p["counts"]
    kind = "fail" if counts["refuted"] else "pass"
    banner = (f'<div class="banner {kind}">{counts["refuted"]} refuted, {counts["confirmed"]} confirmed, '
              f'{counts["not runnable here"]} not runnable here</div>')
    source = p.get("source") or {}
    facts = [("command", "command", p.get("command", "")), ("machine", "machine", p.get("machine", "")),
             ("backend", "backend", p["backend"]), ("unavailable", "backend unavailable", p.get("unavailable") or "no"),
             ("source", "source revision", source.get("commit", "unknown")[:12]), ("finished_utc", "finished (UTC)", p["finished_utc"])]
    dl = "".join(f'<dt>{html.escape(label)}</dt><dd data-key="{key}">{html.escape(str(value))}</dd>' for key, label, value in facts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tcgen05-conformance probe</title><style>{_CSS}</style></head><body>
<h1>tcgen05-conformance probe</h1>
{banner}
<dl class="facts">{dl}</dl>
{probe_section_html(p)}
</body></html>
"""
