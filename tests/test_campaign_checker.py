"""The campaign's integer-checker reference (`tcgen05_conformance.campaign.checker`): the kernel
`reference_products`, built for the CPU, against the Python model on the matrix products the
oracle reads from drawn Hopper programs of every modelled form (dense and sparse wgmma, A in
registers, warp-level mma.sp; float, mixed fp8 and integer kinds) and on block-scaled tcgen05
products, and the sample check."""

from __future__ import annotations

import shutil
from collections import defaultdict

import numpy as np
import pytest

from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.campaign.checker import ElementPerWord, HostReference, disagreement, model_sample, operands
from tcgen05_conformance.core.formats import code_bits, get_format
from tcgen05_conformance.device.hopper_batch import pack_d
from tcgen05_conformance.device.ptx.kernels import HopperForm, hopper_form
from tcgen05_conformance.oracles.execute import matrix_products
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct, evaluate

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the checker's CPU build needs g++")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> HostReference:
    return HostReference(str(tmp_path_factory.mktemp("checker")))


def launch_groups(seed: int, chunks: range) -> list[tuple[HopperForm, list]]:
    """The oracle's matrix products of drawn campaign chunks, grouped by kernel form as a campaign
    launches them: (form, products)."""
    settings = tool.Settings(programs=4000, seed=seed, data_sets=2, chunk=200)
    groups: dict[HopperForm, list] = defaultdict(list)
    for c in chunks:
        _, programs = tool.draw_chunk(c, settings)
        for p, product in zip(programs, matrix_products(programs, "sm_90a")):
            if product is not None and not isinstance(product, Exception):
                groups[hopper_form(p)].append(product)
    return list(groups.items())


@pytest.fixture(scope="module")
def groups() -> list[tuple[HopperForm, list]]:
    return launch_groups(11, range(4))


def test_the_draw_reaches_every_kind_of_product(groups):
    """The comparison below covers dense and sparse products, mixed and integer formats."""
    firsts = [g[0] for _, g in groups]
    assert any(p.columns is not None for p in firsts) and any(p.columns is None for p in firsts)
    assert any(p.afmt != p.bfmt for p in firsts)
    assert any(p.acc == "s32" for p in firsts) and any(p.acc == "f16" for p in firsts)
    assert any(p.a.shape[0] == 16 for p in firsts), "warp-level mma.sp"


def test_the_checker_kernel_computes_the_models_d_as_the_kernel_stores_it(groups, reference):
    compared = 0
    for form, products in groups:
        ops = operands(products, {})
        words = reference(ops, form)
        assert np.array_equal(words, pack_d(form, np.stack(evaluate(products)))), (products[0].afmt, products[0].acc)
        compared += ops.inner_products
    assert compared > 10**5


def test_the_checker_kernel_counts_the_words_that_differ_per_program(groups, reference):
    """With the tensor core's words given, `reference_products` adds up per program the words in
    which they differ from its own, and still stores its own words."""
    form, products = max(groups, key=lambda g: len(g[1]))
    ops = operands(products, {})
    words = reference(ops, form)
    rng = np.random.default_rng(5)
    observed = words.copy().reshape(len(words), -1)
    planted = rng.random(observed.shape) < 0.05
    planted[0] = False  # one program as the checker has it
    observed[planted] ^= rng.integers(1, 2**32, planted.sum(), dtype=np.uint32)
    got, differing = reference.compared(ops, form, observed.reshape(words.shape))
    assert np.array_equal(got, words)
    assert np.array_equal(differing, planted.sum(axis=1)) and differing[1:].all() and differing[0] == 0
    assert not reference.compared(ops, form, words)[1].any()


def test_the_sample_is_every_nth_program_and_a_difference_is_named(groups, reference):
    """`model_sample` evaluates every N-th product; `disagreement` names a sampled element the
    checker got wrong, and passes over elements outside the sample."""
    form, products = max(groups, key=lambda g: len(g[1]))
    sample = model_sample(products, 3)
    assert sorted(sample) == list(range(0, len(products), 3))
    ops = operands(products, sample)
    assert list(ops.sample) == sorted(sample)
    d = np.stack(evaluate(products))
    assert disagreement(ops, form, reference(ops, form), "group") is None
    d[3, 2, 1] ^= 1
    message = disagreement(ops, form, pack_d(form, d), "group")
    assert message.startswith("group: the integer checker's D differs from the Python model's in 1 element(s)")
    assert "program 3 of the group, D[2, 1]" in message
    d[3, 2, 1] ^= 1
    d[1, 0, 0] ^= 1  # outside the sample: not the sample check's to see
    assert disagreement(ops, form, pack_d(form, d), "group") is None


