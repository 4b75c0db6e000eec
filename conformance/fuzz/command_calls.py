"""One command of the command line called in this process, as a user would call it, with what it
printed and its exit status kept, for the harness surfaces `fuzz --harness` fuzzes. The command
line sits a floor above the fuzz tools, so its `main` is handed in by the caller
(`tcgen05_conformance.cli.fuzz`), never imported here.

`Wrong` is the fifth way an input can end, beside accepted, refused, traceback and hang: the
command exited as if nothing were amiss (0), or with the wrong status, while its reports are
missing or say something that did not happen."""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass
from typing import Callable, Sequence

Main = Callable[[list[str]], int]
EXIT_USAGE, EXIT_INTERNAL = 2, 3


class Wrong(Exception):
    """A command whose exit status or reports contradict what it was given (one line: why)."""


@dataclass
class Called:
    """What one command printed and how it exited."""

    status: int
    out: str
    err: str


def call(main: Main, argv: Sequence[str]) -> Called:
    """`main(argv)` with its stdout and stderr captured; a usage error argparse raises is its status."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as e:  # argparse refuses while parsing
            status = e.code if isinstance(e.code, int) else EXIT_USAGE
    return Called(status, out.getvalue(), err.getvalue())


def refusal(called: Called) -> str:
    """The one line an input error (exit status 2) says, without the deprecation notes; Wrong when
    it is not one line, or the status is an internal error's. The reason, values left out, is kept
    short for counting."""
    if called.status == EXIT_INTERNAL:
        raise AssertionError(f"internal error: {called.err.strip()[-300:]}")
    lines = [line for line in called.err.splitlines() if "deprecated" not in line and line.strip()]
    errors = [line for line in lines if "error" in line]
    if len(errors) != 1:
        raise Wrong(f"exit {called.status} without one error line: {lines[-3:]!r}")
    reason = errors[0].split(": error: ", 1)[-1]
    return " ".join(w for w in reason.split() if not any(c.isdigit() for c in w) and "/" not in w)[:70]


def no_control_characters(called: Called) -> None:
    """Wrong when the console output holds a control character other than a newline (a backend's
    terminal escape obeyed instead of shown)."""
    for text in (called.out, called.err):
        bad = [c for c in text if (ord(c) < 32 and c != "\n") or ord(c) == 127]
        if bad:
            raise Wrong(f"control character {bad[0]!r} on the console")


def summary_of(folder: str) -> dict:
    """The summary.json a command wrote in `folder`; Wrong when there is none."""
    path = os.path.join(folder, "summary.json")
    if not os.path.isfile(path):
        raise Wrong(f"no {path}")
    with open(path, encoding="utf-8") as f:
        return json.load(f)
