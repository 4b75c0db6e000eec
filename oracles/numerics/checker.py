"""The integer checker (`checker.h`): the inner-product model in C, parameterised by a profile's
datapath, for checking silicon at the GPU's speed. This module turns a datapath and formats into
the flat parameter array the C code reads, compiles the C for the host (g++, for tests and
cross-checks on a CPU) and compares checker results with the Python model, which stays the
reference (docs/numerics.md, "Checking at silicon speed")."""

from __future__ import annotations

import ctypes
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tcgen05_conformance.core.formats import FloatFormat, IntFormat, code_bits, get_format, storage_dtype
from tcgen05_conformance.core.host_build import shared_library

from .model import datapath_of, inner_product, widened_format
from .profiles import Datapath, Profile, get_profile

#: The C source of the checker.
C_SOURCE = Path(__file__).with_name("checker.h")
MAX_K = 32  # CK_MAX_K: the longest vector the checker takes (K of every Hopper mma/wgmma)
PARAMETER_COUNT = 5 + 3 * 10 + 13 + 2


def _format_values(name: str) -> list[int]:
    fmt = get_format(name)
    if isinstance(fmt, IntFormat):
        return [0] * 10
    if fmt.specials not in ("ieee", "fn"):
        raise ValueError(f"the checker decodes IEEE-like and fn formats, not {name}")
    nan = fmt.canonical_nan if fmt.canonical_nan is not None else 0
    return [fmt.exp_bits, fmt.frac_bits, fmt.bias, fmt.field_shift, int(fmt.specials == "fn"), code_bits(fmt),
            fmt.emin, fmt.emax, fmt.max_mant, nan]


def _datapath_values(dp: Datapath, acc: FloatFormat, k: int) -> list[int]:
    if dp.align_frac_bits is None:
        raise ValueError("the checker models truncating datapaths (align_frac_bits set); the exact profile has none")
    k_step = dp.k_step or k
    return [k_step, dp.split_ways, dp.split_stride, dp.align_frac_bits, int(dp.align_floor is not None),
            dp.align_floor or 0, dp.group_precision or acc.precision, int(dp.group_rounding == "rne"),
            int(dp.c_entry == "first_group"), int(dp.final_rounding == "rne"), int(dp.subnormal_inputs),
            int(dp.subnormal_outputs), int(dp.zero_sign == "positive")]


