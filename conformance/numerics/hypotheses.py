"""The space `numerics infer` searches: the datapath parameters with their neutral values, the
fused-group structures a K allows (their signatures and groups), a full assignment as a Datapath, and
the pools of directed vectors and per-parameter outcomes the search keeps. Every other inference
module builds on these, so they sit below all of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS, Datapath, Profile

STRUCTURE = "structure"  # (k_step, split_ways, split_stride), searched together
SEARCHED = (STRUCTURE, "align_frac_bits", "group_precision", "group_rounding", "c_entry", "final_rounding",
            "subnormal_inputs", "subnormal_outputs", "align_floor", "zero_sign")
#: tcgen05 instruction kinds of the input formats (PTX ISA Table 39): datapaths of one kind and
#: accumulator lend each other the parameters their own formats cannot reach.
KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "e4m3": "f8f6f4", "e5m2": "f8f6f4", "e3m2": "f8f6f4",
        "e2m3": "f8f6f4", "e2m1": "f8f6f4"}
#: Neutral values of parameters nothing settles (the exact datapath's, IEEE's).
NEUTRAL = {"align_frac_bits": None, "group_precision": None, "group_rounding": "rne", "c_entry": "first_group",
           "final_rounding": "rne", "subnormal_inputs": True, "subnormal_outputs": True, "align_floor": None,
           "zero_sign": "ieee"}
F_MAX = 64  # alignment widths searched: 0 .. F_MAX and None (exact); wider ones act as None on every pool here


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def structures(k: int) -> list[tuple[int, int, int]]:
    """Every (k_step, split_ways, split_stride) that partitions K products differently: k_step a
    divisor of K, 1, 2, 4 or 8 ways dealt in runs of `stride` (a power of two, ways x stride <=
    k_step; stride 1 for one way), K itself standing for "all products in one step"."""
    seen: dict[tuple, tuple[int, int, int]] = {}
    for step in divisors(k):
        for ways in (w for w in (1, 2, 4, 8) if step % w == 0):
            strides = [1] if ways == 1 else [s for s in (1, 2, 4, 8, 16, 32) if ways * s <= step]
            for stride in strides:
                seen.setdefault(signature(k, step, ways, stride), (step, ways, stride))
    return list(seen.values())


def signature(k: int, step: int, ways: int, stride: int) -> tuple[tuple[int, int], ...]:
    """(step, group) of each product position: equal signatures compute alike."""
    return tuple((i // step, ((i % step) // stride) % ways) for i in range(k))


def groups_of(k: int, structure: tuple[int, int, int]) -> list[list[int]]:
    """Positions of each fused group, in the order the datapath adds them."""
    step, ways, stride = structure
    sig = signature(k, step, ways, stride)
    order = sorted(set(sig))
    return [[i for i in range(k) if sig[i] == g] for g in order]


# ----------------------------------------------------------------------------- hypotheses


def datapath(values: dict[str, Any], instruction: str = "hypothesis", provenance: dict | None = None) -> Datapath:
    """The datapath of a full assignment of SEARCHED parameters."""
    step, ways, stride = values[STRUCTURE]
    fields_ = {p: values[p] for p in SEARCHED if p != STRUCTURE}
    prov = provenance or {p: "hypothesis" for p in PARAMETERS}
    return Datapath(instruction=instruction, k_step=step, split_ways=ways, split_stride=stride, **fields_,
                    provenance=prov)


def _as_profile(dp: Datapath, in_fmt: str, acc_fmt: str) -> Profile:
    return Profile(name="hypothesis", description="inference hypothesis", datapaths={(in_fmt, acc_fmt): dp})


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.dtype(x.dtype.str.replace("i", "u"))) if x.dtype.kind == "i" else x


@dataclass
class Pool:
    """A batch of directed vectors, what the source returned for them, and what they test."""

    stage: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    observed: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.c)


@dataclass
class Outcome:
    """What inference found for one parameter: its allowed values, the stage and vectors that
    settled it, and how the final value was chosen when several remain."""

    allowed: list
    stage: str = ""
    vectors: int = 0
    chosen_by: str = "determined"  # "determined", "donor <in->acc>", "neutral"


class Inconsistent(RuntimeError):
    """No datapath of the model reproduces a source's answers; the message says where."""
