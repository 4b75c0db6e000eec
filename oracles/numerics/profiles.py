"""Profiles: the tensor-core inner-product behaviour of one target, as pure data.

A :class:`Profile` maps ``(input format, accumulator format)`` to a :class:`Datapath`,
the handful of structural parameters of the inner-product model (see docs/numerics.md):

* the products of one instruction step (``k_step`` of them) are dealt into
  ``split_ways`` fused groups (``k`` goes to group ``(k // split_stride) % split_ways``);
* each fused group aligns its terms to its largest exponent keeping ``align_frac_bits``
  bits below it (truncating the rest toward zero), adds them exactly, and rounds the sum
  once to ``group_precision`` bits (``group_rounding``) in the accumulator's exponent range;
* the groups of a step are chained (each group's result is the next group's accumulator);
* the accumulator input ``c`` either joins the first group as one more aligned term
  (``c_entry="first_group"``) or is added after the step's groups with a separate,
  correctly rounded addition (``c_entry="final_add"``, rounding ``final_rounding``);
* steps are chained the same way when K exceeds ``k_step``;
* block-scaled kinds either scale each product on its own (``block_group=None``: a product's
  alignment exponent includes its scales') or form exact sub-sums of ``block_group``
  consecutive products, multiply each by its block's scales and align it at the scales'
  exponent alone; these terms then take the place of the products above.

Every parameter of every datapath carries a provenance string, stored beside the values
(``Datapath.provenance``), saying whether it was fitted to recorded vectors, taken from
the publishers' model, or assumed.

Why one module of 900 lines: more than half of it is data, every built-in profile's datapaths with a
provenance string per parameter, kept beside the two types they instantiate and the loader of
profile files (which checks a file's values against the same types' domains), so that a reader
sees each profile's evidence where its values are.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping, get_args

from tcgen05_conformance.core.inputs import InputError, parse_json, read_text
from tcgen05_conformance.core.formats import get_format
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.numeric_profiles import NUMERIC_PROFILES, PROFILE_NAMES

Rounding = Literal["rne", "rz"]

#: The block-scaled tcgen05.mma kinds (PTX ISA 9.7.16.10.7, Table 39), which key a profile's
#: `scaled_datapaths`.
SCALED_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")


def scaled_kind(a_fmt: str, b_fmt: str, k: int) -> str:
    """The block-scaled kind of a scaled inner product whose caller does not name one: fp4 by fp4
    with K of 64 or more (a dense mxf4/mxf4nvf4 instruction takes 64, or 96 on sm_103a) is
    kind::mxf4, anything else kind::mxf8f6f4 (K 32; a sparse mxf8f6f4 e2m1 product of K 64 must
    name its kind)."""
    return "mxf4" if a_fmt == b_fmt == "e2m1" and k >= 64 else "mxf8f6f4"

#: Fields of :class:`Datapath` that are model parameters (and so need provenance).
PARAMETERS = (
    "instruction",
    "k_step",
    "split_ways",
    "split_stride",
    "align_frac_bits",
    "align_floor",
    "group_precision",
    "group_rounding",
    "c_entry",
    "final_rounding",
    "subnormal_inputs",
    "subnormal_outputs",
    "zero_sign",
    "block_group",
)


@dataclass(frozen=True)
class Datapath:
    """Structural parameters of one (input format, accumulator format) datapath.

    ``k_step=None`` puts all K products in one group; ``align_frac_bits=None`` keeps every
    bit (exact alignment); ``align_floor`` is the lowest exponent the alignment grid reaches
    (the grid is ``2**max(emax - align_frac_bits, align_floor)``; None: no floor);
    ``group_precision=None`` means the accumulator's precision. ``block_group`` (block-scaled
    kinds only) is the number of consecutive products summed exactly before their block's scales
    multiply the sum, which then aligns at the scales' exponent (a sub-sum of products that
    cancel to zero still does; one of all-zero products sits below the floor); None: every
    product is scaled and aligned on its own.
    """

    instruction: str
    k_step: int | None
    split_ways: int
    split_stride: int
    align_frac_bits: int | None
    align_floor: int | None
    group_precision: int | None
    group_rounding: Rounding
    c_entry: Literal["first_group", "final_add"]
    final_rounding: Rounding
    subnormal_inputs: bool
    subnormal_outputs: bool
    zero_sign: Literal["ieee", "positive"]  # the sign of a zero result
    block_group: int | None = None
    provenance: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [p for p in PARAMETERS if p not in self.provenance]
        if missing:
            raise ValueError(f"datapath parameters without provenance: {missing}")
        if self.k_step is not None and self.k_step % self.split_ways:
            raise ValueError("k_step must be a multiple of split_ways")
        if self.block_group is not None and (self.split_ways != 1 or (self.k_step or 0) % self.block_group):
            raise ValueError("block_group needs one group per step (split_ways 1) and k_step a multiple of it")
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    def as_dict(self) -> dict:
        """JSON-able view: every parameter with its value and provenance."""
        return {
            p: {"value": getattr(self, p), "provenance": self.provenance[p]} for p in PARAMETERS
        }


@dataclass(frozen=True)
class Profile:
    """A target's datapaths, keyed by (input format name, accumulator format name).

    ``default`` (if set) is used for combinations not listed; ``int_overflow`` is what the
    integer kinds do with s32 overflow when the caller does not ask for saturation.
    ``provenance`` says where a profile loaded from a file came from (source, GPU, driver,
    command, date); the built-in profiles carry theirs per parameter only. ``widened_inputs``
    maps an input format to the format the instruction converts it to, exactly, before its
    datapath reads it (the datapath is still the one of the original formats); its provenance
    is ``widened_inputs_provenance``. ``scaled_datapaths`` holds the datapaths of the block-scaled
    kinds, keyed by (kind, A input format, accumulator format), kind one of `SCALED_KINDS`; a
    block-scaled inner product without an entry takes the unscaled datapath of its formats.
    """

    name: str
    description: str
    datapaths: Mapping[tuple[str, str], Datapath]
    default: Datapath | None = None
    int_overflow: Literal["wrap", "saturate"] = "wrap"
    int_overflow_provenance: str = ""
    unsupported: Mapping[str, str] = field(default_factory=dict)
    provenance: Mapping[str, str] = field(default_factory=dict)
    widened_inputs: Mapping[str, str] = field(default_factory=dict)
    widened_inputs_provenance: str = ""
    scaled_datapaths: Mapping[tuple[str, str, str], Datapath] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "datapaths", MappingProxyType(dict(self.datapaths)))
        object.__setattr__(self, "scaled_datapaths", MappingProxyType(dict(self.scaled_datapaths)))
        object.__setattr__(self, "unsupported", MappingProxyType(dict(self.unsupported)))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))
        object.__setattr__(self, "widened_inputs", MappingProxyType(dict(self.widened_inputs)))
        if self.widened_inputs and not self.widened_inputs_provenance:
            raise ValueError("widened inputs without provenance")

    def datapath(self, in_fmt: str, acc_fmt: str) -> Datapath:
        """The datapath for an input/accumulator pair, or ValueError naming what is missing."""
        if in_fmt in self.unsupported:
            raise ValueError(f"profile {self.name}: {in_fmt} inputs: {self.unsupported[in_fmt]}")
        dp = self.datapaths.get((in_fmt, acc_fmt), self.default)
        if dp is None:
            raise ValueError(f"profile {self.name} has no datapath for {in_fmt} -> {acc_fmt}")
        return dp

    def as_dict(self) -> dict:
        """JSON-able description of the profile with per-parameter provenance."""
        out = {
            "name": self.name,
            "description": self.description,
            "int_overflow": {
                "value": self.int_overflow,
                "provenance": self.int_overflow_provenance,
            },
            "datapaths": {f"{i}->{a}": dp.as_dict() for (i, a), dp in self.datapaths.items()},
        }
        if self.default is not None:
            out["default"] = self.default.as_dict()
        if self.unsupported:
            out["unsupported"] = dict(self.unsupported)
        if self.provenance:
            out["provenance"] = dict(self.provenance)
        if self.scaled_datapaths:
            out["scaled_datapaths"] = {f"{k}:{i}->{a}": dp.as_dict() for (k, i, a), dp in self.scaled_datapaths.items()}
        if self.widened_inputs or self.widened_inputs_provenance:  # an inferred "nothing widened" says why
            out["widened_inputs"] = {"value": dict(self.widened_inputs), "provenance": self.widened_inputs_provenance}
        return out


_NO_FLOOR = (
    "none: no grid floor is modelled (the datapath's products and c do not reach a grid below "
    "2**-149 in any measured or recorded vector)"
)


_EACH_PRODUCT_SCALED = (
    "none: a block scale multiplies each product, which aligns at its own exponent plus the scales' "
    "(the only reading before MMA-Sim; unused by unscaled vectors)"
)


def _dp(values: dict, provenance: dict) -> Datapath:
    """A datapath; `align_floor` and `block_group` default to none, with that provenance."""
    values = {"align_floor": None, "block_group": None, **values}
    provenance = {"align_floor": _NO_FLOOR, "block_group": _EACH_PRODUCT_SCALED, **provenance}
    return Datapath(**values, provenance=provenance)


# --------------------------------------------------------------------------------------
# Provenance vocabulary.  "Fitted" statements give the range of values that reproduce the
# development split with 0 mismatches (tcgen05-conformance numerics fit prints the sweeps);
# the value chosen inside the range is explained.
# --------------------------------------------------------------------------------------
_PAPER = "Khattak & Mikaitis, arXiv:2512.07004, MATLAB models B200TC.m / H100TC.m"
_SUBN_IN = (
    "assumed supported (publishers' models: in_subnormals=1); the dev vectors contain "
    "subnormal inputs and reproduce"
)
_SUBN_OUT = (
    "gradual underflow, rounded like normal results (publishers' models: out_subnormals=1); "
    "measured on H100 (reports/numerics-h100-f32-subnormal-floor/h100-subnormal-fit.json): bf16/tf32 -> f32 subnormal "
    "results are the group's truncated sum on a grid floored at 2**-158 (align_floor); the B200 "
    "dev vectors hold no subnormal result, so B200 is assumed alike"
)
_H100_SILICON = "reports/numerics-h100-silicon/h100-silicon.json"
#: The f32 groups align on a grid never finer than 2**-158, 9 bits below the binary32 subnormal
#: unit: terms are truncated toward zero to max(2**(emax - 25), 2**-158).
ALIGN_FLOOR_F32 = -158
#: The f16 -> f16 groups align on a grid never finer than 2**-46 (22 bits below the binary16
#: subnormal unit): measured on H100 silicon with `numerics sweep` (see _FLOOR_F16_H100).
ALIGN_FLOOR_F16 = -46
#: The grid floor of the fp16/bf16/tf32 datapaths, by accumulator format.
ALIGN_FLOORS = {"f32": ALIGN_FLOOR_F32, "f16": ALIGN_FLOOR_F16}
_FLOOR_H100 = {
    "f32": "fitted on H100 silicon (reports/numerics-h100-f32-subnormal-floor/h100-subnormal-fit.json): the only floor that "
    "reproduces all 3,044 sampled bf16/tf32 -> f32 subnormal results of mma.sync and wgmma "
    "(-157 fails 2, -159 fails 93, no floor fails 306)",
    "f16": "fitted on H100 silicon with numerics sweep (reports/numerics-h100-f16-subnormal-floor/"
    "h100-sweep-f16-floor-seed20.json): of none, -27, -30..-35, -37, -38, -42 and -46, only -46 gives "
    "0 mismatches in 3e10 f16 -> f16 inner products each of mma.sync and wgmma (none: 6 and 8, -42: "
    "597 and 621); the 91 silicon results recorded by that sweep and by the 1e10 check of "
    "h100-1e10-seed19.json rule out -43..-45 and -47..-50 too",
}
_FLOOR_B200 = {
    "f32": "assumed as fitted on H100 (the B200 recordings hold no result below 2**-126)",
    "f16": "assumed as fitted on H100 (the B200 recordings hold no f16 result near the binary16 subnormal unit)",
}
_ZERO_H100 = (
    "measured on H100 (reports/numerics-h100-silicon/h100-silicon.json): every zero result is +0, in every "
    "float datapath of mma.sync and wgmma (exact zero sums of -0 terms, and sums rounding to zero)"
)
_ZERO_B200 = "assumed as measured on H100 (the B200 recordings hold no zero results)"
_WRAP = "assumed: PTX mma without .satfinite wraps modulo 2**32; not recorded"

# ---------------------------------------------------------------- exact reference -------
EXACT = _dp(
    dict(
        instruction="none (mathematical reference)",
        k_step=None,
        split_ways=1,
        split_stride=1,
        align_frac_bits=None,
        group_precision=None,
        group_rounding="rne",
        c_entry="first_group",
        final_rounding="rne",
        subnormal_inputs=True,
        subnormal_outputs=True,
        zero_sign="ieee",
    ),
    {p: "definition: exact sum of all products and c, one RNE rounding (IEEE 754 signs)" for p in PARAMETERS},
)


def _hmma_group(
    gpu: str,
    k: int,
    acc: str,
    *,
    fitted_f: str,
    fitted_rounding: str,
    fitted_group: str,
    instruction: str,
) -> Datapath:
    """fp16/bf16/tf32 datapaths: one fused group of k products plus c (same on both GPUs)."""
    return _dp(
        dict(
            instruction=instruction,
            k_step=k,
            split_ways=1,
            split_stride=1,
            align_frac_bits=25,
            align_floor=ALIGN_FLOORS[acc],
            group_precision=None,
            group_rounding="rne" if acc == "f16" else "rz",
            c_entry="first_group",
            final_rounding="rne",
            subnormal_inputs=True,
            subnormal_outputs=True,
            zero_sign="positive",
        ),
        {
            "instruction": f"README of the {gpu} recordings (wmma harness)",
            "k_step": fitted_group,
            "split_ways": f"fitted to {gpu} dev vectors: one group; splits that separate the "
            "products fail",
            "split_stride": "unused with split_ways=1",
            "align_frac_bits": fitted_f,
            "align_floor": (_FLOOR_H100 if gpu == "H100" else _FLOOR_B200)[acc],
            "group_precision": (
                "accumulator precision (24 for f32, 11 for f16); fitted: 13-15 bits give "
                "~950-2500 mismatches; f16 results are rounded directly from the aligned sum "
                "(exploration: rounding first to binary32 RZ gave 1 mismatch on B200)"
            ),
            "group_rounding": fitted_rounding,
            "c_entry": (
                f"fitted to {gpu} dev vectors: c is one more aligned term of the group "
                "(adding c separately gives ~670-830 mismatches)"
            ),
            "final_rounding": "unused with c_entry=first_group",
            "subnormal_inputs": _SUBN_IN,
            "subnormal_outputs": _SUBN_OUT,
            "zero_sign": _ZERO_H100 if gpu == "H100" else _ZERO_B200,
        },
    )


def _hmma_datapaths(gpu: str, fitted_f: str, fitted_rounding: str, fitted_k16: str, f16_output: dict) -> dict:
    """One GPU's fp16/bf16/tf32 datapaths (the same structure on both GPUs, with their own
    provenance): f16 -> f32 and f16, bf16 -> f32, tf32 -> f32. `f16_output` holds the
    f16-output datapath's fitted_f, fitted_rounding and fitted_group."""
    f32 = dict(fitted_f=fitted_f, fitted_rounding=fitted_rounding)
    return {
        ("f16", "f32"): _hmma_group(gpu, 16, "f32", fitted_group=fitted_k16, instruction=_WMMA16, **f32),
        ("f16", "f16"): _hmma_group(gpu, 16, "f16", instruction=_WMMA16, **f16_output),
        ("bf16", "f32"): _hmma_group(gpu, 16, "f32", fitted_group=fitted_k16, instruction=_WMMA16, **f32),
        ("tf32", "f32"): _hmma_group(gpu, 8, "f32", fitted_group=_K8_TF32, instruction="wmma m16n16k8 (recorded)", **f32),
    }


