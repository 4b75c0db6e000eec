"""Reading what comes from outside (program files, journals, answers): bounded in size and in
JSON nesting, with every message on one line.

Python's `json` recurses once per nesting level, so `'[' * 100000` ends in a RecursionError; the
depth is therefore measured before parsing, and a text nested deeper than `MAX_JSON_DEPTH` is
refused without recursing into it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

MAX_JSON_DEPTH = 64  # programs nest 4 levels deep, journal records and case files 6
MAX_QUOTED = 60  # characters of a value quoted in a message
# Bounds of the counts of programs and the seeds a user may ask for (command line, pytest plugin).
MAX_EXAMPLES = 1_000_000
MAX_SEED = 2**32 - 1
MAX_TIMEOUT_S = 86_400.0  # a watchdog of a day at most


class InputError(ValueError):
    """Input that cannot be read as what it should be: a one-line message saying where and why."""


def printable(text: str) -> str:
    """`text` with each non-printable character (newline, escape, line separator ...) written
    as its Python escape, so that a message quoting it stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def quoted(value: Any) -> str:
    """A JSON value as a message quotes it: JSON text, one line, cut at `MAX_QUOTED` characters."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):  # not JSON-able, or nested too deeply for json.dumps
        text = type(value).__name__
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + "..."


# A JSON string: a quote, then characters other than quote and backslash or escapes, a quote.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line} column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def parse_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in `text`; InputError (one line, with the position) if it is not JSON or
    nests arrays and objects more than `max_depth` deep."""
    blanked = _STRING.sub(lambda m: " " * len(m.group()), text)  # brackets inside strings do not nest
    depth = 0
    for m in _BRACKET.finditer(blanked):
        depth += 1 if m.group() in "[{" else -1
        if depth > max_depth:
            raise InputError(f"not accepted: JSON nested more than {max_depth} levels deep "
                             f"(at {_position(text, m.start())})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:  # an integer of more than 4300 digits ("...; use sys.set_int_max_str_digits()")
        raise InputError(f"not accepted: {printable(str(e)).split(';')[0]}") from None


def read_file(path: str, max_bytes: int, name: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes`; InputError naming the file
    (as `name`, by default its path) if it is missing, not a regular file (a directory, a FIFO, a
    device: reading one could block or never end), unreadable or larger."""
    name = printable(str(path if name is None else name))
    try:
        kind = os.stat(path).st_mode
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror})") from None
    if not stat.S_ISREG(kind):
        raise InputError(f"{name}: not a regular file ({file_kind(kind)})")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror})") from None
    if len(data) > max_bytes:
        raise InputError(f"{name}: larger than {max_bytes} bytes")
    return data


def read_text(path: str, max_bytes: int) -> str:
    """`read_file` decoded as UTF-8; InputError naming the file and the byte that is not UTF-8."""
    data = read_file(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{printable(str(path))}: byte {e.start} ({data[e.start]:#04x}) is not UTF-8") from None


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is (its `st_mode`), for a one-line refusal."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"
