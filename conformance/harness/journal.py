"""An append-only journal of case results, so that a killed run resumes without losing or
repeating cases.

JSON lines: a header naming the run's parameters (seed, examples, backends, profile) and a random
key, then one record per case result, keyed by (backend, case id), each with its `check`: the
SHA-256 of the header line and the record, so that a record edited (a pass made a fail), moved
from another journal or forged is refused on one line instead of reported as a verdict that never
happened. Every line is written whole, flushed and fsynced before `record` returns; a write that
fails (a full disk) ends the journaling, not the run: `error` names it, and the run's reports are
written all the same. Only a regular file is a journal (a device, a FIFO or a directory is refused
on one line), read at most `MAX_BYTES`. A kill can only cut the last line short: a line without its
newline is incomplete by definition, and opening drops it (its case runs again). Resuming a
journal written by a run with other parameters is refused, since its case ids would belong to
other programs. An exclusive lock keeps two runs from appending to one journal at once; the
operating system releases it when a run dies.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import stat
from typing import Any, BinaryIO

from tcgen05_conformance.core.inputs import InputError, file_kind, parse_json, printable, quoted
from tcgen05_conformance.harness.judge import ERROR, FAIL, PASS, SKIP, CaseResult

SCHEMA = "tcgen05-conformance/journal/2"
OLD_SCHEMAS = ("tcgen05-conformance/journal/1",)  # records without a check: not resumed
STATUSES = (PASS, FAIL, ERROR, SKIP)
MAX_BYTES = 1 << 31  # a million cases of a few backends each, well below
_HEADER_START = json.dumps({"journal": SCHEMA}, separators=(",", ":"))[:-1].encode()  # what a cut header begins with


class JournalError(ValueError):
    """An unusable journal: the message says which file and why, on one line."""


class Journal:
    """Open with `Journal.open(path, params)`; `done(backend)` is what it holds, `record` adds."""

    def __init__(self, path: str, file: BinaryIO, results: dict[str, dict[str, CaseResult]], tie: bytes):
        self.path, self._file, self._results, self._tie = path, file, results, tie
        self.error: str | None = None  # why records are no longer written (a full disk), once one could not be

    @classmethod
    def open(cls, path: str, params: dict[str, Any]) -> Journal:
        """The journal at `path`, created with `params` as its header if it does not exist or holds
        no complete line; JournalError if it was written with other params or is not a journal."""
        params = json.loads(json.dumps(params))  # as read back: tuples become lists
        try:
            kind = os.stat(path).st_mode
        except OSError:
            kind = None  # none yet: created below
        if kind is not None and not stat.S_ISREG(kind):  # a device or a FIFO could block or never end
            raise JournalError(f"journal {_name(path)}: not a regular file ({file_kind(kind)})")
        try:
            file = open(path, "a+b")
        except OSError as e:
            raise JournalError(f"journal {_name(path)}: cannot open ({e.strerror})") from None
        try:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalError(f"journal {_name(path)} is in use by another run") from None
            file.seek(0)
            data = file.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                raise JournalError(f"journal {_name(path)}: larger than {MAX_BYTES} bytes")
            complete = data.rfind(b"\n") + 1
            lines = data[:complete].splitlines()
            if not lines and not (_HEADER_START.startswith(data) or data.startswith(_HEADER_START)):
                raise JournalError(f"journal {_name(path)}: not a {SCHEMA} file")
            header = lines[0] if lines else _line({"journal": SCHEMA, "run": params, "key": secrets.token_hex(16)})
            results = _check(path, lines, params) if lines else {}
            file.truncate(complete)
            journal = cls(path, file, results, _tie(header))
            if not lines:
                journal._write(header)
        except OSError as e:
            file.close()
            raise JournalError(f"journal {_name(path)}: cannot read or write it ({e.strerror or e})") from None
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
        """Append `result` durably, with its check; a (backend, case id) already journaled is not
        written again (one case id is one program, so its result is the same). A write that fails
        sets `error` and ends the journaling (the run goes on; a resume runs the rest again)."""
        if self.error is not None or result.case_id in self._results.setdefault(backend, {}):
            return
        record = {"backend": backend, "case_id": result.case_id, "status": result.status, "detail": result.detail,
                  "data": result.data}
        try:
            self._write(_line({**record, "check": _check_of(self._tie, record)}))
        except OSError as e:
            self.error = (f"journal {_name(self.path)}: cannot write ({printable(e.strerror or str(e))}) after "
                          f"{self.count()} records: the rest of the run was not journaled (a resume runs it again)")
            return
        self._results[backend][result.case_id] = result

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, line: bytes) -> None:
        self._file.write(line + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def _line(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _tie(header: bytes) -> bytes:
    """What ties a journal's records to its header (its run and random key): the header's digest."""
    return hashlib.sha256(header).digest()


def _check_of(tie: bytes, record: dict) -> str:
    """A record's check: SHA-256 of its journal's tie and its fields in a canonical form, in hex."""
    canonical = json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(tie + canonical.encode()).hexdigest()


def _check(path: str, lines: list[bytes], params: dict[str, Any]) -> dict[str, dict[str, CaseResult]]:
    """The records of a journal's complete lines, after checking its header against `params`."""
    try:
        header = _parse(path, 1, lines[0])
    except JournalError:
        header = {}
    if header.get("journal") in OLD_SCHEMAS:
        raise JournalError(f"journal {_name(path)}: written by an older version ({header['journal']}), whose records carry "
                           "no check: start a new journal")
    if header.get("journal") != SCHEMA or not isinstance(header.get("run"), dict) or not isinstance(header.get("key"), str):
        raise JournalError(f"journal {_name(path)}: not a {SCHEMA} file")
    recorded = header["run"]
    if recorded != params:
        keys = [k for k in sorted(recorded.keys() | params.keys()) if recorded.get(k) != params.get(k)]
        then = ", ".join(f"{printable(k)} {quoted(recorded.get(k))}" for k in keys)
        now = ", ".join(f"{k} {params.get(k)!r}" for k in keys)
        raise JournalError(f"journal {_name(path)} was written by a run with {then}, this run has {now}: refusing to resume")
    results: dict[str, dict[str, CaseResult]] = {}
    tie = _tie(lines[0])
    for n, line in enumerate(lines[1:], 2):
        backend, result = _record(path, n, _parse(path, n, line), tie)
        results.setdefault(backend, {}).setdefault(result.case_id, result)
    return results


#: A case record's fields and their JSON types, as `Journal.record` writes them.
RECORD_FIELDS = {"backend": str, "case_id": str, "status": str, "detail": str, "data": dict, "check": str}


def _record(path: str, n: int, r: dict, tie: bytes) -> tuple[str, CaseResult]:
    """(backend, result) of line `n`; JournalError unless it is a record `Journal.record` wrote
    after the journal's header: its fields, their types, a status a backend reports, its check."""
    if r.keys() != RECORD_FIELDS.keys() or any(not isinstance(r[k], t) for k, t in RECORD_FIELDS.items()):
        raise JournalError(f"journal {_name(path)}: line {n} is not a case record")
    if r["status"] not in STATUSES:
        raise JournalError(f"journal {_name(path)}: line {n} has status {quoted(r['status'])}, "
                           f"not one of {', '.join(STATUSES)}")
    record = {k: v for k, v in r.items() if k != "check"}
    if r["check"] != _check_of(tie, record):
        raise JournalError(f"journal {_name(path)}: line {n} fails its check (a record edited, or not written by this "
                           "journal's run): refusing to resume")
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

