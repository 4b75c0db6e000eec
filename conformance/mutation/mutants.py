"""Realistic bugs planted in the oracle, one at a time, to measure what the default suite catches.

Each `Mutant` is one plausible implementation mistake (a swizzle XOR one bit off, LBO and SBO
swapped, an exponent bias off by one, a data-path lane offset wrong ...) at the place in
`oracles/`, `conformance/core/encoding/` or `conformance/core/isa/` where a real implementation would make
it. `Mutant.applied()` patches the running oracle in-process and restores it on exit: a function
is rebound in every oracle module that holds it (so `from x import f` copies are patched too),
a table entry is replaced in place (so every holder of the table sees it), and the decoding
caches of the numeric model and the cached layouts (`tcgen05_conformance.core.memo`) are cleared on entry
and exit.

`tcgen05_conformance.mutation.suite` runs the default CI suite against every mutant
(`tcgen05-conformance mutants`); simulator adapters use `MUTANTS[name].applied()` to check that
their own harness would notice the same bugs.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from types import FunctionType, ModuleType
from typing import Any, Callable, Iterator

import ml_dtypes
import numpy as np

import tcgen05_conformance.oracles.execute  # noqa: F401  (imports every oracle module, so that rebinding finds their copies)

# The modules whose functions and tables make up the oracle as it runs.
ORACLE_PACKAGES = ("tcgen05_conformance.oracles", "tcgen05_conformance.core")

Undo = Callable[[], None]
Patch = Callable[[], Undo]  # applies one change and returns what reverts it


def _module(name: str) -> ModuleType:
    """A module by its dotted name (`tcgen05_conformance.oracles.numerics.matmul` is shadowed by the function of that name)."""
    return importlib.import_module(name)


def _oracle_modules() -> list[ModuleType]:
    return [m for name, m in list(sys.modules.items())
            if m is not None and any(name == p or name.startswith(p + ".") for p in ORACLE_PACKAGES)]


def rebind(module: str, name: str, make: Callable[[Any], Any], everywhere: bool = True) -> Patch:
    """Rebind `module.name` to `make(original)`. A function is rebound in every oracle module that
    holds it (under any name) unless `everywhere` is false; other values only in `module`."""
    def apply() -> Undo:
        owner = _module(module)
        original = getattr(owner, name)
        replacement = make(original)
        if everywhere and isinstance(original, FunctionType):
            sites = [(m, attr) for m in _oracle_modules() for attr, value in list(vars(m).items()) if value is original]
        else:
            sites = [(owner, name)]
        for m, attr in sites:
            setattr(m, attr, replacement)

        def undo() -> None:
            for m, attr in sites:
                setattr(m, attr, original)
        return undo
    return apply


def wrap(module: str, name: str, wrapper: Callable[..., Any], everywhere: bool = True) -> Patch:
    """Rebind a function to `wrapper(original, *args, **kwargs)`."""
    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def mutated(*args, **kwargs):
            return wrapper(original, *args, **kwargs)
        return mutated
    return rebind(module, name, make, everywhere)


def entry(module: str, table: str, key: Any, make: Callable[[Any], Any]) -> Patch:
    """Replace `module.table[key]` with `make(original)` in place (every holder of the table sees it)."""
    def apply() -> Undo:
        mapping = getattr(_module(module), table)
        original = mapping[key]
        mapping[key] = make(original)

        def undo() -> None:
            mapping[key] = original
        return undo
    return apply


def swap(module: str, table: str, first: Any, second: Any) -> Patch:
    """Exchange two entries of a table in place."""
    def apply() -> Undo:
        mapping = getattr(_module(module), table)
        a, b = mapping[first], mapping[second]
        mapping[first], mapping[second] = b, a

        def undo() -> None:
            mapping[first], mapping[second] = a, b
        return undo
    return apply


def _clear_caches() -> None:
    """Drop the decoding tables the numeric model caches per format name, and the layouts,
    fragments and decoded descriptors cached for the instructions seen (`tcgen05_conformance.core.memo`)."""
    _module("tcgen05_conformance.core.formats")._table.cache_clear()
    _module("tcgen05_conformance.oracles.numerics.model")._fast_table.cache_clear()
    _module("tcgen05_conformance.core.memo").clear()


@dataclass(frozen=True)
class Mutant:
    """One planted bug: `name`, a one-line `description`, the `family` of the oracle it lives in,
    the patches that plant it (`applied()`) and the instructions it `reaches`."""

    name: str
    family: str
    description: str
    patches: tuple[Patch, ...] = dataclasses.field(repr=False, compare=False)
    # The instructions (PTX opcode families, `op.OP`) whose results the bug can change; None: any
    # case, numeric ones included. The suite skips programs without any of them.
    reaches: frozenset[str] | None = None

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The oracle with this bug, restored on exit (also when the body raises)."""
        with ExitStack() as stack:
            _clear_caches()
            stack.callback(_clear_caches)
            for patch in self.patches:
                stack.callback(patch())
            _clear_caches()
            yield


# --- replacements that are not a wrapper of the original ----------------------------------------