def _fp8_mma_sync(gpu: str, acc: str) -> Datapath:
    """fp8 through mma.sync m16n8k32: two interleaved 16-product groups, then + c."""
    return _dp(
        dict(
            instruction="mma.sync.aligned.m16n8k32 (recorded)",
            k_step=32,
            split_ways=2,
            split_stride=2,
            align_frac_bits=25,
            group_precision=None,
            group_rounding="rne" if acc == "f16" else "rz",
            c_entry="final_add",
            final_rounding="rne",
            subnormal_inputs=True,
            subnormal_outputs=True,
            zero_sign="positive",
        ),
        {
            "instruction": f"publishers' harness mma_fp8_output_fp16/32.cu ({gpu})",
            "k_step": "PTX shape m16n8k32 (K of one instruction)",
            "split_ways": (
                f"fitted to {gpu} f16-output dev vectors: two fused groups of 16 (one group "
                "of 32: ~400-520 mismatches; 4 groups: ~650-890). The f32-output files "
                "accept any split. Consistent with the publishers' note that the fp8 FMA "
                "size is 16 with an interleaved pattern joining two 16-element vectors"
            ),
            "split_stride": (
                "fitted: group 0 takes k mod 4 in {0,1}, group 1 k mod 4 in {2,3} "
                "(odd/even, stride 4 and stride 8 fail with ~570-790 mismatches)"
            ),
            "align_frac_bits": (
                "fitted: the f16-output files accept any value >= 18 (14: 17-29 "
                "mismatches), the f32-output files any value >= 23; 25 chosen to equal "
                "the fp16-input datapath, which the groups appear to reuse"
            ),
            "group_precision": (
                "accumulator precision; fitted (13-15 bits give ~560-1900 mismatches)"
            ),
            "group_rounding": (
                "fitted: RNE to binary16 per group (RZ: ~1070-1350 mismatches)"
                if acc == "f16"
                else f"measured on H100 mma.sync: RZ (RNE fails; {_H100_SILICON})" if gpu == "H100"
                else "assumed RZ as measured on H100 mma.sync; the B200 dev vectors accept "
                "RZ or RNE (fp8 group sums are almost always exact in binary32)"
            ),
            "c_entry": (
                "fitted: c is added after both groups, group 0 starting from zero (c in "
                "the first group: >890 mismatches of 2500 in every fp8 file)"
            ),
            "final_rounding": "fitted: the addition of c is rounded to nearest even",
            "subnormal_inputs": _SUBN_IN,
            "subnormal_outputs": _SUBN_OUT,
            "zero_sign": _ZERO_H100 if gpu == "H100" else _ZERO_B200,
        },
    )


