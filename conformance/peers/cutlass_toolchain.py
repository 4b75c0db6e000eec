"""Building and running the peer programs: small host-only C++ programs (package data in
`conformance/peers/cutlass_cpp/`) compiled against the CUTLASS headers of the `nvidia-cutlass`
package with the system C++ compiler, each printing one JSON object per line.

CUTLASS's CuTe headers include `cuda_runtime_api.h` (with `crt/host_defines.h`) and the CCCL `cuda/std`
headers, but nothing of them runs: they come from the `nvidia-cuda-runtime`, `nvidia-cuda-crt` and
`nvidia-cuda-cccl` packages (the `peers` extra) or a CUDA toolkit (`$CUDA_HOME`, `/usr/local/cuda`). Binaries are cached under
`$TCGEN05_PEERS_CACHE` (default `~/.cache/tcgen05-conformance/peers`), keyed by the sources, the
generated configuration header, the compiler and the CUTLASS version.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path(__file__).with_name("cutlass_cpp")
CUTLASS_DISTRIBUTION = "nvidia-cutlass"
CUTLASS_INCLUDE = "cutlass_library/source/include"
# pip packages carrying the CUDA headers CuTe includes, and the folder of each inside its package.
CUDA_HEADER_DISTRIBUTIONS = {"nvidia-cuda-runtime": "include", "nvidia-cuda-cccl": "include/cccl"}
CXX_FLAGS = ("-std=c++17", "-O0", "-w")


class PeersUnavailable(Exception):
    """The peer cross-check cannot run here; the message says why in one line."""


@dataclass(frozen=True)
class Toolchain:
    compiler: str
    cutlass_version: str
    includes: tuple[Path, ...]  # CUTLASS first, then the CUDA headers

    def flags(self) -> list[str]:
        return [*CXX_FLAGS, f"-I{SOURCES}", *(f"-I{p}" for p in self.includes)]


def _distribution_folder(name: str, relative: str, marker: str) -> Path | None:
    """`relative` inside an installed distribution when it holds `marker`, else None."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        path = Path(str(file))
        if str(path).endswith(marker) and relative in str(path):
            root = Path(str(dist.locate_file(path)))
            return root.parents[len(Path(marker).parts) - 2]
    return None


def _cuda_includes() -> tuple[Path, ...] | None:
    """Folders holding cuda_runtime_api.h and cuda/std/utility: the pip packages, else a toolkit."""
    runtime = _distribution_folder("nvidia-cuda-runtime", CUDA_HEADER_DISTRIBUTIONS["nvidia-cuda-runtime"], "include/cuda_runtime_api.h")
    cccl = _distribution_folder("nvidia-cuda-cccl", CUDA_HEADER_DISTRIBUTIONS["nvidia-cuda-cccl"], "cccl/cuda/std/utility")
    if runtime and cccl and (runtime / "crt" / "host_defines.h").is_file():  # nvidia-cuda-crt adds crt/ beside it
        return runtime, cccl
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda_runtime_api.h").is_file():
            include = Path(home) / "include"
            if (include / "cccl" / "cuda" / "std" / "utility").is_file():
                return include, include / "cccl"
            if (include / "cuda" / "std" / "utility").is_file():
                return (include,)
    return None