def _shift_up(state, op, cta: int = 0) -> None:
    """tcgen05.shift moving the 32 lanes up one lane (lane i receives lane i + 1)."""
    dm = _module("tcgen05_conformance.oracles.data_movement")
    lane0, column0 = _module("tcgen05_conformance.core.encoding.taddr").decode(op.taddr)
    lanes = lane0 + np.arange(dm.SHIFT_LANES)
    columns = column0 + np.arange(dm.SHIFT_COLUMNS)
    state.check_tmem(lanes, columns, "tcgen05.shift")
    for target in dm._peer_ctas(state, cta, op.cta_group, "tcgen05.shift"):
        block = state.tmem[target][lanes[:, None], columns]
        state.tmem[target][lanes[:-1, None], columns] = block[1:]


def _phase_bits_swapped(original, addresses, mode, base_offset):
    """Swizzling with bits 0 and 1 of the row phase swapped."""
    b, m = _module(SMEM).SWIZZLE_BITS[mode]
    if b < 2:
        return original(addresses, mode, base_offset)
    phase = ((addresses >> 7) - base_offset) & ((1 << b) - 1)
    swapped = (phase & ~3) | ((phase & 1) << 1) | ((phase >> 1) & 1)
    return original(addresses, mode, base_offset) ^ ((phase ^ swapped) << m)