def parameters(in_fmt: str, acc_fmt: str, k: int, profile: str | Profile, *, b_fmt: str | None = None,
               saturate: bool | None = None, datapath: Datapath | None = None) -> np.ndarray:
    """The checker's flat int64 parameter array for `in_fmt` x `b_fmt` (default `in_fmt`) ->
    `acc_fmt` vectors of length `k` under `profile` (or an explicit `datapath`, e.g. a mutant;
    mixed formats take the profile's datapath as the model does, `datapath_of`); `saturate` as in
    `inner_product` (integer kinds; default the profile's `int_overflow`)."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"the checker takes vectors of 1 to {MAX_K} products, not {k}")
    b_fmt = b_fmt or in_fmt
    prof = get_profile(profile)
    fin, fb, facc = get_format(in_fmt), get_format(b_fmt), get_format(acc_fmt)
    if isinstance(fin, IntFormat) != isinstance(fb, IntFormat):
        raise ValueError(f"the checker takes A and B both integer or both float, not {in_fmt} x {b_fmt}")
    head = [int(isinstance(fin, FloatFormat)), k]
    if isinstance(fin, IntFormat):
        if facc.name != "s32":
            raise ValueError("integer inputs accumulate into s32")
        sat = (prof.int_overflow == "saturate") if saturate is None else saturate
        values = [*head, int(fin.signed), int(fb.signed), int(sat), *([0] * 30), *([0] * 13), 0, 0]
    else:
        dp = datapath or datapath_of(prof, in_fmt, b_fmt, acc_fmt)
        # the exponent a subnormal operand is normalised down to: its own format's minimum, or that of
        # the format the profile widens it to (`widened_inputs`, as the model converts it)
        floors = [get_format(widened_format(prof, f.name)).emin for f in (fin, fb)]
        values = [*head, 0, 0, 0, *_format_values(in_fmt), *_format_values(b_fmt), *_format_values(acc_fmt),
                  *_datapath_values(dp, facc, k), *floors]
    out = np.array(values, dtype=np.int64)
    assert out.size == PARAMETER_COUNT
    return out


_HOST_PROGRAM = """
#include <cstddef>
#include "numeric_stream.h"
#include "checker.h"
extern "C" void checker_dot(const long long* params, const unsigned* a, const unsigned* b, const unsigned* c,
                            long long rows, unsigned* out) {
  ck_params P = ck_from_array(params);
  for (long long r = 0; r < rows; r++) out[r] = ck_dot(&P, a + r * P.k, b + r * P.k, c[r]);
}
extern "C" void stream_codes(const unsigned long long* params, int op, const unsigned long long* tiles,
                             long long count, int rows, int cols, unsigned* out) {
  ns_params p = ns_from_array(params);
  for (long long t = 0; t < count; t++)
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++) out[(t * rows + r) * cols + c] = ns_code(&p, op, tiles[t], r, c);
}
"""


@dataclass
class HostChecker:
    """The checker and the operand stream compiled for this CPU (g++), loaded with ctypes."""

    library: ctypes.CDLL

    @staticmethod
    def build(stream_header: Path, directory: str | None = None) -> "HostChecker":
        """Compile `checker.h` with the operand stream's header (`generators/numeric_stream.h`);
        RuntimeError with the compiler's message when g++ is missing or fails."""
        directory = directory or tempfile.mkdtemp(prefix="checker-")
        return HostChecker(shared_library(_HOST_PROGRAM, directory, "checker_host", "the host checker",
                                          (C_SOURCE.parent, Path(stream_header).parent)))

    def dot(self, params: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Checker results (raw codes, uint32) of rows a[i], b[i] (raw codes, [rows, K]) plus c[i]."""
        a = np.ascontiguousarray(_u32(a))
        b = np.ascontiguousarray(_u32(b))
        c = np.ascontiguousarray(_u32(c)).reshape(-1)
        p = np.ascontiguousarray(params, dtype=np.int64)
        if a.shape != b.shape or a.shape[0] != c.size or a.shape[1] != p[1]:
            raise ValueError(f"a {a.shape}, b {b.shape} and c {c.shape} do not make rows of K = {p[1]}")
        out = np.empty(c.size, np.uint32)
        ptr = ctypes.c_void_p
        self.library.checker_dot(ptr(p.ctypes.data), ptr(a.ctypes.data), ptr(b.ctypes.data), ptr(c.ctypes.data),
                                 ctypes.c_longlong(c.size), ptr(out.ctypes.data))
        return out

    def stream(self, params: np.ndarray, op: int, tiles: np.ndarray, rows: int, cols: int) -> np.ndarray:
        """The C operand stream's codes [len(tiles), rows, cols] (as `tcgen05_conformance.generators.numeric_stream.codes`)."""
        p = np.ascontiguousarray(params, dtype=np.uint64)
        t = np.ascontiguousarray(tiles, dtype=np.uint64)
        out = np.empty((t.size, rows, cols), np.uint32)
        ptr = ctypes.c_void_p
        self.library.stream_codes(ptr(p.ctypes.data), ctypes.c_int(op), ptr(t.ctypes.data), ctypes.c_longlong(t.size),
                                  ctypes.c_int(rows), ctypes.c_int(cols), ptr(out.ctypes.data))
        return out


def _u32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint32)


def as_storage(codes: np.ndarray, fmt: str) -> np.ndarray:
    """uint32 raw codes as the model's storage dtype of `fmt` (e.g. int8 for s8)."""
    dtype = storage_dtype(get_format(fmt))
    return np.asarray(codes).astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)


class CrossCheckError(AssertionError):
    """The checker and the Python model disagree on a vector: the checker cannot be trusted."""


def model_codes(a: np.ndarray, b: np.ndarray, c: np.ndarray, in_fmt: str, acc_fmt: str, profile: str | Profile,
                saturate: bool | None = None, b_fmt: str | None = None) -> np.ndarray:
    """The Python model's results of uint32 code rows (B in `b_fmt`, default `in_fmt`), as uint32 codes."""
    b_fmt = b_fmt or in_fmt
    inputs = in_fmt if b_fmt == in_fmt else (in_fmt, b_fmt)
    out = inner_product(as_storage(a, in_fmt), as_storage(b, b_fmt), as_storage(c, acc_fmt), inputs, acc_fmt,
                        profile, saturate=saturate)
    return _u32(out)


def cross_check(checker: np.ndarray, model: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                label: str) -> int:
    """The number of vectors compared; CrossCheckError naming the first differing vector (decoded
    codes) when the checker's results differ from the model's."""
    checker = np.asarray(checker, np.uint32).reshape(-1)
    model = np.asarray(model, np.uint32).reshape(-1)
    bad = np.flatnonzero(checker != model)
    if bad.size:
        i = bad[0]
        raise CrossCheckError(
            f"{label}: the checker differs from the Python model on {bad.size} of {model.size} vectors; first: "
            f"a={[hex(int(x)) for x in a[i]]} b={[hex(int(x)) for x in b[i]]} c={int(c[i]):#x} "
            f"checker={int(checker[i]):#x} model={int(model[i]):#x}")
    return int(model.size)
