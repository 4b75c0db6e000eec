"""Plugin backends that misbehave, drawn by Hypothesis, through `run`: a script for
`tcgen05_conformance.fuzz.plugin_agent` (what its factory, name, `observes`, `unavailable_reason`
and `observe` do), the plugin as the backend under test or as the reference, isolated (the
default) or `--in-process`. Whatever the plugin does, `run` must exit 1 with its reports written
when it misbehaved, 5 when it skipped every case, 0 (every case passed) only when it behaved, or 2
on one line when the options make no run; never a traceback, and never a control character of the
plugin's on the console."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from hypothesis import strategies as st

from tcgen05_conformance.fuzz.command_calls import Main, Wrong, call, no_control_characters, refusal, summary_of
from tcgen05_conformance.fuzz.plugin_agent import FACTORY, OBSERVE, REASON, SCRIPT_ENV

AGENT = "tcgen05_conformance.fuzz.plugin_agent:make"
REFERENCE = "oracle"
ACCEPTED, REFUSED = "accepted", "refused"
BENIGN_OBSERVE = ("ok", "data_keys")  # int keys become strings in JSON: carried, not wrong
SKIPPING = ("text", "hostile")


def scripts() -> st.SearchStrategy[dict]:
    """What the plugin does, where it runs, and its role in the run."""
    return st.fixed_dictionaries(
        {"factory": st.sampled_from(("ok",) * 6 + FACTORY), "observe": st.sampled_from(("ok",) * 4 + OBSERVE),
         "reason": st.sampled_from(("none",) * 6 + REASON), "role": st.sampled_from(("backend", "reference")),
         "isolated": st.sampled_from((False,) * 5 + (True,)), "examples": st.integers(1, 3)},
        optional={"name": st.one_of(st.integers(), st.just(""), st.text(max_size=6), st.none()),
                  "observes": st.sampled_from(("state", "assembly", 3, None)), "code": st.integers(-3, 300)})


def expected(script: dict) -> str:
    """What the run must make of the script: `error` (its cases errors), `skip` or `pass`."""
    if script["factory"] != "ok" or ("name" in script and not (isinstance(script["name"], str) and script["name"])):
        return "error"
    if script.get("observes", "state") not in ("state", "assembly"):
        return "error"
    if script["reason"] in ("raise", "exit", "number"):
        return "error"
    if script["reason"] in SKIPPING:
        return "skip"
    return "pass" if script["observe"] in BENIGN_OBSERVE and script.get("observes", "state") == "state" else "error"


def plugin_outcome(main: Main, script: dict, work: Path) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what happened) for one script; Wrong or another exception when the
    run's exit status or reports contradict what the plugin did."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    isolated = script["isolated"] or "os_exit" in (script["factory"], script["observe"])  # in process it ends the fuzzer
    roles = ["--backend", AGENT, "--reference", REFERENCE] if script["role"] == "backend" else ["--backend", REFERENCE,
                                                                                                 "--reference", AGENT]
    argv = ["run", "--count", str(script["examples"]), "--out", str(out), *roles, *([] if isolated else ["--in-process"])]
    os.environ[SCRIPT_ENV] = json.dumps(script)
    try:
        called = call(main, argv)
    finally:
        del os.environ[SCRIPT_ENV]
    no_control_characters(called)
    if called.status == 2:
        return REFUSED, refusal(called)
    if called.status not in (0, 1, 5):
        raise AssertionError(f"exit {called.status}: {called.err.strip()[-300:]}")
    summary, want = summary_of(str(out)), expected(script)
    plugin = summary["backends"][AGENT]
    if called.status == 0 and (want != "pass" or plugin["passed"] != summary["cases"]):
        raise Wrong(f"exit 0 for a plugin whose cases should be {want}: {plugin}")
    if called.status == 1 and (want == "pass" or not summary["failures"]):
        raise Wrong(f"exit 1 for a plugin whose cases should be {want}, failures {len(summary['failures'])}")
    if called.status == 5 and want != "skip":
        raise Wrong(f"exit 5 (nothing compared) for a plugin whose cases should be {want}")
    where = "isolated" if isolated else "in process"
    return ACCEPTED, f"exit {called.status} ({want}, {script['role']}, {where})"
