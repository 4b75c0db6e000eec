"""`lint --format sarif`: the report as SARIF 2.1.0 (OASIS Static Analysis Results Interchange
Format), the log code-scanning services read. Each broken rule of an illegal instruction is a
result of level "error"; an unparsed instruction one of level "warning" (rule `lint.unparsed`);
a file that could not be read a tool execution notification. Rule ids are the legality rules'
(docs/legality-rules.md), with their ISA reference as the rule's help text.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from tcgen05_conformance.core.legality import RULES

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
VERSION = "2.1.0"
UNPARSED = "lint.unparsed"
TOOL = "tcgen05-conformance lint"


def _uri(path: str) -> str:
    """A file's artifact URI: relative paths as written (with `/`), absolute ones as file URIs."""
    path = path.replace(os.sep, "/")
    return ("file://" if path.startswith("/") else "") + quote(path, safe="/:._-~")


def _location(record: dict) -> list[dict]:
    return [{"physicalLocation": {"artifactLocation": {"uri": _uri(record["file"])},
                                  "region": {"startLine": max(1, record["line"])}}}]


def sarif(report: dict, version: str) -> dict:
    """The SARIF log of one lint report; `version` the tool's version."""
    results, used = [], {}
    for r in report["instructions"]:
        if r["verdict"] == "illegal":
            for rule in r["rules"]:
                if rule["status"] != "broken":
                    continue
                used[rule["id"]] = rule["reference"]
                results.append({"ruleId": rule["id"], "level": "error", "locations": _location(r),
                                "message": {"text": f"{rule['message']} ({rule['reference']}; target {r['arch']}): "
                                                    f"{r['text']}"}})
        elif r["verdict"] == "unparsed":
            used[UNPARSED] = None
            results.append({"ruleId": UNPARSED, "level": "warning", "locations": _location(r),
                            "message": {"text": f"not understood: {r['why']}: {r['text']}"}})
    rules = []
    for rule_id in sorted(used):
        if rule_id == UNPARSED:
            rules.append({"id": UNPARSED, "shortDescription": {"text": "a tensor-core instruction lint could not read "
                                                                        "into the model; no verdict"}})
            continue
        rule = RULES[rule_id]
        rules.append({"id": rule_id, "shortDescription": {"text": rule.statement},
                      "help": {"text": f"{rule.reference}; noticed by the {rule.checked_by}"},
                      "properties": {"checked_by": rule.checked_by}})
    notifications = [{"level": "error", "message": {"text": e["problem"]},
                      "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e["file"])}}}]}
                     for e in report["errors"]]
    invocation = {"executionSuccessful": not report["errors"], "toolExecutionNotifications": notifications}
    if report.get("command"):
        invocation["commandLine"] = report["command"]
    return {"$schema": SCHEMA, "version": VERSION, "runs": [{
        "tool": {"driver": {"name": TOOL, "version": version, "informationUri": "docs/lint.md", "rules": rules}},
        "invocations": [invocation], "results": results,
    }]}