def _fp6_fp4_assumed(acc: str) -> Datapath:
    base = _fp8_mma_sync("B200", acc)
    prov = {
        p: "ASSUMED, untested: same datapath as the recorded B200 fp8 mma.sync (fp6/fp4 values "
        "are exact in fp8 and fp16); probes in docs/numerics.md. Basis: " + base.provenance[p]
        for p in PARAMETERS
    }
    return Datapath(**{p: getattr(base, p) for p in PARAMETERS}, provenance=prov)


# ---------------------------------------------------------------- sm_100a (B200) --------
_B200_F = (
    "fitted to B200 dev vectors: 25 bits below the largest product exponent (sum of the "
    "operand exponent fields); 24 and 26 give mismatches; publishers' neab=2. " + _PAPER
)
_RZ_B200 = "fitted to B200 dev vectors: truncation (RZ); RNE gives ~760-870 mismatches"
_K16_B200 = (
    "fitted: 16 reproduces, 8 gives ~470-780 mismatches; the K=16 dev vectors cannot tell "
    "16 from 32; 16 = K of the instruction and the publishers' fma"
)
_K8_TF32 = (
    "dev vectors have K=4: any group >= 4 fits, 2 fails; 8 from the publishers' model "
    "(fma=8) and the wmma k8 shape"
)
_WMMA16 = "wmma m16n16k16 (recorded)"

