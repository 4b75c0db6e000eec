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
from .profiles import Datapath, Profile, get_profile, scaled_kind

#: The C source of the checker.
C_SOURCE = Path(__file__).with_name("checker.h")
MAX_K = 128  # CK_MAX_K: the most products per inner product (K = 96; a sparse kind::mxf4's stored 64)
MAX_TERM_FRAC_BITS = 11  # a term holds a significand below 2**12 (checker.h, "terms")
MAX_SCALE_FRAC_BITS = 3  # a scaled product's significand fits 32 bits (checker.h, ck_product): ue8m0, ue4m3
EXACT_SUM_BITS = 60  # the widest exact sub-sum of a block_group the checker's int64 holds
SPECIALS = {"ieee": 0, "fn": 1, "none": 2, "e8m0": 3}  # CK_IEEE, CK_FN, CK_NO_SPECIALS, CK_E8M0
FORMAT_VALUES = 11
#: The datapath's values in the parameter array, in order (ck_from_array), after the head and four formats.
DATAPATH_VALUES = ("k_step", "split_ways", "split_stride", "align_frac_bits", "has_floor", "align_floor",
                   "group_precision", "group_rne", "c_first_group", "final_rne", "subnormal_inputs",
                   "subnormal_outputs", "zero_positive", "block_group")
DATAPATH_AT = 6 + 4 * FORMAT_VALUES
PARAMETER_COUNT = DATAPATH_AT + len(DATAPATH_VALUES) + 2


def datapath_index(name: str) -> int:
    """Where datapath value `name` (one of DATAPATH_VALUES) lies in the parameter array."""
    return DATAPATH_AT + DATAPATH_VALUES.index(name)


def _format_values(name: str | None) -> list[int]:
    if name is None:
        return [0] * FORMAT_VALUES
    fmt = get_format(name)
    if isinstance(fmt, IntFormat):
        return [0] * FORMAT_VALUES
    nan = fmt.canonical_nan if fmt.canonical_nan is not None else 0
    return [fmt.exp_bits, fmt.frac_bits, fmt.bias, fmt.field_shift, SPECIALS[fmt.specials], code_bits(fmt),
            int(fmt.signed), fmt.emin, fmt.emax, fmt.max_mant, nan]


def _datapath_values(dp: Datapath, acc: FloatFormat, k: int, scaled: bool) -> list[int]:
    if dp.align_frac_bits is None:
        raise ValueError("the checker models truncating datapaths (align_frac_bits set); the exact profile has none")
    k_step = dp.k_step or k
    group = dp.block_group if scaled and dp.block_group else 0  # the model groups scaled products only
    return [k_step, dp.split_ways, dp.split_stride, dp.align_frac_bits, int(dp.align_floor is not None),
            dp.align_floor or 0, dp.group_precision or acc.precision, int(dp.group_rounding == "rne"),
            int(dp.c_entry == "first_group"), int(dp.final_rounding == "rne"), int(dp.subnormal_inputs),
            int(dp.subnormal_outputs), int(dp.zero_sign == "positive"), group]


def _check_term_formats(*fmts: FloatFormat) -> None:
    for fmt in fmts:
        if fmt.frac_bits > MAX_TERM_FRAC_BITS:
            raise ValueError(f"the checker's terms hold operands of at most {MAX_TERM_FRAC_BITS} fraction bits, "
                             f"not {fmt.name}'s {fmt.frac_bits}")


def _check_exact_sub_sums(fa: FloatFormat, fb: FloatFormat, group: int) -> None:
    """The exact sub-sum of `group` products spans the products' exponent range and significands."""
    bits = (fa.emax + fb.emax - fa.emin - fb.emin) + fa.precision + fb.precision + (group - 1).bit_length() + 1
    if bits > EXACT_SUM_BITS:
        raise ValueError(f"the checker sums {group} {fa.name} x {fb.name} products exactly in int64: they need "
                         f"{bits} bits, more than {EXACT_SUM_BITS}")


