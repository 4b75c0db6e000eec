"""C++ built for this CPU with g++ and loaded with ctypes: the host builds of the integer checker
(`tcgen05_conformance.oracles.numerics.checker.HostChecker`) and of the GPU's kernels (`tcgen05_conformance.device.check_kernels.host_library`),
which tests and GPU-less runs use in place of NVRTC's builds of the same source."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Sequence


def shared_library(source: str, directory: str | Path, name: str, what: str,
                   includes: Sequence[str | Path] = ()) -> ctypes.CDLL:
    """`source` (C++17) written to DIRECTORY/NAME.cpp, compiled by g++ (-O2, with the `includes`
    folders) into NAME.so and loaded; RuntimeError naming `what` with the compiler's message when
    g++ is missing or fails."""
    gxx = shutil.which("g++")
    if gxx is None:
        raise RuntimeError(f"g++ not found: {what} needs a C++ compiler")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.cpp").write_text(source)
    library = out / f"{name}.so"
    done = subprocess.run([gxx, "-O2", "-shared", "-fPIC", "-std=c++17", *(f"-I{folder}" for folder in includes),
                           str(out / f"{name}.cpp"), "-o", str(library)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"g++ failed on {what}: {done.stderr.strip()}")
    return ctypes.CDLL(str(library))