SM100A_MMA_SYNC = Profile(
    name="sm_100a.mma_sync",
    description="NVIDIA B200 (Blackwell, sm_100a) tensor cores through warp-level mma.sync / wmma, as recorded",
    datapaths={
        **_hmma_datapaths(
            "B200", _B200_F, _RZ_B200, _K16_B200,
            f16_output=dict(
                fitted_f="fitted to B200 fp16->f16 vectors: any value >= 25 reproduces (22..24 "
                "give 1-2 mismatches); 25 chosen to equal the f32-output datapath",
                fitted_rounding="fitted: RNE directly to binary16 (RZ: ~1240 mismatches)",
                fitted_group="fitted: 16 reproduces, 8 gives ~670 mismatches; 16 assumed as for f32",
            ),
        ),
        ("e4m3", "f32"): _fp8_mma_sync("B200", "f32"),
        ("e4m3", "f16"): _fp8_mma_sync("B200", "f16"),
        ("e5m2", "f32"): _fp8_mma_sync("B200", "f32"),
        ("e5m2", "f16"): _fp8_mma_sync("B200", "f16"),
        **{
            (f, acc): _fp6_fp4_assumed(acc)
            for f in ("e2m3", "e3m2", "e2m1")
            for acc in ("f32", "f16")
        },
    },
    int_overflow="wrap",
    int_overflow_provenance=_WRAP,
)

# ---------------------------------------------------------------- sm_100a tcgen05.mma ------
# MMA-Sim (Microsoft Research, arXiv 2511.10909; PyPI mmasim 2.1.1, MIT) models tcgen05.mma as
# its authors probed it on B200 silicon. The facts below are read from its source (file:line of
# mmasim 2.1.1) and checked against it as a peer (conformance/peers/mmasim.py, reports/numerics-tcgen05-vs-mmasim).
_MMASIM = "MMA-Sim 2.1.1 (tcgen05.mma probed on B200 silicon; arXiv 2511.10909)"
_MMASIM_T = _MMASIM + ", nv_ptx/sim.py:157-166 and arithmetic/fdpa.py:85-102 (MMA_T_FDPA)"
_MMASIM_ST = _MMASIM + ", nv_ptx/sim.py:187-195 and arithmetic/fdpa.py:157-179 (MMA_ST_FDPA)"
_MMASIM_GST = _MMASIM + ", nv_ptx/sim.py:183-186 and arithmetic/fdpa.py:248-276 (MMA_GST_FDPA)"
_MMASIM_ZERO = (_MMASIM + ": every zero result is +0 (fdpa.py:102, 179, 276 add +0.0); as measured on H100 "
                "for mma.sync and wgmma")
_MMASIM_SUBN = (_MMASIM + ": inputs are normalised with their format's subnormal exponent, never flushed "
                "(fdpa.py:27-44); results round with gradual underflow (fdpa.py:47-72)")


def _mmasim_floor(e_zero: int, f: int) -> str:
    return (f"{_MMASIM}: a zero term aligns at e_zero = {e_zero} (fdpa.py:100, 261) and a nonzero c at its "
            f"exponent or above, so no grid lies below 2**({e_zero} - {f}) = 2**{e_zero - f}; for f32 and f16 "
            "accumulators this equals the floor fitted on H100 silicon")


