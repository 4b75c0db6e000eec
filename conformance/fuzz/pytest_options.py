"""The pytest plugin's options, drawn by Hypothesis, in a pytest session of their own (an empty
project, run in this process): backends and references that exist or not (a `sim:` command that
is missing, a factory that cannot load, `ptxas` as the reference, `blackwell` without its GPU,
the misbehaving plugin of `tcgen05_conformance.fuzz.plugin_agent`), example counts, seeds,
timeouts and profiles in and out of range. A session must end as `run` would: a usage error on one
line (pytest's 4), or its cases run and judged (0, 1, or 5 when the backend skipped every case);
never an internal error, never 0 for a misbehaving plugin or a backend that ran nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import strategies as st

from tcgen05_conformance.fuzz.command_calls import Wrong
from tcgen05_conformance.fuzz.plugin_agent import OBSERVE, SCRIPT_ENV

ACCEPTED, REFUSED = "accepted", "refused"
AGENT = "tcgen05_conformance.fuzz.plugin_agent:make"
SPECS = ("oracle", "oracle", "ptxas", "blackwell", "hopper", "nope", "sim:/no/such/simulator", "os:sep", "builtins:dict",
         "tcgen05_conformance.fuzz.plugin_agent:Nope", AGENT, AGENT, "", "sim:")
NUMBERS = ("0", "1", "2", "-1", "1e3", "x", "", "99999999999999999999", "nan", "inf", "0.5", "86401", "4294967296")
EXAMPLES = ("1", "2", "0", "-1", "1e3", "x", "", "99999999999999999999", "1000001", "2.5")  # none this fuzzer must run long


def inputs() -> st.SearchStrategy[dict]:
    """Options of one session (each left out, or given a value; the example count always, since
    the default, 200, would make every accepted session a long one), and what the plugin agent does."""
    return st.fixed_dictionaries(
        {"--tcgen05-backend": st.sampled_from(SPECS), "--tcgen05-examples": st.sampled_from(("1", "2") * 4 + EXAMPLES)},
        optional={"--tcgen05-reference": st.sampled_from(SPECS),
                  "--tcgen05-seed": st.sampled_from(("0", "1", "7") * 3 + NUMBERS),
                  "--tcgen05-timeout": st.sampled_from(("30",) * 4 + NUMBERS),
                  "--tcgen05-profile": st.sampled_from(("exact", "sm_90a", "sm_99z", "missing.json", "")),
                  "--tcgen05-in-process": st.just(None), "observe": st.sampled_from(OBSERVE)})


def session_outcome(options: dict, work: Path) -> tuple[str, str]:
    """(ACCEPTED or REFUSED, what happened) for one pytest session with `options`."""
    work.mkdir(parents=True, exist_ok=True)
    observe = options.get("observe", "ok")
    if observe == "os_exit" and "--tcgen05-in-process" in options:
        observe = "exit"  # in process it would end the fuzzer, as documented
    argv = [str(work), "-q", "-p", "no:cacheprovider"]
    for option, value in options.items():
        if option.startswith("--"):
            argv += [option] if value is None else [option, value]
    out, err = io.StringIO(), io.StringIO()
    os.environ[SCRIPT_ENV] = json.dumps({"observe": observe})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = pytest.main(argv, plugins=[])
    finally:
        del os.environ[SCRIPT_ENV]
    text = out.getvalue() + err.getvalue()
    if "INTERNALERROR" in text or status == pytest.ExitCode.INTERNAL_ERROR:
        raise AssertionError(f"INTERNALERROR: {text.strip()[-300:]}")
    if status == pytest.ExitCode.USAGE_ERROR:
        errors = [line for line in text.splitlines() if line.startswith("ERROR") or ": error:" in line]
        if not errors:
            raise Wrong(f"usage error without an error line: {text.strip()[-200:]}")
        return REFUSED, " ".join(w for w in errors[0].split() if not any(c.isdigit() for c in w))[:70]
    backend = options["--tcgen05-backend"]
    misbehaving = backend == AGENT and observe not in ("ok", "data_keys")
    if status == pytest.ExitCode.OK and (misbehaving or backend in ("blackwell", "hopper")):
        raise Wrong(f"exit 0 for {backend} ({observe}): {text.strip()[-200:]}")
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise Wrong(f"exit {int(status)}: {text.strip()[-200:]}")
    return ACCEPTED, f"exit {int(status)}"

