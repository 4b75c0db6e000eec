"""`tcgen05_conformance.core.host_build.shared_library`, the one g++ build behind the host checker and the
CPU build of the GPU's kernels: a library that loads and computes, and a compile error that
names what was being built, with the compiler's own message."""

from __future__ import annotations

import ctypes
import shutil

import pytest

from tcgen05_conformance.core.host_build import shared_library

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def test_a_library_is_built_loaded_and_called(tmp_path):
    source = '#include "twice.h"\nextern "C" int twice_plus(int x) { return TWICE(x) + 1; }\n'
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "twice.h").write_text("#define TWICE(x) (2 * (x))\n")
    library = shared_library(source, tmp_path / "out", "twice", "a test library", [tmp_path / "inc"])
    library.twice_plus.restype = ctypes.c_int
    assert library.twice_plus(ctypes.c_int(20)) == 41
    assert (tmp_path / "out" / "twice.cpp").read_text() == source


def test_a_compile_error_names_the_build_and_the_compilers_message(tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)^g\+\+ failed on a broken library: .*undeclared_name"):
        shared_library('extern "C" int f() { return undeclared_name; }\n', tmp_path, "broken", "a broken library")