def _tcgen05_fused(acc: str, k_step: int, instruction: str, basis: str, *, scaled: bool = False) -> Datapath:
    """One fused group of the instruction's K products with c inside, 25 alignment bits (MMA-Sim's
    T_FDPA and ST_FDPA: every tcgen05 kind but mxf4/mxf4nvf4). Unscaled 8/6/4-bit products never
    reach MMA-Sim's floor, so none is modelled there."""
    e_zero = -133 if acc == "f32" else -21
    unreachable = not scaled
    return _dp(
        dict(instruction=instruction, k_step=k_step, split_ways=1, split_stride=1, align_frac_bits=25,
             align_floor=None if unreachable else e_zero - 25, group_precision=None, group_rounding="rz" if acc == "f32" else "rne",
             c_entry="first_group", final_rounding="rne", subnormal_inputs=True, subnormal_outputs=True,
             zero_sign="positive"),
        {
            "instruction": f"{instruction}: " + basis,
            "k_step": f"{basis}: L_max = 32 bytes / operand bytes = {k_step} products per fused group",
            "split_ways": f"{basis}: one fused group per instruction",
            "split_stride": "unused with split_ways=1",
            "align_frac_bits": f"{basis}: F = 25 alignment bits below the largest exponent",
            "align_floor": (f"none: {_MMASIM}'s e_zero {e_zero} puts no grid below 2**{e_zero - 25}, and no bit of an "
                            "unscaled f8f6f4 product (lowest bit >= 2**-32) or of c (aligned at or above its format's "
                            "smallest normal) lies below it; the block-scaled kind::mxf8f6f4 reaches it"
                            if unreachable else _mmasim_floor(e_zero, 25)),
            "group_precision": f"{basis}: rounded once to the accumulator's precision",
            "group_rounding": f"{basis}: " + ("RZ-FP32" if acc == "f32" else "RNE-FP16, directly from the exact sum"),
            "c_entry": f"{basis}: c is one more term of the fused group",
            "final_rounding": "unused with c_entry=first_group",
            "subnormal_inputs": _MMASIM_SUBN,
            "subnormal_outputs": _MMASIM_SUBN,
            "zero_sign": _MMASIM_ZERO,
            "block_group": f"{basis}: each product is scaled and aligned on its own (no sub-sums)",
        },
    )


_AGREES = ("{}; MMA-Sim's tcgen05 model (MMA_T_FDPA, F=25, c inside, L_max 32 bytes: nv_ptx/sim.py:157-166) "
           "gives the same datapath")


def _tcgen05_hmma() -> dict:
    """f16/bf16/tf32 through tcgen05.mma: the B200 mma.sync fit, which MMA-Sim's tcgen05 model equals."""
    out = {}
    for key, dp in SM100A_MMA_SYNC.datapaths.items():
        if key[0] in ("f16", "bf16", "tf32"):
            prov = {p: _AGREES.format(dp.provenance[p]) for p in PARAMETERS}
            kind = "tf32" if key[0] == "tf32" else "f16"
            out[key] = replace(dp, instruction=f"tcgen05.mma kind::{kind}", provenance=prov)
    return out


#: The fp4 kinds' grouped datapath: exact sub-sums of 16 products, each times its block's scales,
#: fused with c at 35 alignment bits (MMA_GST_FDPA, e_zero -139).
_GST_FACTS = {
    "instruction": "tcgen05.mma kind::mxf4 / kind::mxf4nvf4: " + _MMASIM_GST,
    "k_step": (f"{_MMASIM_GST}: one fused sum per K = 64 instruction; ASSUMED for K = 96 (sm_103a, which "
               "MMA-Sim does not model) and for the sparse forms (logical K 128): one fused sum of all K / 16 "
               "sub-sums (A-TCGEN05-GST-K96)"),
    "split_ways": f"{_MMASIM_GST}: one fused sum",
    "split_stride": "unused with split_ways=1",
    "align_frac_bits": f"{_MMASIM_GST}: F = 35 alignment bits below the largest scale exponent",
    "align_floor": _mmasim_floor(-139, 35),
    "group_precision": f"{_MMASIM_GST}: rounded once to binary32",
    "group_rounding": f"{_MMASIM_GST}: RZ-FP32",
    "c_entry": f"{_MMASIM_GST}: c is one more term of the fused sum",
    "final_rounding": "unused with c_entry=first_group",
    "subnormal_inputs": _MMASIM_SUBN,
    "subnormal_outputs": _MMASIM_SUBN,
    "zero_sign": _MMASIM_ZERO,
    "block_group": (f"{_MMASIM_GST}: exact float32 sums of 16 products (fdpa.py:253-256), each times its "
                    "block's scales and aligned at the scales' exponent alone; a sub-sum that cancels to zero "
                    "still aligns there (fdpa.py:262), one of zero products at e_zero"),
}
_GST = _dp(dict(instruction="tcgen05.mma kind::mxf4 / kind::mxf4nvf4", k_step=None, split_ways=1, split_stride=1,
                align_frac_bits=35, align_floor=-139 - 35, group_precision=None, group_rounding="rz",
                c_entry="first_group", final_rounding="rne", subnormal_inputs=True, subnormal_outputs=True,
                zero_sign="positive", block_group=16), _GST_FACTS)

#: The narrow float formats of kind::f8f6f4 and kind::mxf8f6f4 (PTX ISA 9.7.16.10.7, Table 40).
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")

