"""Assembled kernels kept on disk across runs, keyed by content: a campaign draws thousands of
kernel forms, and assembling one takes nvJitLink 25-100 ms of CPU, so a later run (another seed,
another machine sharing the folder) links only the forms it has not met before.

The key is the SHA-256 of the assembler's version, the target architecture and the PTX text, so
a new nvJitLink or a changed kernel generator never meets a stale cubin. Each cubin is a file
`<key[:2]>/<key>.cubin`, written to a temporary name and renamed, so processes sharing the folder
never read half a file (two that miss the same key at once both assemble it; the second rename
wins with the same bytes). A hit refreshes the file's modification time; `trim` deletes the
least recently used files until the folder holds at most its limit.

The folder is `$TCGEN05_CACHE` when set, else `~/.cache/tcgen05-conformance/kernels`.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from tcgen05_conformance.device.assembler import assembler_version, cubin

CACHE_ENV = "TCGEN05_CACHE"
DEFAULT_LIMIT_BYTES = 1 << 30  # about 100,000 Hopper batch kernels (7-11 KiB each)
SUFFIX = ".cubin"


def default_directory() -> str:
    """Where the kernels are kept: `$TCGEN05_CACHE`, else ~/.cache/tcgen05-conformance/kernels."""
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "tcgen05-conformance", "kernels")


@dataclass
class KernelCache:
    """Cubins by content in `directory`; `assemble(ptx, arch)` makes the ones it lacks. Counts what
    it served (`hits`), what it assembled (`assembled`) and the seconds assembling took."""

    directory: str
    limit_bytes: int = DEFAULT_LIMIT_BYTES
    assemble: Callable[[str, str], bytes] = cubin
    hits: int = 0
    assembled: int = 0
    assemble_seconds: float = 0.0
    _version: str | None = field(default=None, repr=False)

    def key(self, ptx: str, arch: str) -> str:
        if self._version is None:
            self._version = assembler_version()
        return hashlib.sha256(f"{self._version}\0{arch}\0{ptx}".encode()).hexdigest()

    def path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key + SUFFIX)

    def get(self, ptx: str, arch: str) -> bytes:
        """The cubin of `ptx` for `arch`, from the folder or assembled (and then kept)."""
        path = self.path(self.key(ptx, arch))
        try:
            with open(path, "rb") as f:
                data = f.read()
            os.utime(path)  # least recently used goes first
            self.hits += 1
            return data
        except FileNotFoundError:
            pass
        started = time.perf_counter()
        data = self.assemble(ptx, arch)
        self.assemble_seconds += time.perf_counter() - started
        self.assembled += 1
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
        return data

    def entries(self) -> list[tuple[float, int, str]]:
        """(modification time, bytes, path) of every cubin in the folder."""
        found = []
        if not os.path.isdir(self.directory):
            return found
        for sub in os.scandir(self.directory):
            if not sub.is_dir():
                continue
            for entry in os.scandir(sub.path):
                if entry.name.endswith(SUFFIX):
                    try:
                        st = entry.stat()
                    except FileNotFoundError:  # removed meanwhile by another process
                        continue
                    found.append((st.st_mtime, st.st_size, entry.path))
        return found

    def trim(self) -> int:
        """Delete the least recently used cubins until the folder holds at most `limit_bytes`;
        the number deleted."""
        entries = sorted(self.entries())
        total = sum(size for _, size, _ in entries)
        deleted = 0
        for _, size, path in entries:
            if total <= self.limit_bytes:
                break
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            total -= size
            deleted += 1
        return deleted

    def clear(self) -> int:
        """Delete every cubin (and leftover temporary file); the number of cubins deleted."""
        deleted = len(self.entries())
        if os.path.isdir(self.directory):
            for sub in os.scandir(self.directory):
                if sub.is_dir():
                    for entry in os.scandir(sub.path):
                        if entry.name.endswith((SUFFIX, ".tmp")):
                            try:
                                os.remove(entry.path)
                            except FileNotFoundError:
                                pass
        return deleted

    def info(self) -> dict:
        """The folder, its cubins and bytes, and the limit."""
        entries = self.entries()
        return {"directory": self.directory, "kernels": len(entries), "bytes": sum(size for _, size, _ in entries),
                "limit_bytes": self.limit_bytes}
