"""Catch rates of the discriminating vector families: how often each family of
`tcgen05_conformance.generators.numeric_vectors` exposes a one-parameter change of a hardware profile's datapath,
measured through the numeric model (`tcgen05-conformance numerics catch-rates`; the tables of
docs/numerics.md, "Discriminating vectors").

The families are drawn from number formats alone; judging them needs the model, so the
measurement lives here, on the tools floor, and the generators never import the oracle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from tcgen05_conformance.generators.numeric_vectors import FAMILIES, draw_vectors
from tcgen05_conformance.oracles.numerics import Datapath, get_profile, inner_product

#: Datapath parameters changed one at a time by :func:`catch_rates`.
PERTURBATIONS: dict[str, Callable[[Datapath], dict]] = {
    "align_frac_bits-1": lambda dp: {"align_frac_bits": dp.align_frac_bits - 1},
    "align_frac_bits+1": lambda dp: {"align_frac_bits": dp.align_frac_bits + 1},
    "group_rounding": lambda dp: {"group_rounding": "rz" if dp.group_rounding == "rne" else "rne"},
    "k_step/2": lambda dp: {"k_step": dp.k_step // 2},
    "c_entry": lambda dp: {"c_entry": "final_add" if dp.c_entry == "first_group" else "first_group"},
    "subnormal_outputs": lambda dp: {"subnormal_outputs": not dp.subnormal_outputs},
    "subnormal_inputs": lambda dp: {"subnormal_inputs": not dp.subnormal_inputs},
    "zero_sign": lambda dp: {"zero_sign": "ieee" if dp.zero_sign == "positive" else "positive"},
}

#: The families built to expose each of the first five perturbations.
TARGETS: dict[str, tuple[str, ...]] = {
    "align_frac_bits-1": ("alignment", "normalisation"),
    "align_frac_bits+1": ("alignment", "normalisation"),
    "group_rounding": ("rounding",),
    "k_step/2": ("normalisation", "cancellation"),
    "c_entry": ("cancellation",),
}

def catch_rates(in_fmt: str, acc_fmt: str, n: int = 2000, seed: int = 11, profile: str = "sm_100a") -> dict[str, dict[str, float]]:
    """{perturbation: {family: fraction of n vectors whose result changes}} for one datapath
    of a hardware profile, each family drawn with K = the datapath's k_step from ``seed``."""
    base = get_profile(profile)
    dp = base.datapath(in_fmt, acc_fmt)
    draws = {f: draw_vectors(f, in_fmt, acc_fmt, dp.k_step, n, np.random.default_rng(seed)) for f in FAMILIES}
    expected = {f: inner_product(*draws[f], in_fmt, acc_fmt, base) for f in FAMILIES}
    rates = {}
    for name, change in PERTURBATIONS.items():
        varied = dataclasses.replace(base, datapaths={**base.datapaths, (in_fmt, acc_fmt): dataclasses.replace(dp, **change(dp))})
        rates[name] = {f: float(np.mean(inner_product(*draws[f], in_fmt, acc_fmt, varied) != expected[f])) for f in FAMILIES}
    return rates

