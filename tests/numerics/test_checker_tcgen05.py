"""The integer checker (host build of oracles/numerics/checker.h) agrees bit for bit with the Python
model (`oracles/numerics/model.py`, the reference) on every tcgen05.mma numeric form.

Why: the checker stands in for the model wherever results are checked at the GPU's speed, so each
form it is trusted with must be shown to give the model's codes. The forms come from the profile
and the ISA, not from a list written here:

* every form of `tcgen05_inner_products.forms` for sm_100a and sm_103a (both judged by the sm_100a
  profile, the one that models tcgen05.mma: `numerics measure --tcgen05` defaults to it, and it is
  the Blackwell profile that `judge.applies` to an sm_103a program; K = 96 under assumption
  A-TCGEN05-GST-K96), forms giving identical checker parameters checked once;
* every mixed A x B pair of kind::f8f6f4 (f32 and f16 accumulators) and kind::mxf8f6f4;
* every structured-sparse form (Table 39's sparse K, M = 128): the tcgen05 oracle expands the
  stored A into a dense row of the logical K with zeros where the metadata selects nothing
  (`oracles.mma.expand_sparse`) and hands the model that row with the dense form's scale factors
  per row, so the checker is run on such rows (K up to 128 for mxf4 / mxf4nvf4).

Vectors: `numeric_vectors.mix` (every family: specials, subnormals, cancellation, alignment
ladders, ...) with, for the block-scaled kinds, `draw_scales` shuffled over the rows as
`numerics agree` draws them; ROWS per form, a fixed seed. A datapath one parameter away from the
profile's must fail the same cross-check, and `parameters` refuses what the checker cannot do.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.tmem import META_CHUNK_ELEMENTS
from tcgen05_conformance.device.tcgen05_inner_products import Tcgen05Form, forms
from tcgen05_conformance.generators.numeric_vectors import draw_scales, mix
from tcgen05_conformance.oracles.mma import expand_sparse
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.oracles.numerics.model import datapath_of
from tcgen05_conformance.oracles.numerics.profiles import F8F6F4, Profile, get_profile

PROFILE = "sm_100a"  # the profile of tcgen05.mma, for sm_100a and sm_103a alike
TARGETS = ("sm_100a", "sm_103a")
SEED = 20261207
ROWS = 20_000  # per parameter set: 2,000 per vector family, 4,000 per scale family


@dataclass(frozen=True)
class Case:
    """One checker parameter set and the vectors it is checked on: A x B -> acc, K products per
    row, `factors` block scales per row (0: unscaled) of `scale_fmt`, for the forms in `forms`;
    `sparse_kind` set: rows of the logical K whose A holds zeros where sparsity metadata of that
    kind selects nothing. The checker's parameters come from the profile (PROFILE), the expected
    codes from the model under `profile` (PROFILE but for a mutant's own model)."""

    label: str
    a_fmt: str
    b_fmt: str
    acc: str
    k: int
    factors: int = 0
    scale_fmt: str | None = None
    kind: str | None = None  # the block-scaled kind (the model's datapath of it)
    saturate: bool | None = None  # integer kinds: .satfinite
    sparse_kind: str | None = None
    forms: tuple[str, ...] = ()
    profile: str | Profile = PROFILE  # the model's profile (a mutant's, to show the mutant checker is its model)

    def parameters(self, datapath=None) -> np.ndarray:
        return checker.parameters(self.a_fmt, self.acc, self.k, PROFILE, b_fmt=self.b_fmt, saturate=self.saturate,
                                  datapath=datapath, scale_fmt=self.scale_fmt, factors=self.factors, kind=self.kind)

    def model(self, a, b, c, scales) -> np.ndarray:
        extra = {} if not scales else {"a_scale": scales[0], "b_scale": scales[1], "scale_fmt": self.scale_fmt,
                                       "kind": self.kind}
        return checker.model_codes(a, b, c, self.a_fmt, self.acc, self.profile, self.saturate, self.b_fmt, **extra)


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(label.encode())])


def _inputs(case: Case) -> str | tuple[str, str]:
    return case.a_fmt if case.a_fmt == case.b_fmt else (case.a_fmt, case.b_fmt)


def scaled_rows(case: Case, k: int, rows: int, rng: np.random.Generator):
    """`rows` vectors of every `mix` family (K = k) and, for a block-scaled case, scale rows of
    every `draw_scales` family shuffled over them (as `numerics agree` draws them): a, b, c,
    [a_scale, b_scale] or []."""
    a, b, c, _ = mix(_inputs(case), case.acc, k, rows, rng)
    if not case.factors:
        return a, b, c, []
    a_scale, b_scale = draw_scales(case.scale_fmt, rows, case.factors, rng)
    order = rng.permutation(rows)
    return a, b, c, [a_scale[order], b_scale[order]]


