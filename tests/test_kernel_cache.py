"""The kernel cache (`tcgen05_conformance.device.kernel_cache`): one assembly per (assembler version, architecture,
PTX text), kept across processes, trimmed least recently used first; `cache info|clear`."""

from __future__ import annotations

import json
import os

from tcgen05_conformance.cli import main
from tcgen05_conformance.device.kernel_cache import KernelCache, default_directory


class Assembler:
    """Stands in for nvJitLink: counts its calls; the 'cubin' names what it was made from."""

    def __init__(self):
        self.calls = []

    def __call__(self, ptx: str, arch: str) -> bytes:
        self.calls.append((ptx, arch))
        return f"{arch}:{ptx}".encode() * 100


def _cache(folder, assemble, version="13.5", limit=1 << 30) -> KernelCache:
    cache = KernelCache(str(folder), limit, assemble)
    cache._version = version  # as assembler_version() would report
    return cache


def test_each_kernel_is_assembled_once_across_processes(tmp_path):
    assemble = Assembler()
    first = _cache(tmp_path, assemble)
    assert first.get("ptx A", "sm_90a") == b"sm_90a:ptx A" * 100
    assert first.get("ptx A", "sm_90a") == b"sm_90a:ptx A" * 100
    assert (first.hits, first.assembled) == (1, 1)
    later = _cache(tmp_path, assemble)  # another run: a fresh object over the same folder
    assert later.get("ptx A", "sm_90a") == b"sm_90a:ptx A" * 100 and (later.hits, later.assembled) == (1, 0)
    later.get("ptx A", "sm_100a")  # another architecture
    later.get("ptx B", "sm_90a")  # another text
    _cache(tmp_path, assemble, version="13.6").get("ptx A", "sm_90a")  # another assembler
    assert assemble.calls == [("ptx A", "sm_90a"), ("ptx A", "sm_100a"), ("ptx B", "sm_90a"), ("ptx A", "sm_90a")]
    assert later.info()["kernels"] == 4 and not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_trim_deletes_the_least_recently_used_first(tmp_path):
    assemble = Assembler()
    cache = _cache(tmp_path, assemble)
    for k, text in enumerate(("old", "middle", "new")):
        cache.get(text, "sm_90a")
        os.utime(cache.path(cache.key(text, "sm_90a")), (1000 + k, 1000 + k))
    cache.get("old", "sm_90a")  # a hit makes it the most recently used
    size = os.path.getsize(cache.path(cache.key("old", "sm_90a")))
    cache.limit_bytes = 2 * size + size // 2  # room for two
    assert cache.trim() == 1
    assert not os.path.exists(cache.path(cache.key("middle", "sm_90a")))
    assert all(os.path.exists(cache.path(cache.key(t, "sm_90a"))) for t in ("old", "new"))
    assert cache.info()["bytes"] <= cache.limit_bytes


def test_cache_info_and_clear_on_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TCGEN05_CACHE", str(tmp_path / "kernels"))
    assert default_directory() == str(tmp_path / "kernels")
    cache = _cache(tmp_path / "kernels", Assembler())
    cache.get("a", "sm_90a")
    cache.get("b", "sm_90a")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["directory"], info["kernels"], info["bytes"]) == (str(tmp_path / "kernels"), 2, 2 * len(b"sm_90a:a" * 100))
    assert main(["cache", "clear"]) == 0
    assert "2 kernels deleted" in capsys.readouterr().out
    assert cache.info()["kernels"] == 0
    assert main(["cache", "info"]) == 0 and ": 0 kernels, 0 bytes" in capsys.readouterr().out
