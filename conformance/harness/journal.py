"""An append-only journal of case results, so that a killed run resumes without losing or
repeating cases.

JSON lines: a header naming the run's parameters (seed, examples, backends, profile), then one
record per case result, keyed by (backend, case id). Every line is written whole, flushed and
fsynced before `record` returns. A kill can only cut the last line short: a line without its
newline is incomplete by definition, and opening drops it (its case runs again). Resuming a
journal written by a run with other parameters is refused, since its case ids would belong to
other programs. An exclusive lock keeps two runs from appending to one journal at once; the
operating system releases it when a run dies.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import Any, BinaryIO

from tcgen05_conformance.core.inputs import InputError, parse_json, printable, quoted
from tcgen05_conformance.harness.judge import ERROR, FAIL, PASS, SKIP, CaseResult

SCHEMA = "tcgen05-conformance/journal/1"
STATUSES = (PASS, FAIL, ERROR, SKIP)
_HEADER_START = json.dumps({"journal": SCHEMA}, separators=(",", ":"))[:-1].encode()  # what a cut header begins with


class JournalError(ValueError):
    """An unusable journal: the message says which file and why, on one line."""


class Journal:
    """Open with `Journal.open(path, params)`; `done(backend)` is what it holds, `record` adds."""

    def __init__(self, path: str, file: BinaryIO, results: dict[str, dict[str, CaseResult]]):
        self.path, self._file, self._results = path, file, results

    @classmethod
    def open(cls, path: str, params: dict[str, Any]) -> Journal:
        """The journal at `path`, created with `params` as its header if it does not exist or holds
        no complete line; JournalError if it was written with other params or is not a journal."""
        params = json.loads(json.dumps(params))  # as read back: tuples become lists
        try:
            file = open(path, "a+b")
        except OSError as e:
            raise JournalError(f"journal {_name(path)}: cannot open ({e.strerror})") from None
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            raise JournalError(f"journal {_name(path)} is in use by another run") from None
        try:
            file.seek(0)
            data = file.read()
            complete = data.rfind(b"\n") + 1
            lines = data[:complete].splitlines()
            if not lines and not (_HEADER_START.startswith(data) or data.startswith(_HEADER_START)):
                raise JournalError(f"journal {_name(path)}: not a {SCHEMA} file")
            results = _check(path, lines, params) if lines else {}
            file.truncate(complete)
            journal = cls(path, file, results)
            if not lines:
                journal._append({"journal": SCHEMA, "run": params})
        except BaseException:
            file.close()
            raise
        return journal

    def done(self, backend: str) -> dict[str, CaseResult]:
        """The results journaled for `backend`, by case id."""
        return dict(self._results.get(backend, {}))

    def count(self) -> int:
        """How many results it holds, all backends together."""
        return sum(len(r) for r in self._results.values())

    def record(self, backend: str, result: CaseResult) -> None:
        """Append `result` durably; a (backend, case id) already journaled is not written again
        (one case id is one program, so its result is the same)."""
        if result.case_id in self._results.setdefault(backend, {}):
            return
        self._append({"backend": backend, "case_id": result.case_id, "status": result.status,
                      "detail": result.detail, "data": result.data})
        self._results[backend][result.case_id] = result

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, obj: dict) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def _check(path: str, lines: list[bytes], params: dict[str, Any]) -> dict[str, dict[str, CaseResult]]:
    """The records of a journal's complete lines, after checking its header against `params`."""
    try:
        header = _parse(path, 1, lines[0])
    except JournalError:
        header = {}
    if header.get("journal") != SCHEMA or not isinstance(header.get("run"), dict):
        raise JournalError(f"journal {_name(path)}: not a {SCHEMA} file")
    recorded = header["run"]
    if recorded != params:
        keys = [k for k in sorted(recorded.keys() | params.keys()) if recorded.get(k) != params.get(k)]
        then = ", ".join(f"{printable(k)} {quoted(recorded.get(k))}" for k in keys)
        now = ", ".join(f"{k} {params.get(k)!r}" for k in keys)
        raise JournalError(f"journal {_name(path)} was written by a run with {then}, this run has {now}: refusing to resume")
    results: dict[str, dict[str, CaseResult]] = {}
    for n, line in enumerate(lines[1:], 2):
        backend, result = _record(path, n, _parse(path, n, line))
        results.setdefault(backend, {}).setdefault(result.case_id, result)
    return results


#: A case record's fields and their JSON types, as `Journal.record` writes them.
RECORD_FIELDS = {"backend": str, "case_id": str, "status": str, "detail": str, "data": dict}


def _record(path: str, n: int, r: dict) -> tuple[str, CaseResult]:
    """(backend, result) of line `n`; JournalError unless it is a record `Journal.record` could
    have written (its fields, their types, a status a backend reports)."""
    if r.keys() != RECORD_FIELDS.keys() or any(not isinstance(r[k], t) for k, t in RECORD_FIELDS.items()):
        raise JournalError(f"journal {_name(path)}: line {n} is not a case record")
    if r["status"] not in STATUSES:
        raise JournalError(f"journal {_name(path)}: line {n} has status {quoted(r['status'])}, "
                           f"not one of {', '.join(STATUSES)}")
    return r["backend"], CaseResult(r["case_id"], r["status"], r["detail"], r["data"])


def _parse(path: str, n: int, line: bytes) -> dict:
    try:
        obj = parse_json(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise JournalError(f"journal {_name(path)}: line {n} is not UTF-8") from None
    except InputError as e:
        raise JournalError(f"journal {_name(path)}: line {n} is {e}") from None
    if not isinstance(obj, dict):
        raise JournalError(f"journal {_name(path)}: line {n} is not a JSON object")
    return obj


def _name(path: str) -> str:
    return printable(str(path))