def toolchain() -> Toolchain:
    """The compiler and include folders, or PeersUnavailable saying what is missing."""
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if not compiler:
        raise PeersUnavailable("no C++ compiler (set CXX or install g++)")
    try:
        version = importlib.metadata.version(CUTLASS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise PeersUnavailable("the nvidia-cutlass package is not installed (pip install 'tcgen05-conformance[peers]')") from None
    cutlass = _distribution_folder(CUTLASS_DISTRIBUTION, CUTLASS_INCLUDE, "include/cute/tensor.hpp")
    if cutlass is None:
        raise PeersUnavailable(f"nvidia-cutlass {version} has no {CUTLASS_INCLUDE}/cute headers")
    cuda = _cuda_includes()
    if cuda is None:
        raise PeersUnavailable("no CUDA headers (cuda_runtime_api.h, crt/, cuda/std): install nvidia-cuda-runtime, nvidia-cuda-crt "
                               "and nvidia-cuda-cccl (the peers extra) or set CUDA_HOME")
    return Toolchain(compiler, version, (cutlass, *cuda))


def cache_folder() -> Path:
    root = os.environ.get("TCGEN05_PEERS_CACHE") or Path.home() / ".cache" / "tcgen05-conformance" / "peers"
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _key(tc: Toolchain, *texts: str, sources: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    for part in (tc.compiler, tc.cutlass_version, *tc.flags(), *texts):
        h.update(part.encode())
        h.update(b"\0")
    for source in sources:
        h.update((SOURCES / source).read_bytes())
    return h.hexdigest()[:20]


def _failure(what: str, stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if "error" in line]
    return f"{what}: {(errors or stderr.splitlines() or ['no output'])[0][:300]}"


def build(tc: Toolchain, program: str, configs: str) -> Path:
    """Compile `cutlass_cpp/<program>.cpp` with the generated `peers_configs.hpp` text; the binary."""
    key = _key(tc, program, configs, sources=("peers.hpp", f"{program}.cpp"))
    folder = cache_folder() / f"{program}-{key}"
    binary = folder / program
    if binary.is_file():
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "peers_configs.hpp").write_text(configs, encoding="utf-8")
    partial = folder / f"{program}.partial"
    result = subprocess.run([tc.compiler, *tc.flags(), f"-I{folder}", str(SOURCES / f"{program}.cpp"), "-o", str(partial)],
                            capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(_failure(f"compiling {program}.cpp", result.stderr))
    partial.replace(binary)
    return binary


def run(binary: Path) -> list[dict]:
    """The JSON records a peer program prints: its lines that start with "{" (on the host CuTe's
    cast_smem_ptr_to_uint prints a line of its own, and gives address 0)."""
    result = subprocess.run([str(binary)], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(_failure(f"running {binary.name}", result.stderr or result.stdout))
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


PRELUDE = ("#include <cute/tensor.hpp>", "#include <cute/atom/mma_traits_sm100.hpp>")
PROBE_CHUNK = 512  # declarations per translation unit: the compiler's error reporting grows faster than linearly
_ERROR_LINE = re.compile(r"^chunk\.cpp:(\d+):\d+:")


def _prelude(tc: Toolchain) -> Path:
    """A folder holding prelude.hpp (the CUTLASS headers the probes need) precompiled."""
    folder = cache_folder() / f"prelude-{_key(tc, *PRELUDE)}"
    header = folder / "prelude.hpp"
    if not (folder / "prelude.hpp.gch").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        header.write_text("\n".join(PRELUDE) + "\n", encoding="utf-8")
        result = subprocess.run([tc.compiler, *tc.flags(), "-x", "c++-header", str(header), "-o", str(folder / "prelude.gch.partial")],
                                capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(_failure("precompiling the CUTLASS headers", result.stderr))
        (folder / "prelude.gch.partial").replace(folder / "prelude.hpp.gch")
    return folder


def rejected_declarations(tc: Toolchain, declarations: list[str]) -> set[int]:
    """Indices of the declarations (one C++ declaration each, `using namespace cute` in force) the
    compiler rejects: a declaration named in an error, directly or as "required from here", is a
    configuration CUTLASS's static assertions refuse. The compiler reports a failed template
    instantiation once per translation unit, so the accepted declarations are compiled again until
    none is rejected. An error outside the declarations is a broken toolchain."""
    rejected: set[int] = set()
    remaining = list(range(len(declarations)))
    while remaining:
        found = _rejected_once(tc, [declarations[i] for i in remaining])
        if not found:
            return rejected
        rejected |= {remaining[i] for i in found}
        remaining = [i for n, i in enumerate(remaining) if n not in found]
    return rejected


def _rejected_once(tc: Toolchain, declarations: list[str]) -> set[int]:
    """One pass of rejected_declarations: chunks compiled in parallel, each chunk's answer cached."""
    prelude = _prelude(tc)
    head = ['#include "prelude.hpp"', '#include "fragments.hpp"', "using namespace cute;"]
    chunks = [declarations[i:i + PROBE_CHUNK] for i in range(0, len(declarations), PROBE_CHUNK)]
    rejected: set[int] = set()
    pending = []
    for number, chunk in enumerate(chunks):
        text = "\n".join(head + chunk) + "\n"
        cached = cache_folder() / f"probe-{_key(tc, text, sources=('fragments.hpp',))}.json"
        if cached.is_file():
            rejected |= {number * PROBE_CHUNK + i for i in json.loads(cached.read_text(encoding="utf-8"))}
        else:
            pending.append((number, text, cached))
    workers = max(1, os.cpu_count() or 1)
    for start in range(0, len(pending), workers):
        running = []
        for number, text, cached in pending[start:start + workers]:
            folder = cache_folder() / f"chunk-{number}-{os.getpid()}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "chunk.cpp").write_text(text, encoding="utf-8")
            process = subprocess.Popen([tc.compiler, *tc.flags(), f"-I{prelude}", "-fsyntax-only", "chunk.cpp"], cwd=folder,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            running.append((number, cached, folder, process))
        for number, cached, folder, process in running:
            _, stderr = process.communicate()
            lines = {int(m.group(1)) for m in map(_ERROR_LINE.match, stderr.splitlines()) if m}
            if (process.returncode and not lines) or min(lines, default=len(head) + 1) <= len(head):
                raise RuntimeError(_failure("probing CUTLASS configurations", stderr))
            indices = sorted(line - len(head) - 1 for line in lines)
            cached.write_text(json.dumps(indices), encoding="utf-8")
            rejected |= {number * PROBE_CHUNK + i for i in indices}
            shutil.rmtree(folder, ignore_errors=True)
    return rejected
