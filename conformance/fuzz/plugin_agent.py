"""The plugin backend `fuzz --harness` puts through `run` (`tcgen05_conformance.fuzz.plugin_agent:make`):
what it does, right or wrong, is a script in $TCGEN05_FUZZ_PLUGIN (JSON) that
`tcgen05_conformance.fuzz.plugins` draws. Its factory, `name`, `observes`, `unavailable_reason`
and `observe` each follow their part of the script; answered right, a case's state is the oracle's
(so a well-behaved script passes every case)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Sequence

import numpy as np

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation

SCRIPT_ENV = "TCGEN05_FUZZ_PLUGIN"
HOSTILE_TEXT = "\x1b[2J\x1b]0;title\x07<script>alert(1)</script>|`\r\nnext"
# what the factory may do, and what observe may answer or do, besides "ok"
FACTORY = ("ok", "raise", "exit", "os_exit", "class", "none", "object", "type_error")
OBSERVE = ("ok", "none", "short", "long", "ids", "reversed", "dicts", "data_nan", "data_object", "data_deep", "data_keys",
           "state_text", "state_floats", "two_answers", "error_text", "skip_number", "raise", "exit", "exit_code",
           "base_exception", "os_exit", "generator")
REASON = ("none", "text", "hostile", "raise", "exit", "number", "empty")


def _script() -> dict:
    return json.loads(os.environ.get(SCRIPT_ENV) or "{}")


def make(profile: str | None = None) -> Any:
    """The factory: a backend, or whatever the script's `factory` says to do instead."""
    script = _script()
    how = script.get("factory", "ok")
    if how == "raise":
        raise RuntimeError("fuzz: the factory raised")
    if how == "exit":
        sys.exit(script.get("code", 0))
    if how == "os_exit":
        os._exit(script.get("code", 0))
    if how == "class":
        return Agent
    if how == "none":
        return None
    if how == "object":
        return object()
    if how == "type_error":
        return Agent(script, profile, unexpected=1)
    return Agent(script, profile)


class Agent:
    """A backend whose every member follows the script."""

    def __init__(self, script: dict, profile: str | None = None, *_: Any):
        self.script, self.profile = script, profile
        self.name = script.get("name", "fuzz-agent")
        if "observes" in script:
            self.observes = script["observes"]

    def unavailable_reason(self) -> Any:
        how = self.script.get("reason", "none")
        if how == "raise":
            raise ValueError("fuzz: unavailable_reason raised")
        if how == "exit":
            sys.exit(0)
        return {"none": None, "text": "fuzz: not here", "hostile": HOSTILE_TEXT, "number": 7, "empty": ""}[how]

    def observe(self, programs: Sequence[Program], progress: Callable[[int], None] | None = None) -> Any:
        how = self.script.get("observe", "ok")
        if how in ("raise", "exit", "exit_code", "base_exception", "os_exit"):
            if how == "raise":
                raise KeyError("fuzz")
            if how == "base_exception":
                raise BaseException("fuzz")
            if how == "os_exit":
                os._exit(0)
            sys.exit(0 if how == "exit" else "fuzz: exit with a message")
        good = [Observation(p.case_id, state=_state(p, self.profile)) for p in programs]
        if progress:
            progress(len(good))
        return _answer(how, good)


def _state(p: Program, profile: str | None):
    from tcgen05_conformance.oracles.execute import run

    return run(p, profile)


def _answer(how: str, good: list[Observation]) -> Any:
    """The answer `how` names, made from the right one."""
    first = good[0]
    changed: dict[str, Callable[[], Any]] = {
        "none": lambda: None,
        "short": lambda: good[:-1],
        "long": lambda: good + good[:1],
        "ids": lambda: [Observation("0" * 16, state=o.state) for o in good],
        "reversed": lambda: good[::-1] if len(good) > 1 else [Observation("f" * 16, state=first.state)],
        "dicts": lambda: [{"case_id": o.case_id} for o in good],
        "data_nan": lambda: [Observation(o.case_id, state=o.state, data={"x": float("nan")}) for o in good],
        "data_object": lambda: [Observation(o.case_id, state=o.state, data={"x": object()}) for o in good],
        "data_deep": lambda: [Observation(o.case_id, state=o.state, data={"x": _deep(200)}) for o in good],
        "data_keys": lambda: [Observation(o.case_id, state=o.state, data={1: "x"}) for o in good],
        "state_text": lambda: [Observation(o.case_id, state="state") for o in good],
        "state_floats": lambda: [_floats(o) for o in good],
        "two_answers": lambda: [_two(o) for o in good],
        "error_text": lambda: [Observation(o.case_id, error=HOSTILE_TEXT) for o in good],
        "skip_number": lambda: [_skip_number(o) for o in good],
        "generator": lambda: (o for o in good),
    }
    return changed[how]() if how in changed else good


def _deep(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


def _floats(o: Observation) -> Observation:
    o.state.tmem = o.state.tmem.astype(np.float32)
    return o


def _two(o: Observation) -> Observation:
    o.error = "and an error"
    return o


def _skip_number(o: Observation) -> Observation:
    o.state, o.skip = None, 7
    return o