def _second_half_lanes_32(original, dp, n, lane0):
    """2x2 data paths: the second column half at lane offset 32 instead of 64."""
    lane, column = original(dp, n, lane0)
    if dp.splits == 2:
        lane = lane - 32 * (np.arange(n) // (n // 2))[None, :]
    return lane, column


def _pairs_swapped(original, a, meta, kind, what):
    """The two indices of each sparsity-metadata chunk applied in the wrong order: equivalent to
    exchanging the two stored halves of every chunk before expansion."""
    chunks = meta.shape[-1]
    per_chunk = a.shape[-1] // chunks
    if per_chunk >= 2:
        a = a.reshape(*a.shape[:-1], chunks, 2, per_chunk // 2)[..., ::-1, :].reshape(a.shape)
    return original(a, meta, kind, what)


def _e8m0_nan_finite(original, codes, fmt):
    """ue8m0 0xFF decoded as the finite 2^128 instead of NaN."""
    formats = _module("tcgen05_conformance.core.formats")
    d = original(codes, fmt)
    if fmt.specials != "e8m0":
        return d
    nan = d.cls == formats.NAN
    return formats.Decoded(d.sign, np.where(nan, 1, d.mant), d.aexp, np.where(nan, formats.FINITE, d.cls).astype(np.int8))


def _subnormal_binade_low(original, codes, fmt):
    """Subnormal inputs decoded one binade low (exponent emin - 1)."""
    formats = _module("tcgen05_conformance.core.formats")
    d = original(codes, fmt)
    sub = (d.cls == formats.FINITE) & (d.mant < (1 << fmt.frac_bits))
    return formats.Decoded(d.sign, d.mant, np.where(sub, d.aexp - 1, d.aexp), d.cls)


def _e8m0_code_0_min_normal(original, codes, fmt):
    """ue8m0 code 0 decoded as 2^-126 (the code 1 value, as if 0 were reserved) instead of 2^-127."""
    d = original(codes, fmt)
    if fmt.specials != "e8m0":
        return d
    return _module("tcgen05_conformance.core.formats").Decoded(d.sign, d.mant, np.where(d.aexp == -fmt.bias, 1 - fmt.bias, d.aexp), d.cls)


def _ue4m3_subnormals_flushed(original, codes, fmt):
    """ue4m3 scale factors 0x01-0x07 (subnormal) decoded as zero."""
    formats = _module("tcgen05_conformance.core.formats")
    d = original(codes, fmt)
    if fmt.name != "ue4m3":
        return d
    sub = (d.cls == formats.FINITE) & (d.mant < (1 << fmt.frac_bits))
    return formats.Decoded(d.sign, np.where(sub, 0, d.mant), np.where(sub, formats.ZERO_EXP, d.aexp),
                           np.where(sub, formats.ZERO, d.cls).astype(np.int8))


def _zeros_compare_equal(original, bits, red_op, absolute, nan):
    """tcgen05.ld.red min/max.f32 comparing -0 and +0 as equal: a zero result is the thread's first zero."""
    result = original(bits, red_op, absolute, nan)
    magnitude = bits & np.uint32(0x7FFFFFFF)
    first_zero = np.argmax(magnitude == 0, axis=1)
    zero_won = (result & np.uint32(0x7FFFFFFF)) == 0
    has_zero = (magnitude == 0).any(axis=1)
    return np.where(zero_won & has_zero, bits[np.arange(bits.shape[0]), first_zero], result).astype(np.uint32)


def _last_column_refused() -> Undo:
    """TMEM bounds checked against columns - 1: the allocation's last column is refused."""
    images = _module("tcgen05_conformance.core.images").Images
    original = images.check_tmem

    def check_tmem(self, lanes, columns, what):
        original(self, lanes, columns, what)
        columns = np.asarray(columns)
        if columns.size and columns.max() >= self.columns - 1:
            raise _module("tcgen05_conformance.core.state").UndefinedBehaviour(f"{what} reaches the last allocated column")
    images.check_tmem = check_tmem

    def undo() -> None:
        images.check_tmem = original
    return undo


def _peer_uses_first_words(original, op):
    """cta_group::2: the peer CTA's lanes take the first CTA's disable-output-lane words."""
    bits = original(op)
    return np.concatenate([bits[:128], bits[:128]]) if op.cta_group == 2 else bits


def _b_halves_swapped(original, state, op, s, extra_columns):
    """cta_group::2: the two CTAs' B columns concatenated in the wrong order."""
    b = original(state, op, s, extra_columns)
    return np.roll(b, b.shape[0] // 2, axis=0) if op.cta_group == 2 else b


def _sub_byte_negate(original, codes, type_name):
    """Negation flips bit 7 of 4/6-bit codes (their byte's top bit), which decoding ignores."""
    bits = _module("tcgen05_conformance.core.isa.mma").TYPE_BITS[type_name]
    return codes ^ np.uint32(0x80) if bits < 8 else original(codes, type_name)


def _datapaths(profile, keys, changes):
    """`profile` with `changes` applied to the datapaths in `keys` (None: all of them, and the default)."""
    datapaths = {k: replace(dp, **changes) if keys is None or k in keys else dp for k, dp in profile.datapaths.items()}
    default = replace(profile.default, **changes) if keys is None and profile.default is not None else profile.default
    return replace(profile, datapaths=datapaths, default=default)


def profile_change(profile: str, keys: tuple[tuple[str, str], ...] | None, **changes: Any) -> Patch:
    """A numeric profile whose datapaths `keys` (None: all) have other parameters."""
    return entry("tcgen05_conformance.oracles.numerics.profiles", "PROFILES", profile, lambda p: _datapaths(p, keys, changes))


def format_change(name: str, **changes: Any) -> Patch:
    """A number format decoded with other parameters (bias, specials, ...)."""
    return entry("tcgen05_conformance.core.formats", "FORMATS", name, lambda f: replace(f, **changes))


def descriptor_change(module: str, change: Callable[[Any], dict]) -> Patch:
    """A descriptor decoder whose result has `change(decoded)` fields replaced."""
    return wrap(module, "decode", lambda original, *a, **k: replace(d := original(*a, **k), **change(d)))


def idesc_field_moved(layout: str, field: str, lo: int) -> list[Patch]:
    """An instruction-descriptor table whose `field` is read from bit `lo` on."""
    module = "tcgen05_conformance.core.encoding.idesc"

    def moved(table):
        return replace(table, fields=tuple(replace(f, lo=lo) if f.name == field else f for f in table.fields))

    def apply() -> Undo:
        idesc = _module(module)
        original = getattr(idesc, layout)
        new = moved(original)
        kinds = [k for k, t in idesc.LAYOUT_OF_KIND.items() if t is original]
        setattr(idesc, layout, new)
        for k in kinds:
            idesc.LAYOUT_OF_KIND[k] = new

        def undo() -> None:
            setattr(idesc, layout, original)
            for k in kinds:
                idesc.LAYOUT_OF_KIND[k] = original
        return undo
    return [apply]


# --- the mutants -------------------------------------------------------------------------------

F16_F32 = (("f16", "f32"), ("bf16", "f32"))
HMMA_F32 = F16_F32 + (("tf32", "f32"),)
FP8 = tuple((f, acc) for f in ("e4m3", "e5m2") for acc in ("f32", "f16"))
FP8_F32 = (("e4m3", "f32"), ("e5m2", "f32"))
SMEM = "tcgen05_conformance.core.layouts.smem"
TMEM = "tcgen05_conformance.core.layouts.tmem"
MMA = "tcgen05_conformance.oracles.mma"
DM = "tcgen05_conformance.oracles.data_movement"
MODEL = "tcgen05_conformance.oracles.numerics.model"
IDESC, SDESC, ZCMASK, TADDR = (f"tcgen05_conformance.core.encoding.{m}" for m in ("idesc", "sdesc", "zcmask", "taddr"))


# What a data-movement or Hopper bug can reach (`Mutant.reaches`).
CP, SHIFT, LD, ST, WGMMA = ("tcgen05.cp",), ("tcgen05.shift",), ("tcgen05.ld",), ("tcgen05.st",), ("wgmma.mma_async",)
LDST = LD + ST


def _fragment(shape: str, **changes) -> Patch:
    return entry(DM, "FRAGMENTS", shape, lambda f: replace(f, **changes))


_T = np.arange(32)

_DEFINITIONS: tuple[tuple, ...] = (
    # --- instruction descriptor (conformance/core/encoding/idesc.py, Tables 42-44) ---
    ("idesc-m-field-one-bit-low", "codec", "Table 42's M >> 4 field read from bits 23-27 instead of 24-28",
     idesc_field_moved("TABLE_42", "m_shr4", 23)),
    ("idesc-transposes-swapped", "codec", "the transpose-A and transpose-B bits (15, 16) swapped",
     (descriptor_change(IDESC, lambda d: {"transpose_a": d.transpose_b, "transpose_b": d.transpose_a}),)),
    ("idesc-negate-a-ignored", "codec", "the negate-A bit (13) ignored: A's sign is never flipped",
     (descriptor_change(IDESC, lambda d: {"negate_a": False}),)),
    ("idesc-sf-ids-swapped", "codec", "Tables 43/44: the scale-factor IDs of A (bits 29-30) and B (bits 4-5) swapped",
     (descriptor_change(IDESC, lambda d: {"sfa_id": d.sfb_id, "sfb_id": d.sfa_id}),)),
    ("idesc-k96-ignored", "codec", "Table 44 bit 31 (K = 96) ignored: every mxf4 MMA takes K = 64",
     (descriptor_change(IDESC, lambda d: {"k96": False}),)),
    ("idesc-dtype-codes-swapped", "codec", "dtype codes of F16 (0) and F32 (1) swapped",
     [swap("tcgen05_conformance.core.isa.mma", "D_TYPE_CODES", "f16", "f32")]),
    ("idesc-f6-codes-swapped", "codec", "the f8f6f4 type codes of E2M3 (3) and E3M2 (4) swapped",
     [swap("tcgen05_conformance.core.isa.mma", "_F8F6F4_CODES", "e2m3", "e3m2")]),
    ("idesc-scale-type-inverted", "codec", "Tables 43/44 bit 23 read inverted: 1 means UE4M3, 0 UE8M0",
     [swap("tcgen05_conformance.core.isa.mma", "SCALE_TYPE_CODES", "ue8m0", "ue4m3")]),
    # --- shared-memory descriptor (conformance/core/encoding/sdesc.py, Table 40) ---
    ("sdesc-lbo-sbo-swapped", "codec", "the descriptor's leading (bits 16-29) and stride (bits 32-45) byte offsets swapped",
     (descriptor_change(SDESC, lambda d: {"leading_byte_offset": d.stride_byte_offset, "stride_byte_offset": d.leading_byte_offset}),)),
    ("sdesc-base-offset-ignored", "codec", "the matrix base offset (bits 49-51) ignored",
     (descriptor_change(SDESC, lambda d: {"base_offset": 0}),)),
    ("sdesc-lbo-mode-ignored", "codec", "the LBO mode bit (52) ignored: an absolute leading-dimension address taken as an offset",
     (descriptor_change(SDESC, lambda d: {"lbo_absolute": False}),)),
    ("sdesc-start-128B-aligned", "codec", "the matrix start address rounded down to 128 bytes (start-address bits 4-6 dropped)",
     (descriptor_change(SDESC, lambda d: {"start_address": d.start_address & ~0x7F}),)),
    ("sdesc-swizzle-codes-128B-32B", "codec", "tcgen05 swizzle codes 2 (128B) and 6 (32B) swapped",
     [swap("tcgen05_conformance.core.isa.swizzle", "SWIZZLE_BY_TCGEN05_CODE", 2, 6)]),
    ("sdesc-sm90-swizzle-codes-reversed", "codec", "sm_90 layout types 1 (128B) and 3 (32B) swapped",
     [swap("tcgen05_conformance.core.isa.swizzle", "SWIZZLE_BY_SM90_CODE", 1, 3)]),
    # --- zero-column mask (conformance/core/encoding/zcmask.py, Table 45) ---
    ("zcmask-column-shift-ignored", "codec", "the zero-column mask's column shift (bits 56-61) ignored",
     (descriptor_change(ZCMASK, lambda z: {"column_shift": 0}),)),
    ("zcmask-spans-swapped", "codec", "skip span and use span swapped (zeroed runs take the use span)",
     (descriptor_change(ZCMASK, lambda z: {"skip_span": z.use_span, "use_span": z.skip_span}),)),
    ("zcmask-spans-as-described", "codec", "span fields taken as run lengths (the field descriptions), not lengths minus 1 (the worked examples)",
     (descriptor_change(ZCMASK, lambda z: {"skip_span": max(z.skip_span - 1, 0), "use_span": max(z.use_span - 1, 0)}),)),
    ("zcmask-first-span-inverted", "codec", "first-span bits read inverted (1: the sub-mask starts with used columns)",
     (descriptor_change(ZCMASK, lambda z: {"first_spans": tuple(1 - v for v in z.first_spans)}),)),
    ("zcmask-start-count-ignored", "codec", "start counts (bits 0-31) ignored: no leading bits of a sub-mask dropped",
     (descriptor_change(ZCMASK, lambda z: {"start_counts": (0, 0, 0, 0)}),)),
    ("zcmask-sub-masks-reversed", "codec", "M = 32/64: the sub-masks placed over the columns in reverse order",
     (wrap(ZCMASK, "sub_masks", lambda original, z, m, n: original(z, m, n)[::-1]),)),
    # --- TMEM address (conformance/core/encoding/taddr.py) ---
    ("taddr-lane-mod-32", "codec", "a TMEM address's lane taken modulo 32 (as if relative to the warp's quarter)",
     (wrap(TADDR, "decode", lambda original, word: (original(word)[0] % 32, original(word)[1])),)),
    # --- shared-memory operands (conformance/core/layouts/smem.py) ---
    ("swizzle-xor-one-bit-high", "smem", "swizzles XOR the row phase into address bits one higher (Swizzle<B, M+1, S>)",
     [entry(SMEM, "SWIZZLE_BITS", mode, lambda bm: (bm[0], bm[1] + 1)) for mode in ("32B", "64B", "128B")]),
    ("swizzle-128B-as-64B", "smem", "128B swizzling XORs two phase bits, not three (the 64B pattern)",
     [entry(SMEM, "SWIZZLE_BITS", "128B", lambda bm: (2, 4))]),
    ("swizzle-phase-bits-swapped", "smem", "bits 0 and 1 of the swizzle row phase swapped (64B/128B swizzles permute the wrong 16-byte chunks)",
     (wrap(SMEM, "swizzle", _phase_bits_swapped),)),
    ("swizzle-32B-atom-ignored", "smem", "128B swizzling with 32-byte atomicity swizzled like plain 128B (16-byte atoms)",
     [entry(SMEM, "SWIZZLE_BITS", "128B_base32B", lambda bm: (3, 4))]),
    ("swizzle-base-offset-added", "smem", "the matrix base offset added to the swizzle row phase instead of subtracted",
     (wrap(SMEM, "swizzle", lambda original, addresses, mode, base_offset: original(addresses, mode, -base_offset)),)),
    ("swizzle-from-matrix-offset", "smem", "the swizzle phase taken from the offset within the matrix, not the absolute address",
     (wrap(SMEM, "element_bit_addresses", lambda original, d, k_major, rows, k, storage:
           original(replace(d, start_address=0, leading_byte_offset=d.leading_byte_offset - (d.start_address if d.lbo_absolute else 0)),
                    k_major, rows, k, storage) + 8 * d.start_address),)),
    ("mn-major-lbo-sbo-swapped", "smem", "MN-major canonical layouts use LBO and SBO in their K-major roles",
     (wrap(SMEM, "canonical_strides", lambda original, d, k_major: original(
         d if k_major else replace(d, leading_byte_offset=d.stride_byte_offset, stride_byte_offset=d.leading_byte_offset), k_major)),)),
    ("k-major-swizzled-steps-lbo", "smem", "swizzled K-major layouts step the 16-byte K chunks by LBO instead of 16 bytes",
     (wrap(SMEM, "canonical_strides", lambda original, d, k_major: (lambda s: replace(
         s, strides=(s.strides[0], s.strides[1], d.leading_byte_offset, s.strides[3])) if k_major and d.swizzle != "none" else s)(
         original(d, k_major))),)),
    ("mn-major-32B-atom-8-rows", "smem", "MN-major 128B swizzling with 32-byte atoms takes 8 K rows per atom instead of 4",
     (wrap(SMEM, "canonical_strides", lambda original, d, k_major: replace(original(d, k_major), k_atom=8)
           if not k_major and d.swizzle == "128B_base32B" else original(d, k_major)),)),
    ("f4f6-smem-unpadded", "smem", ".kind::f8f6f4 4/6-bit operands read densely packed instead of 16 per 16-byte chunk",
     (wrap(SMEM, "storage_for", lambda original, element_bits, padded: original(element_bits, False)),)),
    ("fp4-nibbles-swapped", "smem", "packed 4-bit elements read high nibble first",
     (wrap(SMEM, "element_bit_addresses", lambda original, d, k_major, rows, k, storage:
           original(d, k_major, rows, k, storage) ^ (4 if storage.bits == 4 else 0)),)),
    # --- TMEM data-path layouts and operands in TMEM (conformance/core/layouts/tmem.py) ---
    ("m64-half-datapath-lanes", "tmem", "layouts C/F (half data path): row r at lane r instead of (r % 16) + 32 (r // 16)",
     (wrap(TMEM, "d_positions", lambda original, dp, n, lane0: original(replace(dp, half=False), n, lane0)),)),
    ("layout-2x2-lane-offset-32", "tmem", "layouts B/E (2x2): the second column half at lane offset 32 instead of 64",
     (wrap(TMEM, "d_positions", _second_half_lanes_32),)),
    ("layout-1x4-as-2x2", "tmem", "layout G (M = 32 .ws, 1x4) taken as a 2x2 split",
     [entry("tcgen05_conformance.core.isa.mma", "DATA_PATH_LAYOUTS", "G", lambda v: replace(v, splits=2))]),
    ("ws-layout-ignored", "tmem", ".ws MMAs use the data-path layout of the non-.ws form",
     (wrap(TMEM, "data_path", lambda original, m, cta_group, sparse, ws: original(m, cta_group, sparse, False)),)),
    ("a-tmem-container-shift-zero", "tmem", "4/6-bit A in TMEM read at bit 0 of its 8-bit container",
     [entry(TMEM, "CONTAINER_SHIFT", bits, lambda v: 0) for bits in (4, 6)]),
    ("a-tmem-no-containers", "tmem", "4/6-bit .kind::f8f6f4 A in TMEM read densely packed, without 8-bit containers",
     (wrap(TMEM, "a_tmem_container_bits", lambda original, kind, element_bits: element_bits),)),
    ("ashift-ignored", "tmem", ".ashift does not move A's rows",
     (wrap(MMA, "operand_a", lambda original, state, op, s, cta: original(state, replace(op, ashift=False), s, cta)),)),
    ("sparse-meta-f16-row-layout", "tmem", "sparse .kind::f16 metadata read with the 8-bit kinds' one-row-per-lane layout",
     (wrap(TMEM, "meta_positions", lambda original, dp, kind, k, lane0, col0, selector:
           original(dp, "f8f6f4" if kind == "f16" else kind, k, lane0, col0, selector)),)),
    ("sparse-selector-ignored", "tmem", "the sparsity selector does not move the metadata column",
     (wrap(TMEM, "meta_positions", lambda original, dp, kind, k, lane0, col0, selector: original(dp, kind, k, lane0, col0, 0)),)),
    ("sparse-indices-swapped", "tmem", "the two 2-bit indices of a sparsity-metadata chunk applied in the wrong order",
     (wrap(MMA, "expand_sparse", _pairs_swapped),)),
    ("scale-sf-id-as-column", "tmem", "the scale-factor ID counted in TMEM columns instead of bytes",
     (wrap(TMEM, "scale_factors", lambda original, tmem, sub, index, col0, factors, sf_id, groups:
           original(tmem, sub, index, col0 + sf_id, factors, 0, groups)),)),
    ("scale-k96-one-column", "tmem", "K = 96 scale factors past byte 3 read from the next column instead of the next group "
     "of columns (one column per 32 rows)",
     (wrap(TMEM, "scale_factors", lambda original, tmem, sub, index, col0, factors, sf_id, groups:
           original(tmem, sub, index, col0, factors, sf_id, 1)),)),
    ("block16-as-block32", "tmem", "a block16 (scale_vec::4X) scale vector read as block32: 2 factors per 64 K instead of 4",
     (wrap("tcgen05_conformance.core.isa.mma", "scale_vector", lambda original, kind, qualifier, k96:
           (lambda sv: replace(sv, factors=2) if sv is not None and sv.factors == 4 else sv)(original(kind, qualifier, k96))),)),
    # --- tcgen05.mma semantics (oracles/mma.py) ---
    ("enable-input-d-ignored", "mma", "enable-input-d ignored: D is always accumulated",
     (wrap(MMA, "_accumulator", lambda original, op, acc, words: original(replace(op, enable_input_d=True), acc, words)),)),
    ("no-accumulator-plus-zero", "mma", "enable-input-d false adds +0, not -0 (an all -0 sum becomes +0)",
     [entry(MMA, "NO_ACCUMULATOR", acc, lambda v: 0) for acc in ("f16", "f32")]),
    ("negate-sub-byte-container-bit", "mma", "negation flips bit 7 of 4/6-bit codes (their byte's top bit), which decoding ignores",
     (wrap(MMA, "negate", _sub_byte_negate),)),
    ("cta-pair-b-halves-swapped", "mma", "cta_group::2: the two CTAs' B column halves concatenated in the wrong order",
     (wrap(MMA, "operand_b", _b_halves_swapped),)),
    ("cta-pair-dol-first-words", "mma", "cta_group::2: the peer CTA takes the first four disable-output-lane words",
     (wrap(MMA, "_disabled_lanes", _peer_uses_first_words),)),
    ("dol-bit-order-reversed", "mma", "disable-output-lane bit i of a word read as lane 31 - i",
     (wrap(MMA, "_disabled_lanes", lambda original, op: original(op).reshape(-1, 32)[:, ::-1].reshape(-1)),)),
    ("scale-input-d-sign", "mma", "scale-input-d multiplies D by 2^+s instead of 2^-s",
     (wrap(MMA, "_scaled_accumulator", lambda original, c, fmt, exponent: original(c, fmt, -exponent)),)),
    ("scale-input-d-capped-at-12", "mma", "scale-input-d values above 12 scale D by 2^-12 only (a field one bit short of 0-15)",
     (wrap(MMA, "_scaled_accumulator", lambda original, c, fmt, exponent: original(c, fmt, min(exponent, 12))),)),
    ("zcmask-column-shift-capped-16", "codec", "the zero-column mask's column shift capped at 16 (the M = 32 limit) for every M",
     (descriptor_change(ZCMASK, lambda z: {"column_shift": min(z.column_shift, 16)}),)),
    ("tmem-last-column-refused", "tmem", "TMEM bounds checked against the allocation minus one: its last column is refused",
     (_last_column_refused,)),
    # --- number formats (conformance/core/formats.py, matmul.py) ---
    ("e4m3-bias-8", "numerics", "E4M3 decoded with exponent bias 8 (2^(e-1) instead of 2^(e-1) - 1)",
     (format_change("e4m3", bias=8),)),
    ("e3m2-bias-4", "numerics", "FP6 E3M2 decoded with exponent bias 4 (2^(e-1) instead of 2^(e-1) - 1)",
     (format_change("e3m2", bias=4),)),
    ("e2m1-bias-2", "numerics", "FP4 E2M1 decoded with exponent bias 2 (2^(e-1) instead of 2^(e-1) - 1)",
     (format_change("e2m1", bias=2),)),
    ("e4m3-ieee-specials", "numerics", "E4M3 decoded with IEEE specials (exponent 1111 is Inf/NaN) instead of E4M3FN",
     (format_change("e4m3", specials="ieee"),)),
    ("e5m2-no-infinity", "numerics", "E5M2 decoded like E4M3FN: no infinities, only S.11111.11 is NaN",
     (format_change("e5m2", specials="fn"),)),
    ("ue8m0-bias-128", "numerics", "UE8M0 scale factors decoded with bias 128 instead of 127",
     (format_change("ue8m0", bias=128),)),
    ("ue8m0-nan-finite", "numerics", "UE8M0 0xFF decoded as 2^128 instead of NaN",
     (wrap("tcgen05_conformance.core.formats", "_decode_fields", _e8m0_nan_finite),)),
    ("ue4m3-bias-8", "numerics", "UE4M3 scale factors decoded with bias 8 instead of 7",
     (format_change("ue4m3", bias=8),)),
    ("ue8m0-code-0-as-2^-126", "numerics", "UE8M0 code 0 decoded as 2^-126 instead of 2^-127",
     (wrap("tcgen05_conformance.core.formats", "_decode_fields", _e8m0_code_0_min_normal),)),
    ("ue4m3-subnormals-flushed", "numerics", "UE4M3 scale factors 0x01-0x07 (subnormal) decoded as zero",
     (wrap("tcgen05_conformance.core.formats", "_decode_fields", _ue4m3_subnormals_flushed),)),
    ("subnormal-binade-low", "numerics", "subnormal inputs decoded one binade low (exponent emin - 1)",
     (wrap("tcgen05_conformance.core.formats", "_decode_fields", _subnormal_binade_low),)),
    ("f32-nan-ieee-quiet", "numerics", "a NaN f32 result is the IEEE default quiet NaN 0x7FC00000, not NVIDIA's 0x7FFFFFFF",
     (format_change("f32", canonical_nan=0x7FC00000),)),
    ("exact-bf16-as-f16", "numerics", "the exact profile's fast path decodes bf16 codes as binary16",
     [entry("tcgen05_conformance.core.formats", "VALUE_DTYPES", "bf16", lambda v: np.float16)]),
    ("exact-e4m3-as-fnuz", "numerics", "the exact profile's fast path decodes E4M3 as E4M3FNUZ (bias 8, 0x80 is NaN)",
     [entry("tcgen05_conformance.core.formats", "VALUE_DTYPES", "e4m3", lambda v: ml_dtypes.float8_e4m3fnuz)]),
    ("exact-tf32-low-bits-kept", "numerics", "the exact profile's fast path keeps tf32's 13 low container bits",
     (wrap("tcgen05_conformance.core.formats", "values", lambda original, codes, fmt: original(codes, "f32" if fmt == "tf32" else fmt)),)),
    ("u8-as-s8", "numerics", "u8 operands read as two's-complement s8",
     (wrap(MODEL, "_int_dot", lambda original, a, b, c, fa, fb, saturate:
           original(a, b, c, replace(fa, signed=True), replace(fb, signed=True), saturate)),)),
    ("int-b-signedness-from-a", "numerics", "B's signedness taken from A's type in mixed s8 x u8 products",
     (wrap(MODEL, "_int_dot", lambda original, a, b, c, fa, fb, saturate: original(a, b, c, fa, replace(fb, signed=fa.signed), saturate)),)),
    ("int-saturate-wraps", "numerics", "integer .satfinite accumulation wraps modulo 2^32 instead of saturating",
     (wrap(MODEL, "_int_dot", lambda original, a, b, c, fa, fb, saturate: original(a, b, c, fa, fb, False)),)),
    ("int-wrap-saturates", "numerics", "integer accumulation without .satfinite saturates instead of wrapping modulo 2^32",
     (wrap(MODEL, "_int_dot", lambda original, a, b, c, fa, fb, saturate: original(a, b, c, fa, fb, True)),)),
    ("overflow-saturates", "numerics", "a finite overflow gives the largest finite value instead of Inf",
     (rebind(MODEL, "_note_overflow", lambda original: lambda state, r, inf_seen: state),)),
    ("c-add-no-round-bit", "numerics", "the separate addition of c keeps precision + 1 bits (no round bit) before rounding",
     (wrap(MODEL, "_add_two", lambda original, x, y, frac_bits: original(x, y, frac_bits - 2)),)),
    # --- numeric profiles (oracles/numerics/profiles.py) ---
    ("sm100-f16-groups-rne", "numerics", "sm_100a f16/bf16/tf32 -> f32 groups round to nearest instead of truncating",
     (profile_change("sm_100a", HMMA_F32, group_rounding="rne"),)),
    ("sm100-align-24", "numerics", "sm_100a f16/bf16 -> f32 alignment keeps 24 bits below the top product instead of 25",
     (profile_change("sm_100a", F16_F32, align_frac_bits=24),)),
    ("sm100-k-step-8", "numerics", "sm_100a f16/bf16 -> f32 fused groups of 8 products instead of 16",
     (profile_change("sm_100a", F16_F32, k_step=8),)),
    ("sm100-c-final-add", "numerics", "sm_100a f16/bf16/tf32 -> f32 add c after the group instead of inside it",
     (profile_change("sm_100a", HMMA_F32, c_entry="final_add"),)),
    ("sm100-fp8-mma-sync-groups", "numerics", "sm_100a tcgen05 fp8 products dealt into two interleaved groups with c added "
     "after them (the B200 mma.sync reading) instead of one fused group of 32 with c inside",
     (profile_change("sm_100a", FP8, split_ways=2, split_stride=2, c_entry="final_add"),)),
    ("sm90-fp8-align-14", "numerics", "sm_90a wgmma fp8 alignment keeps 14 bits instead of 13",
     (profile_change("sm_90a", FP8, align_frac_bits=14),)),
    ("sm90-fp8-f32-full-precision", "numerics", "sm_90a wgmma fp8 -> f32 results keep 24 significant bits instead of 14",
     (profile_change("sm_90a", FP8_F32, group_precision=None),)),
    ("sm100-subnormal-outputs-flushed", "numerics", "sm_100a flushes subnormal results to zero",
     (profile_change("sm_100a", None, subnormal_outputs=False),)),
    ("hardware-zero-sign-ieee", "numerics", "sm_100a and sm_90a give -0 for all -0 sums (IEEE) instead of +0",
     (profile_change("sm_100a", None, zero_sign="ieee"), profile_change("sm_90a", None, zero_sign="ieee"))),
    ("exact-slow-path-rz", "numerics", "the exact profile's model path truncates (RZ) where its fast path rounds to nearest",
     (profile_change("exact", None, group_rounding="rz"),)),
    # --- data movement (oracles/data_movement.py) ---
    ("shift-up", "data-movement", "tcgen05.shift moves lanes up instead of down",
     (rebind(DM, "shift", lambda original: _shift_up),), SHIFT),
    ("cp-warpx2-patterns-swapped", "data-movement", "tcgen05.cp .warpx2::02_13 and .warpx2::01_23 lane maps swapped",
     [swap(DM, "CP_LANES", ("64x128b", "warpx2::02_13"), ("64x128b", "warpx2::01_23"))], CP),
    ("cp-4x256b-consecutive-lanes", "data-movement", "tcgen05.cp .4x256b rows land in lanes 0-3 instead of one per subpartition",
     [entry(DM, "CP_LANES", ("4x256b", None), lambda v: replace(v, block=4, block_stride=4))], CP),
    ("cp-decompress-bit-0", "data-movement", "tcgen05.cp decompression puts 4/6-bit codes at bit 0 of their byte",
     [entry(DM, "DECOMPRESS_SHIFT", fmt, lambda v: 0) for fmt in ("b4x16_p64", "b6x16_p32")], CP),
    ("cta-pair-peer-ignored", "data-movement", "tcgen05.cp/shift .cta_group::2 act on the issuing CTA only",
     (rebind(DM, "_peer_ctas", lambda original: lambda state, cta, cta_group, what: (cta,)),), CP + SHIFT),
    ("ldst-16x64b-thread-map", "data-movement",
     "tcgen05.ld/st .16x64b: thread bit 0 picks the column and bit 1 the 8-lane half (strides read in the wrong order)",
     (_fragment("16x64b", thread_lane=_T // 4 + 8 * ((_T // 2) % 2), thread_column=_T % 2),), LDST),
    ("ldst-16x256b-register-order", "data-movement",
     "tcgen05.ld/st .16x256b registers ordered lane first (r1 = lane + 8) instead of column first",
     (_fragment("16x256b", registers=((0, 0), (8, 0), (0, 1), (8, 1))),), LDST),
    ("ldst-32x32b-num-stride", "data-movement", "tcgen05.ld/st .32x32b: repetition k of .num at column 2k instead of k",
     (_fragment("32x32b", repeat_columns=2),), LDST),
    ("ldst-split-offset-ignored", "data-movement", "tcgen05.ld/st .16x32bx2: immHalfSplitoff ignored (both halves at taddr)",
     (wrap(DM, "fragment_cells", lambda original, shape, num, packed, split_offset:
           original(shape, num, packed, 0 if split_offset is not None else None)),), LDST),
    ("ldst-pack-halves-swapped", "data-movement", ".pack::16b / .unpack::16b take the odd column's half as the low half",
     (wrap(DM, "fragment_cells", lambda original, shape, num, packed, split_offset:
           (lambda lanes, columns: (lanes, columns[..., ::-1] if packed else columns))(*original(shape, num, packed, split_offset))),),
     LDST),
    ("ldred-min-max-swapped", "data-movement", "tcgen05.ld.red .min computes the maximum and .max the minimum",
     [swap(DM, "RED_OPS", "min", "max")], LD),
    ("ldred-abs-ignored", "data-movement", "tcgen05.ld.red .abs ignored",
     (wrap(DM, "_reduce_f32", lambda original, bits, red_op, absolute, nan: original(bits, red_op, False, nan)),), LD),
    ("ldred-nan-ignored", "data-movement", "tcgen05.ld.red .NaN ignored: NaN inputs are skipped",
     (wrap(DM, "_reduce_f32", lambda original, bits, red_op, absolute, nan: original(bits, red_op, absolute, False)),), LD),
    ("ldred-s32-unsigned", "data-movement", "tcgen05.ld.red .s32 compares the registers as unsigned",
     [entry(DM, "RED_INTEGER_VIEWS", "s32", lambda v: np.uint32)], LD),
    ("ldred-zeros-compare-equal", "data-movement", "tcgen05.ld.red min/max.f32 compare -0 and +0 as equal (the first zero wins)",
     (wrap(DM, "_reduce_f32", _zeros_compare_equal),), LD),
    ("st-values-hash-round", "data-movement", "the tcgen05.st register values' second hash round shifts by 16 instead of 15",
     (rebind(DM, "HASH_ROUNDS", lambda rounds: (rounds[0], (16, rounds[1][1]))),), ST),
    # --- Hopper wgmma (oracles/hopper.py) ---
    ("wgmma-trans-inverted", "hopper", "wgmma imm-trans-a/b read inverted (1 = K-major)",
     (wrap("tcgen05_conformance.oracles.hopper", "gather", lambda original, state, cta, d, k_major, rows, k, storage, what:
           original(state, cta, d, not k_major, rows, k, storage, what), everywhere=False),), WGMMA),
    ("wgmma-scale-a-ignored", "hopper", "wgmma imm-scale-a = -1 does not negate A",
     (wrap("tcgen05_conformance.oracles.hopper", "wgmma",
           lambda original, state, op, profile: original(state, replace(op, imm_scale_a=1), profile)),),
     WGMMA),
)

MUTANTS: dict[str, Mutant] = {
    name: Mutant(name, family, description, tuple(patches), frozenset(reaches[0]) if reaches else None)
    for name, family, description, patches, *reaches in _DEFINITIONS
}
FAMILIES = tuple(dict.fromkeys(m.family for m in MUTANTS.values()))