SM100A = Profile(
    name="sm_100a",
    description=("NVIDIA B200 (Blackwell, sm_100a) tensor cores through tcgen05.mma: MMA-Sim's silicon-probed "
                 "tcgen05 model; f16/bf16/tf32 also the B200 mma.sync recordings (sm_100a.mma_sync)"),
    datapaths={
        **_tcgen05_hmma(),
        **{(f, acc): _tcgen05_fused(acc, 32, "tcgen05.mma kind::f8f6f4", _MMASIM_T)
           for f in F8F6F4 for acc in ("f32", "f16")},
    },
    scaled_datapaths={
        **{("mxf8f6f4", f, "f32"): _tcgen05_fused("f32", 32, "tcgen05.mma kind::mxf8f6f4", _MMASIM_ST, scaled=True)
           for f in F8F6F4},
        ("mxf4", "e2m1", "f32"): _GST,
        ("mxf4nvf4", "e2m1", "f32"): _GST,
    },
    int_overflow="wrap",
    int_overflow_provenance=_WRAP,
)

# ---------------------------------------------------------------- sm_90a (H100) ---------
_H100_F = (
    "fitted to H100 dev vectors: 25 bits below the largest product exponent; 24 and 26 give "
    "mismatches; publishers' neab=2. " + _PAPER
)
_RZ_H100 = "fitted to H100 dev vectors: truncation (RZ); RNE gives ~690-890 mismatches"
_K16_H100 = (
    "fitted: 16 reproduces, 8 gives ~480-780 mismatches (K=16 dev vectors); "
    "publishers' H100TC.m fma=16"
)

def _h100_wgmma_fp8(acc: str) -> Datapath:
    """fp8 through wgmma on H100: one fused group of 32 products plus c, 13 alignment bits."""
    return _dp(
        dict(
            instruction="wgmma.mma_async m64nNk32 (recorded for f32; measured on H100 for both)",
            k_step=32,
            split_ways=1,
            split_stride=1,
            align_frac_bits=13,
            group_precision=14 if acc == "f32" else None,
            group_rounding="rz" if acc == "f32" else "rne",
            c_entry="first_group",
            final_rounding="rne",
            subnormal_inputs=True,
            subnormal_outputs=True,
            zero_sign="positive",
        ),
        {
            "instruction": "README of the H100 recordings (fp8 f32 results from wgmma, D zero); "
            f"measured on H100 through wgmma with nonzero c ({_H100_SILICON})",
            "k_step": (
                "fitted to H100 fp8->f32 vectors: one fused group of 32 (16: 178-407 "
                "mismatches of 2500); publishers' H100TC.m fma=32; the f16-output datapath "
                "fitted to H100 wgmma measurements the same way"
            ),
            "split_ways": "fitted: no split (every 2- or 4-way split fails; measured on H100 for f16 output)",
            "split_stride": "unused with split_ways=1",
            "align_frac_bits": (
                "fitted to H100 fp8->f32 vectors: 13 bits below the largest product exponent "
                "(12 and 14 fail); publishers' neab=-10 (23-10); f16 output measured: 13 (14 fails)"
            ),
            "group_precision": (
                "fitted: the result keeps 14 significant bits (13 and 15 fail)" if acc == "f32"
                else "measured on H100: rounded directly to binary16 (14-bit RZ first fails)"
            ),
            "group_rounding": (
                "fitted: truncation (RZ); RNE gives 227-358 mismatches" if acc == "f32"
                else "measured on H100: RNE to binary16 (RZ fails)"
            ),
            "c_entry": f"measured on H100: c is one more aligned term of the group ({_H100_SILICON}; "
            "c added separately fails)",
            "final_rounding": "unused with c_entry=first_group",
            "subnormal_inputs": _SUBN_IN,
            "subnormal_outputs": _SUBN_OUT,
            "zero_sign": _ZERO_H100,
        },
    )


_H100_HMMA = _hmma_datapaths(
    "H100", _H100_F, _RZ_H100, _K16_H100,
    f16_output=dict(
        fitted_f="fitted to H100 fp16->f16 vectors: 22..25 reproduce (26 and wider give "
        "1 mismatch); 25 chosen to equal the f32-output datapath",
        fitted_rounding="fitted: RNE directly to binary16 (RZ: ~1280 mismatches)",
        fitted_group="fitted: 16 reproduces, 8 gives ~670 mismatches; 16 assumed as for f32",
    ),
)
_NO_FP6_FP4 = {
    f: "Hopper has no fp6/fp4 tensor-core inputs (PTX ISA: .e2m3/.e3m2/.e2m1 need sm_100a+)"
    for f in ("e2m3", "e3m2", "e2m1")
}

SM90A = Profile(
    name="sm_90a",
    description=(
        "NVIDIA H100 (Hopper, sm_90a) tensor cores through wgmma (measured on H100; "
        "f16/bf16/tf32 shared with mma.sync)"
    ),
    datapaths={
        **_H100_HMMA,
        ("e4m3", "f32"): _h100_wgmma_fp8("f32"),
        ("e5m2", "f32"): _h100_wgmma_fp8("f32"),
        ("e4m3", "f16"): _h100_wgmma_fp8("f16"),
        ("e5m2", "f16"): _h100_wgmma_fp8("f16"),
    },
    int_overflow="wrap",
    int_overflow_provenance=_WRAP,
    unsupported=_NO_FP6_FP4,
)

# Measured on H100 (reports/numerics-h100-silicon/h100-silicon.json): warp-level mma.sync differs from
# wgmma only for fp8, where it is the two-interleaved-groups datapath recorded on B200.
SM90A_MMA_SYNC = replace(
    SM90A,
    name="sm_90a.mma_sync",
    description="NVIDIA H100 (Hopper, sm_90a) tensor cores through warp-level mma.sync / mma.sp (measured on H100)",
    datapaths={**SM90A.datapaths, **{(f, acc): _fp8_mma_sync("H100", acc) for f in ("e4m3", "e5m2") for acc in ("f32", "f16")}},
    widened_inputs={"e4m3": "f16", "e5m2": "f16"},
    widened_inputs_provenance=(
        "ptxas (nvJitLink 13.5) lowers warp-level fp8 MMA on sm_90a to F2FP.F16 unpacking and two HMMA "
        "(reports/numerics-h100-mixed-fp8/sass); the fp8 datapath on f16-widened operands reproduces 3.4e7 H100 "
        "mma.sync inner products bit for bit, mixed and same-type (reports/numerics-h100-mixed-fp8/hmma-lowering-gpu.json); "
        "without the widening mixed e4m3 x e5m2 missed 0.47-0.90 % (A-MMA-SP-MIXED-FP8)"),
)