def sparse_rows(case: Case, rows: int, rng: np.random.Generator):
    """Rows of the logical K as the tcgen05 oracle builds them for a sparse A: `mix` vectors of
    the stored K = K / 2 placed by random legal metadata (`expand_sparse`, zeros elsewhere in A);
    B's unselected elements from an independent draw shuffled over the rows (on some rows Inf or
    NaN, multiplied by A's zeros as the oracle does)."""
    stored = case.k // 2
    a_s, b_s, c, scales = scaled_rows(case, stored, rows, rng)
    filler = mix(_inputs(case), case.acc, stored, rows, rng)[1][rng.permutation(rows)]
    kind = case.sparse_kind
    values = np.array(isa.SPARSITY_METADATA_VALUES[isa.SPARSITY_GRANULARITY[kind]], np.uint8)
    meta = values[rng.integers(0, values.size, (rows, case.k // META_CHUNK_ELEMENTS[kind]))]
    a = expand_sparse(a_s, meta, kind, "A")
    selected = expand_sparse(np.ones_like(a_s), meta, kind, "A") != 0
    b = np.where(selected, expand_sparse(b_s, meta, kind, "A"), np.concatenate([filler, filler], axis=1))
    return a, b, c, scales


def vectors(case: Case, rows: int = ROWS):
    rng = _rng(case.label)
    return sparse_rows(case, rows, rng) if case.sparse_kind else scaled_rows(case, case.k, rows, rng)


def check(host: checker.HostChecker, case: Case, params: np.ndarray, rows: int = ROWS) -> int:
    """Cross-check the checker built from `params` against the model on `case`'s vectors."""
    a, b, c, scales = vectors(case, rows)
    got = host.dot(params, a, b, c, *scales)
    return checker.cross_check(got, case.model(a, b, c, scales), a, b, c, case.label)


# --- the cases ----------------------------------------------------------------------------------


def case_of(form: Tcgen05Form, k: int | None = None, sparse: bool = False) -> Case:
    """The case of one form (at K = k, the sparse logical K, when given)."""
    label = form.id + (".sparse" if sparse else "")
    return Case(label, form.in_fmt, form.in_fmt, form.acc, k or form.k, form.factors, form.scale_fmt,
                form.kind if form.scale_fmt else None, form.satfinite if form.acc == "s32" else None,
                form.kind if sparse else None, (label,))


def distinct(cases) -> list[Case]:
    """One case per checker parameter array (and vector construction), naming every form it stands for."""
    out: dict[tuple, Case] = {}
    for c in cases:
        key = (c.parameters().tobytes(), c.sparse_kind is not None)
        first = out.get(key)
        out[key] = c if first is None else dataclasses.replace(first, forms=first.forms + c.forms)
    return list(out.values())


def sparse_k(form: Tcgen05Form) -> int:
    """Table 39's logical K of the sparse form of `form` (M = 128, one CTA)."""
    return isa.shape_class_for(form.kind, False, 1, True, 128).k


def mixed_pairs(form: Tcgen05Form) -> list[Case]:
    """`form` (kind::f8f6f4 or kind::mxf8f6f4) with A and B of every two different formats (PTX
    takes any A format with any B format for these kinds)."""
    base = case_of(form)
    scaling = f".{form.scale_fmt}" if form.scale_fmt else ""
    return [dataclasses.replace(base, label=f"tcgen05.{form.kind}.{a}x{b}.{form.acc}{scaling}", a_fmt=a, b_fmt=b,
                                forms=()) for a in F8F6F4 for b in F8F6F4 if a != b]


DENSE = distinct(case_of(f) for t in TARGETS for f in forms(t))
# one form per kind and accumulator: the scale vectors of kind::mxf8f6f4 give the same parameters
MIXED = [c for f in forms("sm_100a") if f.kind in ("f8f6f4", "mxf8f6f4") and f.in_fmt == F8F6F4[0]
         and f.scale_vec in (None, "scale_vec::1X") for c in mixed_pairs(f)]
SPARSE = distinct(case_of(f, sparse_k(f), sparse=True) for f in forms("sm_100a") if not f.k96)


def test_the_forms_cover_every_tcgen05_kind_on_both_targets():
    """The cases are built from `forms`: were it to lose a kind or K = 96, so would this module."""
    kinds = {t: {f.kind for f in forms(t)} for t in TARGETS}
    every = {"f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"}
    assert kinds["sm_100a"] == every and kinds["sm_103a"] == every - {"i8"}  # kind::i8 is not on sm_103a
    assert {f.k for f in forms("sm_103a") if f.k96} == {96}
    covered = {name for c in DENSE for name in c.forms}
    assert covered == {f.id for t in TARGETS for f in forms(t)}
    assert {c.sparse_kind for c in SPARSE} == every and max(c.k for c in SPARSE) == 128
    assert len(MIXED) == 3 * 20


@pytest.mark.parametrize("case", DENSE, ids=[c.label for c in DENSE])
def test_checker_agrees_with_the_model_on_every_form(host, case):
    assert check(host, case, case.parameters()) == ROWS


@pytest.mark.parametrize("case", MIXED, ids=[c.label for c in MIXED])
def test_checker_agrees_with_the_model_on_every_mixed_pair(host, case):
    assert check(host, case, case.parameters()) == ROWS


@pytest.mark.parametrize("case", SPARSE, ids=[c.label for c in SPARSE])
def test_checker_agrees_with_the_model_on_every_sparse_form(host, case):
    assert check(host, case, case.parameters()) == ROWS


# --- a datapath one parameter away is caught ------------------------------------------------------


def _dense(form_id: str) -> Case:
    return next(c for c in DENSE if form_id in c.forms)


@pytest.mark.parametrize("form_id, change", [
    ("tcgen05.mxf4.e2m1.f32.block32.ue8m0", lambda dp: {"block_group": 8}),
    ("tcgen05.mxf4nvf4.e2m1.f32.4X.ue4m3", lambda dp: {"block_group": 8}),
    ("tcgen05.mxf4.e2m1.f32.block32.ue8m0", lambda dp: {"align_frac_bits": dp.align_frac_bits - 1}),
    ("tcgen05.mxf4.e2m1.f32.block32.ue8m0.k96", lambda dp: {"align_frac_bits": dp.align_frac_bits + 1}),
    ("tcgen05.mxf4.e2m1.f32.block32.ue8m0", lambda dp: {"group_rounding": "rne"}),
    ("tcgen05.mxf8f6f4.e4m3.f32.1X.ue8m0", lambda dp: {"align_frac_bits": dp.align_frac_bits - 1}),
    ("tcgen05.mxf8f6f4.e2m1.f32.1X.ue8m0", lambda dp: {"align_frac_bits": dp.align_frac_bits + 1}),
    ("tcgen05.mxf8f6f4.e2m3.f32.1X.ue8m0", lambda dp: {"block_group": 16}),  # sub-sums, not each product alone
], ids=["mxf4-group8", "mxf4nvf4-4X-group8", "mxf4-align-1", "mxf4-k96-align+1", "mxf4-rne", "mxf8f6f4-e4m3-align-1",
        "mxf8f6f4-e2m1-align+1", "mxf8f6f4-e2m3-group16"])
def test_a_mutant_datapath_fails_the_cross_check(host, form_id, change):
    """A checker built from a datapath one parameter away from the profile's must be caught on the
    same vectors; it gives what the model gives under that datapath (so the difference is the
    datapath's, not a parameter array the checker misreads)."""
    case = _dense(form_id)
    profile = get_profile(PROFILE)
    dp = datapath_of(profile, case.a_fmt, case.b_fmt, case.acc, kind=case.kind)
    mutant = dataclasses.replace(dp, **change(dp))
    params = case.parameters(datapath=mutant)
    with pytest.raises(checker.CrossCheckError, match="differs from the Python model"):
        check(host, case, params)
    scaled = {**profile.scaled_datapaths, (case.kind, case.a_fmt, case.acc): mutant}
    mutant_case = dataclasses.replace(case, profile=dataclasses.replace(profile, name="mutant", scaled_datapaths=scaled))
    assert check(host, mutant_case, params) == ROWS


# --- what the checker cannot do is refused --------------------------------------------------------


@pytest.mark.parametrize("arguments, message", [
    (dict(scale_fmt="ue8m0"), "both its scale format and its factors"),
    (dict(factors=2), "both its scale format and its factors"),
    (dict(scale_fmt="ue8m0", factors=3), "3 scale factors do not split K = 64"),
], ids=["scale-format-without-factors", "factors-without-scale-format", "factors-not-dividing-k"])
def test_parameters_refuse_a_block_scaling_the_checker_cannot_do(arguments, message):
    with pytest.raises(ValueError, match=message):
        checker.parameters("e2m1", "f32", 64, PROFILE, kind="mxf4", **arguments)


def test_parameters_refuse_a_block_group_that_does_not_divide_the_block():
    """The model refuses sub-sums that straddle two blocks' scales (model._block_sums); the checker's
    parameters refuse them too rather than compute something else."""
    dp = get_profile("sm_100a").scaled_datapaths[("mxf4nvf4", "e2m1", "f32")]
    with pytest.raises(ValueError, match="block_group of 32 products needs K"):
        checker.parameters("e2m1", "f32", 64, "sm_100a", scale_fmt="ue4m3", factors=4, kind="mxf4nvf4",
                           datapath=dataclasses.replace(dp, block_group=32))


def test_parameters_refuse_a_scale_format_whose_products_would_not_fit_32_bits():
    """A scaled product's significand is computed in 32 bits: scale formats of up to 3 fraction bits
    (ue8m0, ue4m3) fit; a wider one is refused rather than wrapped."""
    with pytest.raises(ValueError, match="at most 3 fraction bits, not f16's 10"):
        checker.parameters("e4m3", "f32", 32, "sm_100a", scale_fmt="f16", factors=1, kind="mxf8f6f4")