def test_the_exact_profile_has_no_checker_and_falls_back_to_the_model(groups):
    _, programs = tool.draw_chunk(0, tool.Settings(programs=400, seed=3, data_sets=4, chunk=400))
    floats = next(programs[i:i + 4] for i in range(0, len(programs), 4) if programs[i].ops[0].dtype == "f32")
    products = matrix_products(floats, "exact")
    with pytest.raises(ValueError, match="truncating datapaths"):
        operands(products, {})
    form = hopper_form(floats[0])
    words, ops = tool.expected_of(list(range(4)), products, {}, form)
    assert ops is None and np.array_equal(words, pack_d(form, np.stack(evaluate(products))))


def _scaled_products(kind: str, fmt: str, scale_fmt: str, k: int, factors: int, count: int, rng) -> list[MatrixProduct]:
    """Random block-scaled tcgen05 products of `kind` (M = 16, N = 8): every code of the input
    format; scale factors near 1 with one in 50 any code (NaN included); c mostly finite, with
    signed zeros, a subnormal, Inf and NaN."""
    m, n = 16, 8
    code = (1 << code_bits(get_format(fmt))) - 1
    c_values = rng.choice([0.0, -0.0, 1.0, -3.5, 2.0**-130, 1e30, np.inf, np.nan], (m, n),
                          p=[0.2, 0.2, 0.2, 0.2, 0.06, 0.06, 0.04, 0.04]).astype(np.float32)

    def scales(rows: int) -> np.ndarray:
        near_one = 127 if scale_fmt == "ue8m0" else 0x38  # 1.0 in ue8m0 and ue4m3
        out = near_one + rng.integers(-6, 7, (rows, factors))
        wild = rng.random((rows, factors)) < 0.02
        out[wild] = rng.integers(0, 256 if scale_fmt == "ue8m0" else 128, wild.sum())
        return out.astype(np.uint32)

    return [MatrixProduct(rng.integers(0, code + 1, (m, k), dtype=np.uint32), rng.integers(0, code + 1, (n, k), dtype=np.uint32),
                          c_values.view(np.uint32), fmt, fmt, "f32", "sm_100a", a_scale=scales(m), b_scale=scales(n),
                          scale_fmt=scale_fmt, kind=kind)
            for _ in range(count)]


@pytest.mark.parametrize("kind, fmt, scale_fmt, k, factors", [
    ("mxf8f6f4", "e4m3", "ue8m0", 32, 1), ("mxf8f6f4", "e2m3", "ue8m0", 32, 1), ("mxf4", "e2m1", "ue8m0", 64, 2),
    ("mxf4nvf4", "e2m1", "ue4m3", 64, 4), ("mxf4", "e2m1", "ue8m0", 128, 4),  # the last: a sparse mxf4's logical K
])
def test_the_checker_kernel_computes_block_scaled_tcgen05_products(reference, kind, fmt, scale_fmt, k, factors):
    """`decode_operands` and `reference_products` read a launch group's scale factors where
    `operands` puts them and compute the Python model's D of block-scaled tcgen05 products, the
    fp4 kinds' sub-sums included (one element per word: a tcgen05 f32 D)."""
    products = _scaled_products(kind, fmt, scale_fmt, k, factors, 6, np.random.default_rng(k + factors))
    ops = operands(products, {})
    assert ops.factors == factors and np.array_equal(ops.scales[1][2], products[2].b_scale)
    want = np.stack(evaluate(products))
    values = want.view(np.float32)
    assert np.isnan(values).any() and np.isinf(values).any() and np.isfinite(values).mean() > 0.5  # specials drawn
    assert np.array_equal(reference(ops, ElementPerWord(16, 8)).reshape(want.shape), want)