EXACT_PROFILE = Profile(
    name="exact",
    description="Exact sum of all products and c, rounded once to nearest even",
    datapaths={},
    default=EXACT,
    int_overflow="wrap",
    int_overflow_provenance="definition: integer kinds are exact; overflow wraps unless asked "
    "to saturate",
)

#: Registry of built-in profiles.
PROFILES: dict[str, Profile] = {p.name: p for p in (EXACT_PROFILE, SM90A, SM90A_MMA_SYNC, SM100A, SM100A_MMA_SYNC)}


def for_instruction(profile: str, family: str) -> str:
    """The profile's variant for an instruction family ("mma_sync", "wgmma") where measurements
    made one (`sm_90a.mma_sync`), else the profile itself."""
    variant = f"{profile}.{family}"
    return variant if variant in PROFILES else profile


def get_profile(profile: str | os.PathLike | Profile) -> Profile:
    """A profile by name, or loaded from a profile file (a path: `Profile.as_dict()` as JSON,
    what `numerics infer` writes), or a Profile passed through."""
    if isinstance(profile, Profile):
        return profile
    if str(profile) in PROFILES:
        return PROFILES[str(profile)]
    path = Path(profile)
    if path.suffix == ".json" or path.is_file():
        if not path.is_file():
            raise ProfileFileError(f"{path}: no such profile file")
        stat = path.stat()
        return _load_profile(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    raise ValueError(f"unknown profile {str(profile)!r}; known: {sorted(PROFILES)}, or a profile JSON file")


def profile_target(profile: str | os.PathLike | Profile) -> str | None:
    """The target whose silicon a profile models: a hardware profile's own name (`sm_90a` for
    `sm_90a.mma_sync`), a profile file's `provenance.target` (`numerics infer` writes the target of
    the silicon it inferred from); None for one that models no hardware (`exact`, or a file that
    names no target)."""
    if not isinstance(profile, Profile) and str(profile) in PROFILES:
        base = str(profile).split(".")[0]
        return base if NUMERIC_PROFILES[base].architecture is not None else None
    return get_profile(profile).provenance.get("target")


class ProfileFileError(ValueError):
    """A malformed profile file; the one-line message names the file and the JSON path."""


MAX_PROFILE_FILE_BYTES = 16 * 1024 * 1024  # an inferred profile with its evidence is under 1 MB


@lru_cache(maxsize=32)
def _load_profile(path: str, mtime_ns: int, size: int) -> Profile:
    """The profile in a file (cached while the file is unchanged: the oracle looks a profile up
    on every inner-product call)."""
    try:
        data = parse_json(read_text(path, MAX_PROFILE_FILE_BYTES))
    except InputError as e:
        raise ProfileFileError(f"{path}: not a readable JSON file ({e})") from None
    try:
        return profile_from_dict(data)
    except ProfileFileError as e:
        raise ProfileFileError(f"{path}: {e}") from None


_LITERALS = {"group_rounding": get_args(Rounding), "final_rounding": get_args(Rounding),
             "c_entry": ("first_group", "final_add"), "zero_sign": ("ieee", "positive")}
_TYPES = {"instruction": (str,), "k_step": (int, type(None)), "split_ways": (int,), "split_stride": (int,),
          "align_frac_bits": (int, type(None)), "align_floor": (int, type(None)),
          "group_precision": (int, type(None)), "subnormal_inputs": (bool,), "subnormal_outputs": (bool,),
          "block_group": (int, type(None))}
_POSITIVE = ("k_step", "split_ways", "split_stride", "group_precision", "block_group")
#: What a datapath can have, for the integer parameters a profile file gives (a value outside is
#: refused on one line instead of asking the model for gigabytes or an overflow): a step or group
#: of at most MAX_K_STEP products (an instruction's K is at most 96, sm_103a's mxf4), alignment
#: widths `numerics infer` searches (a wider one acts as exact alignment, null), a floor within
#: the exponents of double precision, a group precision up to quadruple's.
MAX_K_STEP = 512
_RANGES = {"k_step": (1, MAX_K_STEP), "split_ways": (1, MAX_K_STEP), "split_stride": (1, MAX_K_STEP),
           "block_group": (1, MAX_K_STEP), "align_frac_bits": (0, 64), "align_floor": (-1100, 1100),
           "group_precision": (1, 113)}
#: Parameters a profile file may leave out (files written before the parameter existed), with
#: the value and provenance they then take.
_OPTIONAL_PARAMETERS = {"block_group": (None, "absent from the file (written before block_group existed): "
                                        + _EACH_PRODUCT_SCALED)}


def _fail(where: str, what: str):
    raise ProfileFileError(f"{where}: {what}")


def _object(value: Any, where: str, required: set[str], optional: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        _fail(where, f"expected an object, got {type(value).__name__}")
    unknown = sorted(set(value) - required - set(optional))
    if unknown:
        _fail(f"{where}.{unknown[0]}", "unknown field")
    missing = sorted(required - set(value))
    if missing:
        _fail(f"{where}.{missing[0]}", "missing")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {json.dumps(value)[:40]}")
    return value


def datapath_from_dict(data: Any, where: str = "$") -> Datapath:
    """A datapath from its `as_dict()` form ({parameter: {"value", "provenance"}})."""
    data = _object(data, where, set(PARAMETERS) - set(_OPTIONAL_PARAMETERS), set(_OPTIONAL_PARAMETERS))
    values, provenance = {}, {}
    for p in PARAMETERS:
        if p not in data:
            values[p], provenance[p] = _OPTIONAL_PARAMETERS[p]
            continue
        entry = _object(data[p], f"{where}.{p}", {"value", "provenance"})
        value = entry["value"]
        if p in _LITERALS:
            if value not in _LITERALS[p]:
                _fail(f"{where}.{p}.value", f"{json.dumps(value)[:40]} is not one of {', '.join(_LITERALS[p])}")
        elif not isinstance(value, _TYPES[p]) or (isinstance(value, bool) and bool not in _TYPES[p]):
            _fail(f"{where}.{p}.value", f"expected {' or '.join(t.__name__ for t in _TYPES[p])}, got {json.dumps(value)[:40]}")
        if p in _POSITIVE and value is not None and value < 1:
            _fail(f"{where}.{p}.value", f"must be at least 1, got {value}")
        if p in _RANGES and value is not None and not _RANGES[p][0] <= value <= _RANGES[p][1]:
            _fail(f"{where}.{p}.value", f"{str(value)[:40]} is out of range: {_RANGES[p][0]} to {_RANGES[p][1]}"
                  + (" (null for exact alignment)" if p == "align_frac_bits" else ""))
        values[p] = value
        provenance[p] = _string(entry["provenance"], f"{where}.{p}.provenance")
    try:
        return Datapath(**values, provenance=provenance)
    except ValueError as e:
        raise ProfileFileError(f"{where}: {e}") from None


def profile_from_dict(data: Any) -> Profile:
    """A profile from its `as_dict()` form; ProfileFileError (one line, with the JSON path) when
    malformed. Keys other than the profile's own (an inference report's "inference") are refused
    unless listed in `_EXTRA_KEYS`."""
    data = _object(data, "$", {"name", "description", "int_overflow", "datapaths"},
                   {"default", "unsupported", "provenance", "widened_inputs", "scaled_datapaths", *_EXTRA_KEYS})
    overflow = _object(data["int_overflow"], "$.int_overflow", {"value", "provenance"})
    if overflow["value"] not in ("wrap", "saturate"):
        _fail("$.int_overflow.value", f"{json.dumps(overflow['value'])[:40]} is not one of wrap, saturate")
    datapaths = {}
    if not isinstance(data["datapaths"], dict):
        _fail("$.datapaths", "expected an object")
    for key, value in data["datapaths"].items():
        pair = key.split("->")
        if len(pair) != 2 or not all(pair):
            _fail(f"$.datapaths.{key}", "expected a key 'input->accumulator', e.g. 'f16->f32'")
        datapaths[tuple(pair)] = datapath_from_dict(value, f"$.datapaths.{key}")
    default = datapath_from_dict(data["default"], "$.default") if "default" in data else None
    scaled = {}
    if not isinstance(data.get("scaled_datapaths", {}), dict):
        _fail("$.scaled_datapaths", "expected an object")
    for key, value in data.get("scaled_datapaths", {}).items():
        kind, _, pair = key.partition(":")
        formats = pair.split("->")
        if kind not in SCALED_KINDS or len(formats) != 2 or not all(formats):
            _fail(f"$.scaled_datapaths.{key}", f"expected a key 'kind:input->accumulator' (kind one of "
                  f"{', '.join(SCALED_KINDS)}), e.g. 'mxf4:e2m1->f32'")
        scaled[(kind, formats[0], formats[1])] = datapath_from_dict(value, f"$.scaled_datapaths.{key}")
    extra = {}
    for key in ("unsupported", "provenance"):
        value = data.get(key, {})
        if not isinstance(value, dict):
            _fail(f"$.{key}", "expected an object")
        extra[key] = {k: _string(v, f"$.{key}.{k}") for k, v in value.items()}
    target = extra["provenance"].get("target")
    if target is not None and target not in TARGETS:
        _fail("$.provenance.target", f"{json.dumps(target)[:40]} is not a target ({', '.join(TARGETS)})")
    if "widened_inputs" in data:
        widened = _object(data["widened_inputs"], "$.widened_inputs", {"value", "provenance"})
        if not isinstance(widened["value"], dict):
            _fail("$.widened_inputs.value", "expected an object (input format -> format)")
        extra["widened_inputs"] = {k: _string(v, f"$.widened_inputs.value.{k}") for k, v in widened["value"].items()}
        for k, v in extra["widened_inputs"].items():
            try:
                get_format(k), get_format(v)
            except ValueError as e:
                _fail(f"$.widened_inputs.value.{k}", str(e))
        extra["widened_inputs_provenance"] = _string(widened["provenance"], "$.widened_inputs.provenance")
    return Profile(name=_string(data["name"], "$.name"), description=_string(data["description"], "$.description"),
                   datapaths=datapaths, default=default, int_overflow=overflow["value"], scaled_datapaths=scaled,
                   int_overflow_provenance=_string(overflow["provenance"], "$.int_overflow.provenance"), **extra)


#: Top-level keys a profile file may carry besides the profile (`numerics infer` writes its
#: evidence under "inference"); ignored when loading.
_EXTRA_KEYS = ("inference",)


def _check_fields() -> None:
    names = {f.name for f in fields(Datapath)} - {"provenance"}
    assert names == set(PARAMETERS), names


def unregistered_names(registry: Mapping[str, Profile]) -> list[str]:
    """What keeps `registry` from matching the profile names of `tcgen05_conformance.core.numeric_profiles`:
    each name without a profile, and each profile that is neither a name nor an instruction-family
    variant `<name>.<family>` of one."""
    missing = [f"profile {name!r} has no model" for name in PROFILE_NAMES if name not in registry]
    return missing + [f"profile {name!r} is not named in conformance/core/numeric_profiles.py"
                      for name in registry if name.split(".")[0] not in PROFILE_NAMES]


def _check_names() -> None:
    problems = unregistered_names(PROFILES)
    if problems:
        raise ImportError("; ".join(problems))


_check_fields()
_check_names()