def parameters(in_fmt: str, acc_fmt: str, k: int, profile: str | Profile, *, b_fmt: str | None = None,
               saturate: bool | None = None, datapath: Datapath | None = None, scale_fmt: str | None = None,
               factors: int = 0, kind: str | None = None) -> np.ndarray:
    """The checker's flat int64 parameter array for `in_fmt` x `b_fmt` (default `in_fmt`) ->
    `acc_fmt` vectors of length `k` under `profile` (or an explicit `datapath`, e.g. a mutant;
    mixed formats take the profile's datapath as the model does, `datapath_of`); `saturate` as in
    `inner_product` (integer kinds; default the profile's `int_overflow`). A block-scaled kind
    gives its `scale_fmt` and `factors` per row (each scaling k / factors products; `kind` as in
    `inner_product`, default `scaled_kind`)."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"the checker takes vectors of 1 to {MAX_K} products, not {k}")
    b_fmt = b_fmt or in_fmt
    prof = get_profile(profile)
    fin, fb, facc = get_format(in_fmt), get_format(b_fmt), get_format(acc_fmt)
    if isinstance(fin, IntFormat) != isinstance(fb, IntFormat):
        raise ValueError(f"the checker takes A and B both integer or both float, not {in_fmt} x {b_fmt}")
    if (scale_fmt is None) != (factors == 0):
        raise ValueError("a block-scaled kind gives both its scale format and its factors per row")
    block = k // factors if factors else 0
    if factors and block * factors != k:
        raise ValueError(f"{factors} scale factors do not split K = {k} into blocks")
    head = [int(isinstance(fin, FloatFormat)), k]
    if isinstance(fin, IntFormat):
        if facc.name != "s32" or factors:
            raise ValueError("integer inputs accumulate into s32, unscaled")
        sat = (prof.int_overflow == "saturate") if saturate is None else saturate
        values = [*head, int(fin.signed), int(fb.signed), int(sat), 0, *([0] * 4 * FORMAT_VALUES), *([0] * 14), 0, 0]
    else:
        scaled_kind_ = None if not factors else (kind or scaled_kind(in_fmt, b_fmt, k))
        dp = datapath or datapath_of(prof, in_fmt, b_fmt, acc_fmt, kind=scaled_kind_)
        _check_term_formats(fin, fb)
        if scale_fmt is not None and get_format(scale_fmt).frac_bits > MAX_SCALE_FRAC_BITS:
            raise ValueError(f"the checker scales by formats of at most {MAX_SCALE_FRAC_BITS} fraction bits, "
                             f"not {scale_fmt}'s {get_format(scale_fmt).frac_bits}")
        if factors and dp.block_group:
            if k % dp.block_group or block % dp.block_group:  # as the model refuses them (model._block_sums)
                raise ValueError(f"a block_group of {dp.block_group} products needs K ({k}) and the block ({block}) "
                                 "to be multiples of it")
            _check_exact_sub_sums(fin, fb, dp.block_group)
        # the exponent a subnormal operand is normalised down to: its own format's minimum, or that of
        # the format the profile widens it to (`widened_inputs`, as the model converts it)
        floors = [get_format(widened_format(prof, f.name)).emin for f in (fin, fb)]
        values = [*head, 0, 0, 0, block, *_format_values(in_fmt), *_format_values(b_fmt), *_format_values(acc_fmt),
                  *_format_values(scale_fmt), *_datapath_values(dp, facc, k, bool(factors)), *floors]
    out = np.array(values, dtype=np.int64)
    assert out.size == PARAMETER_COUNT
    return out


_HOST_PROGRAM = """
#include <cstddef>
#include "numeric_stream.h"
#include "checker.h"
extern "C" void checker_dot(const long long* params, const unsigned* a, const unsigned* b, const unsigned* c,
                            const unsigned* a_scale, const unsigned* b_scale, long long rows, unsigned* out) {
  ck_params P = ck_from_array(params);
  const int K = P.k, factors = P.block ? K / P.block : 0;
  ck_term ta[CK_MAX_K], tb[CK_MAX_K], sa[CK_MAX_K], sb[CK_MAX_K];
  ck_operands o = {ta, tb, sa, sb, nullptr};
  for (long long r = 0; r < rows; r++) {
    for (int k = 0; k < K; k++) ta[k] = ck_term_of(&P, CK_A, a[r * K + k]), tb[k] = ck_term_of(&P, CK_B, b[r * K + k]);
    for (int f = 0; f < factors; f++)
      sa[f] = ck_term_of(&P, CK_SCALE, a_scale[r * factors + f]), sb[f] = ck_term_of(&P, CK_SCALE, b_scale[r * factors + f]);
    out[r] = ck_dot(&P, &o, c[r]);
  }
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

    def dot(self, params: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, a_scale: np.ndarray | None = None,
            b_scale: np.ndarray | None = None) -> np.ndarray:
        """Checker results (raw codes, uint32) of rows a[i], b[i] (raw codes, [rows, K]) plus c[i],
        with a block-scaled kind's scale codes a_scale[i], b_scale[i] ([rows, factors])."""
        a = np.ascontiguousarray(_u32(a))
        b = np.ascontiguousarray(_u32(b))
        c = np.ascontiguousarray(_u32(c)).reshape(-1)
        p = np.ascontiguousarray(params, dtype=np.int64)
        if a.shape != b.shape or a.shape[0] != c.size or a.shape[1] != p[1]:
            raise ValueError(f"a {a.shape}, b {b.shape} and c {c.shape} do not make rows of K = {p[1]}")
        factors = int(p[1] // p[5]) if p[5] else 0
        if (a_scale is None) != (factors == 0):
            raise ValueError(f"parameters for {factors} scale factors per row, scales {'missing' if factors else 'given'}")
        scales = [np.ascontiguousarray(_u32(x)).reshape(c.size, factors) for x in (a_scale, b_scale)] if factors else []
        out = np.empty(c.size, np.uint32)
        ptr = ctypes.c_void_p
        scale_pointers = [ptr(x.ctypes.data) for x in scales] or [None, None]
        self.library.checker_dot(ptr(p.ctypes.data), ptr(a.ctypes.data), ptr(b.ctypes.data), ptr(c.ctypes.data),
                                 *scale_pointers, ctypes.c_longlong(c.size), ptr(out.ctypes.data))
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
                saturate: bool | None = None, b_fmt: str | None = None, *, a_scale: np.ndarray | None = None,
                b_scale: np.ndarray | None = None, scale_fmt: str = "ue8m0", kind: str | None = None) -> np.ndarray:
    """The Python model's results of uint32 code rows (B in `b_fmt`, default `in_fmt`; with a
    block-scaled kind's scale codes), as uint32 codes."""
    b_fmt = b_fmt or in_fmt
    inputs = in_fmt if b_fmt == in_fmt else (in_fmt, b_fmt)
    scales = {} if a_scale is None else {"a_scale": as_storage(a_scale, scale_fmt), "b_scale": as_storage(b_scale, scale_fmt),
                                         "scale_fmt": scale_fmt, "kind": kind}
    out = inner_product(as_storage(a, in_fmt), as_storage(b, b_fmt), as_storage(c, acc_fmt), inputs, acc_fmt,
                        profile, saturate=saturate, **scales)
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
