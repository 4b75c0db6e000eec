"""The tcgen05 inner-product harness without a GPU: every form's batch kernel assembles for its
targets (ptxas in-process), a tile's images put each operand where the oracle's reading of the
ISA layouts fetches it (the oracle, run on the tile as a Program, returns the inner products the
model computes directly), the shared-memory image matches the canonical K-major layout worked by
hand, the shared measurement driver round-trips a chunk through a GPU simulated by the oracle and
catches a planted one-bit error, and the plumbing self-check names what broke."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tcgen05_conformance.campaign.checker import HostReference, tiles_checked
from tcgen05_conformance.numerics import measure
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device import tcgen05_inner_products as tc
from tcgen05_conformance.device.assembler import assemble
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError
from tcgen05_conformance.generators.numeric_vectors import mix
from tests.conftest import needs_assembler

REPRESENTATIVE = ["tcgen05.f16.f16.f32", "tcgen05.f8f6f4.e3m2.f16", "tcgen05.mxf4nvf4.e2m1.f32.block16.ue4m3",
                  "tcgen05.mxf4.e2m1.f32.block32.ue8m0.k96", "tcgen05.i8.s8.s32.satfinite"]


def form_named(name: str) -> tc.Tcgen05Form:
    for target in ("sm_100a", "sm_103a"):
        for f in tc.forms(target):
            if f.id == name:
                return f
    raise KeyError(name)


def test_forms_cover_every_kind_format_and_scale_vector():
    """Table 39 kinds and formats, Tables 54-55 scalings; i8 only on sm_100a, K = 96 only on sm_103a."""
    ids100 = {f.id for f in tc.forms("sm_100a")}
    ids103 = {f.id for f in tc.forms("sm_103a")}
    for fmt in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
        assert {f"tcgen05.f8f6f4.{fmt}.f32", f"tcgen05.f8f6f4.{fmt}.f16", f"tcgen05.mxf8f6f4.{fmt}.f32.1X.ue8m0"} <= ids100
    assert {"tcgen05.f16.bf16.f32", "tcgen05.tf32.tf32.f32", "tcgen05.i8.u8.s32", "tcgen05.mxf4.e2m1.f32.2X.ue8m0",
            "tcgen05.mxf4nvf4.e2m1.f32.4X.ue4m3", "tcgen05.mxf4nvf4.e2m1.f32.block16.ue8m0"} <= ids100
    assert not any("k96" in i for i in ids100) and not any(".i8." in i for i in ids103)
    assert {"tcgen05.mxf4.e2m1.f32.block32.ue8m0.k96", "tcgen05.mxf4nvf4.e2m1.f32.block16.ue4m3.k96"} <= ids103


@needs_assembler
def test_every_batch_kernel_assembles_for_its_targets():
    for target in ("sm_100a", "sm_103a"):
        for f in tc.forms(target):
            result = assemble(f.kernel(), target)
            assert result.ok, (f.id, target, result.diagnostics[:2])


def random_tile(f: tc.Tcgen05Form, seed: int):
    rng = np.random.default_rng(seed)
    a, _, c, _ = mix(f.in_fmt, f.acc, f.k, f.m, rng)
    b = mix(f.in_fmt, f.acc, f.k, f.n, rng)[1]
    cm = np.broadcast_to(c[:, None], (f.m, f.n)).copy()
    sa = sb = None
    if f.scale_fmt:
        sa, sb = (x[0] for x in measure.scales_of(measure.Combination("tcgen05", f.in_fmt, f.acc, form=f), 1, seed))
    return a, b, cm, sa, sb


def expected(f: tc.Tcgen05Form, a, b, cm, sa, sb, profile: str) -> np.ndarray:
    m, n = f.m, f.n
    kw = {}
    if sa is not None:
        kw = {"a_scale": np.repeat(sa, n, axis=0), "b_scale": np.tile(sb, (m, 1)), "scale_fmt": f.scale_fmt}
    return inner_product(np.repeat(a, n, axis=0), np.tile(b, (m, 1)), cm.reshape(-1), f.in_fmt, f.acc, profile,
                         saturate=f.satfinite if f.acc == "s32" else None, **kw).reshape(m, n)


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_tile_images_are_where_the_oracle_reads_the_operands(name):
    """One tile as a Program: the oracle's D (read through its own layout code) is the model's
    inner product of A row m and B row n (with their scales) plus C[m, n], for every element."""
    f = form_named(name)
    a, b, cm, sa, sb = random_tile(f, seed=1)
    smem, tmem = f.pack(a[None], b[None], cm[None], None if sa is None else sa[None], None if sb is None else sb[None])
    state = run(f.program(smem, tmem), "sm_100a")
    got = f.unpack(np.stack([state.tmem[cta][:, :f.image_columns] for cta in range(f.ctas)]))[0]
    want = expected(f, a, b, cm, sa, sb, "sm_100a")
    assert np.array_equal(got.view(want.dtype), want)


def test_shared_memory_image_is_the_canonical_k_major_layout():
    """9.7.16.3.3 without swizzle: element (row, k) of a 16-bit A at byte (row // 8) * 128 + (k // 8)
    * LBO + (row % 8) * 16 + (k % 8) * 2, LBO = 128 x 16 row groups; B starts at the next 1 KiB."""
    f = form_named("tcgen05.f16.f16.f32")
    a = np.arange(f.m * f.k, dtype=np.uint16).reshape(1, f.m, f.k)
    b = (np.arange(f.n * f.k, dtype=np.uint16) + 9).reshape(1, f.n, f.k)
    smem, _ = f.pack(a, b, np.zeros((1, f.m, f.n), np.uint32))
    image = smem[0].view(np.uint16)
    for matrix, base, rows in ((a[0], 0, f.m), (b[0], 4096, f.n)):
        lbo = 128 * (rows // 8)
        for row in (0, 7, 8, rows - 1):
            for k in (0, 7, 8, 15):
                byte = base + (row // 8) * 128 + (k // 8) * lbo + (row % 8) * 16 + (k % 8) * 2
                assert image[byte // 2] == matrix[row, k]


class OracleGpu:
    """A GPU simulated by the oracle: a tcgen05 batch launch runs each tile's Program."""

    name, arch = "oracle-simulated", "sm_100"

    def __init__(self, forms_by_ptx: dict[str, tc.Tcgen05Form]):
        self.forms = forms_by_ptx

    def load(self, ptx: str, arch: str):
        form = self.forms[ptx]
        return type("Module", (), {"get_kernel": lambda _self, entry: form})()

    def to_device(self, x):
        return np.asarray(x)

    def empty(self, shape, dtype):
        return np.zeros(shape, dtype)

    def to_host(self, x):
        return x

    def sync(self):
        pass

    def launch(self, form, grid, block, shared, smem, tmem, out, tiles, cluster=None):
        for t in range(int(tiles)):
            units = slice(t * form.ctas, (t + 1) * form.ctas)
            state = run(form.program(smem[units], tmem[units]), "sm_100a")
            out[units] = np.stack([state.tmem[cta][:, :form.image_columns] for cta in range(form.ctas)])


def _one_chunk_through_the_oracle(name: str):
    """The form called `name`, its combination, a prepared chunk of one tile and the TMEM words the
    oracle-simulated GPU gives for it through the measurement driver."""
    f = form_named(name)
    c = measure.Combination("tcgen05", f.in_fmt, f.acc, f.satfinite, f)
    gpu = OracleGpu({f.kernel(): f})
    kernels = {c.id: gpu.load(measure.kernel_source(c), c.arch).get_kernel(c.entry)}
    chunk = measure.prepare(c, 1, seed=4)
    return f, c, chunk, measure.run_chunk(gpu, kernels, c, chunk, Stages())


@pytest.mark.parametrize("name", ["tcgen05.f8f6f4.e4m3.f16", "tcgen05.mxf8f6f4.e2m1.f32.block32.ue8m0"])
def test_the_shared_driver_measures_a_tcgen05_chunk_and_catches_one_flipped_bit(name):
    f, c, chunk, words = _one_chunk_through_the_oracle(name)
    result = measure.compare(c, chunk, words, "sm_100a")
    assert result["mismatches"] == 0 and result["inner_products"] == f.m * f.n
    words.reshape(-1, f.image_columns)[1, 3] ^= 1  # TMEM lane 1, column 3: D[1, 3]
    assert measure.compare(c, chunk, words, "sm_100a")["mismatches"] == 1


def test_vector_runner_reads_each_vector_off_a_tile_diagonal():
    f = form_named("tcgen05.mxf4nvf4.e2m1.f32.4X.ue4m3")
    c = measure.Combination("tcgen05", f.in_fmt, f.acc, form=f)
    runner = measure.VectorRunner(gpu=OracleGpu({f.kernel(): f}))
    rng = np.random.default_rng(2)
    a, b, cv, _ = mix(f.in_fmt, f.acc, f.k, 5, rng)
    sa, sb = (rng.integers(0x30, 0x40, (5, f.factors)).astype(np.uint8) for _ in range(2))
    got = runner.run(c, a, b, cv, sa, sb)
    assert np.array_equal(got, inner_product(a, b, cv, f.in_fmt, f.acc, "sm_100a", a_scale=sa, b_scale=sb,
                                             scale_fmt="ue4m3"))


# --- the plumbing self-check --------------------------------------------------------------------


def simulated(monkeypatch, corrupt=None):
    """_run_program through the oracle, then `corrupt(program, image)` (a planted fault)."""
    def run_program(worker, p):
        image = np.stack([run(p, "exact").tmem[cta] for cta in range(p.ctas)]).astype(np.uint32)
        return image if corrupt is None else corrupt(p, image)
    monkeypatch.setattr(tc, "_run_program", run_program)


def test_plumbing_check_passes_on_a_correct_gpu(monkeypatch):
    simulated(monkeypatch)
    check = tc.plumbing_check(None, "sm_100a")
    assert check.ok and check.step == "all"


def flip_d(p, img):
    """One bit of one D element flipped, in the MMA's read-back only."""
    if p.ops:
        img = img.copy()
        img[0, 7, 3] ^= 1 << 10
    return img


@pytest.mark.parametrize("fault,step,words", [
    (lambda p, img: np.full_like(img, tc.UNWRITTEN), "tmem", "wrote nothing back"),
    (lambda p, img: np.where(img == img[0, 5, 3], img ^ 1, img), "tmem", "corrupts data"),
    (flip_d, "mma", "differs from K + lane + column"),
])
def test_plumbing_check_names_the_step_that_fails(monkeypatch, fault, step, words):
    simulated(monkeypatch, fault)
    check = tc.plumbing_check(None, "sm_100a")
    assert not check.ok and check.step == step
    if words:
        assert words in check.diagnosis


def test_plumbing_check_reports_a_faulting_kernel(monkeypatch):
    from tcgen05_conformance.device.gpu_worker import KernelFailed

    def fail(worker, p):
        raise KernelFailed("run", "CUDA_ERROR_ILLEGAL_INSTRUCTION")
    monkeypatch.setattr(tc, "_run_program", fail)
    check = tc.plumbing_check(None, "sm_100a")
    assert not check.ok and check.step == "tmem" and "faulted" in check.diagnosis and "ILLEGAL" in check.diagnosis


def test_mma_that_did_not_run_is_diagnosed(monkeypatch):
    """D read back as C was stored: the MMA did not run (or its wait returned early)."""
    def run_program(worker, p):
        if not p.ops:
            return np.stack([run(p, "exact").tmem[0]]).astype(np.uint32)
        return np.stack([np.frombuffer(r.words, "<u4").reshape(128, r.columns) for r in p.tmem]).astype(np.uint32)
    monkeypatch.setattr(tc, "_run_program", run_program)
    check = tc.plumbing_check(None, "sm_100a")
    assert not check.ok and check.step == "mma" and "did not run" in check.diagnosis


@pytest.mark.parametrize("name", ["tcgen05.f8f6f4.e4m3.f16", "tcgen05.mxf4.e2m1.f32.block32.ue8m0"])
def test_measure_with_the_checker_judges_a_tcgen05_chunk_as_the_model_does(name, tmp_path):
    """`numerics measure --tcgen05 --checker gpu`'s path, with the checker's kernels built for the
    CPU: the checker's D (`tiles_checked`) replaces the model, which cross-checks the first inner
    products; the oracle-simulated GPU's D passes, a flipped bit is one mismatch, and a checker
    that differs from the model within the cross-checked products stops the run."""
    if shutil.which("g++") is None:
        pytest.skip("the checker's CPU build needs g++")
    f, c, chunk, words = _one_chunk_through_the_oracle(name)
    by_checker = tiles_checked(HostReference(str(tmp_path)))(c, chunk, "sm_100a", Stages())
    assert by_checker.shape == chunk["c"].shape
    result = measure.compare(c, chunk, words, "sm_100a", expected=by_checker, cross_check=1000)
    assert result["mismatches"] == 0 and result["inner_products"] == f.m * f.n
    assert result["stages"].wall.keys() >= {"model", "cross-check"}
    words.reshape(-1, f.image_columns)[1, 3] ^= 1  # TMEM lane 1, column 3: D[1, 3]
    assert measure.compare(c, chunk, words, "sm_100a", expected=by_checker, cross_check=1000)["mismatches"] == 1
    wrong = by_checker.copy()
    wrong[0, 2, 5] ^= 1
    with pytest.raises(CrossCheckError, match=c.id):
        measure.compare(c, chunk, words, "sm_100a", expected=wrong, cross_check=1000)
    assert measure.compare(c, chunk, words, "sm_100a", expected=wrong, cross_check=100)["mismatches"] == 2  # not sampled
