"""The blackwell backend as far as a machine without a Blackwell GPU allows: why it cannot run
here (detected through cuda.core, and the reason for every kind of GPU through `reason_for`), a
`run` that skips it with that reason, the case decisions that need no GPU, and the kernel's
input and output images against byte layouts written out here from the kernel's docstring.

On any GPU of compute capability 9.0 or later the launch path runs too, in the backend's GPU
worker process: a stand-in kernel with the tcgen05 kernel's parameters and CTA slicing (it echoes
p_tmem_in XOR the shared-memory image into p_out) travels a CTA pair in one cluster with more
than 48 KiB of shared memory, and after a kernel that faults the next one runs in a fresh
worker."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.cli.common import EXIT_NOTHING_RAN
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Ld
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.targets import PTX_VERSION
from tcgen05_conformance.core.program import Program, SmemSegment, TmemRegion
from tcgen05_conformance.harness.backends.base import Observation
from tcgen05_conformance.harness.backends.blackwell import (
    BlackwellBackend,
    KernelImages,
    PreparedCase,
    case_skip_reason,
    kernel_images,
    prepare_case,
    reason_for,
    run_program_kernel,
    tmem_state,
)
from tcgen05_conformance.harness.runner import execute, generate_programs
from tcgen05_conformance.device.gpu_worker import GpuWorker, KernelFailed
from tcgen05_conformance.core.ptx.render import REGISTER_DECLARATIONS
from tcgen05_conformance.device.ptx.kernels import KERNEL_REGISTERS, copy_to_shared, global_pointers, smem_bytes
from tcgen05_conformance.generators.programs import tcgen05_programs
from tcgen05_conformance.generators.sampling import draw_examples

H100_REASON = "NVIDIA H100 80GB HBM3 is sm_90; the blackwell backend runs tcgen05 kernels on sm_100 / sm_103 only"


def _gpu_here() -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(what stops CUDA here or None, compute capability, name), read through cuda.core directly."""
    try:
        from cuda.core import Device
    except ImportError:
        return "no cuda.core", None, None
    try:
        device = Device(0)
        device.set_current()
        major, minor = device.compute_capability
        return None, (int(major), int(minor)), device.name
    except Exception as e:
        return f"no CUDA device ({type(e).__name__})", None, None


# --- why it cannot run: this machine and every kind of GPU ----------------------------------


def test_unavailable_reason_says_why_on_this_machine():
    problem, capability, name = _gpu_here()
    reason = BlackwellBackend().unavailable_reason()
    if problem == "no cuda.core":
        assert reason.startswith("cuda.core is not installed")
    elif problem:
        assert reason.startswith("no CUDA device: ")
    elif capability in ((10, 0), (10, 3)):
        assert reason is None
    else:
        assert reason == f"{name} is sm_{capability[0]}{capability[1]}; the blackwell backend runs tcgen05 kernels on sm_100 / sm_103 only"
    assert reason is None or "\n" not in reason


@pytest.mark.parametrize("capability, name, expected", [
    ((9, 0), "NVIDIA H100 80GB HBM3", H100_REASON),
    ((12, 0), "NVIDIA GeForce RTX 5090",
     "NVIDIA GeForce RTX 5090 is sm_120; the blackwell backend runs tcgen05 kernels on sm_100 / sm_103 only"),
    ((11, 0), "NVIDIA Thor", "NVIDIA Thor is sm_110; the blackwell backend runs tcgen05 kernels on sm_100 / sm_103 only"),
    ((10, 0), "NVIDIA B200", None),
    ((10, 3), "NVIDIA B300 SXM6 AC", None),
])
def test_reason_for_each_kind_of_gpu(capability, name, expected):
    assert reason_for(capability, name) == expected


@pytest.mark.parametrize("target, capability, own_sm", [
    ("sm_100a", (10, 0), None),
    ("sm_103a", (10, 3), None),
    ("sm_103a", (10, 0), "sm_103"),
    ("sm_100a", (10, 3), "sm_100"),
    ("sm_90a", (10, 0), "sm_90"),
])
def test_a_program_runs_only_on_its_own_architecture(target, capability, own_sm):
    reason = case_skip_reason(target, capability, "NVIDIA B200")
    if own_sm is None:
        assert reason is None
    else:
        gpu_sm = f"sm_{capability[0]}{capability[1]}"
        assert reason == f"the program targets {target}, which runs on {own_sm} only; this GPU (NVIDIA B200) is {gpu_sm}"


def test_run_without_a_blackwell_gpu_skips_the_backend_with_its_reason(tmp_path, capsys):
    reason = BlackwellBackend().unavailable_reason()
    if reason is None:
        pytest.skip("a Blackwell GPU is here: the backend runs")
    assert main(["run", "--backend", "blackwell", "--count", "3", "--out", str(tmp_path)]) == EXIT_NOTHING_RAN
    summary = json.loads((tmp_path / "summary.json").read_text())
    backend = summary["backends"]["blackwell"]
    assert backend["skipped"] == 3 and backend["ran"] == 0 and backend["skip_reason"] == reason
    assert backend["skips"] == [{"reason": reason, "count": 3, "case_ids": [p.case_id for p in generate_programs(3, 0)]}]
    assert summary["checked"]["nothing_compared"]
    out, err = capsys.readouterr()
    assert reason in out and "Nothing was compared: no backend under test (blackwell) ran a case" in out
    assert err == "tcgen05-conformance: nothing ran: no backend under test (blackwell) ran a case\n"


class _StandInWorker:
    """A GPU worker that says it holds a B200 and must never run a kernel."""

    def __init__(self):
        self.closed = False

    def describe(self):
        return "NVIDIA B200", (10, 0)

    def run(self, launch):
        pytest.fail("a case kernel ran after the plumbing check failed")

    def close(self):
        self.closed = True


def test_a_failed_plumbing_check_errors_every_case_with_its_diagnosis(monkeypatch):
    import tcgen05_conformance.harness.backends.blackwell as bw
    from tcgen05_conformance.device.tcgen05_inner_products import PlumbingCheck

    import sys
    import types

    monkeypatch.setitem(sys.modules, "cuda.core", sys.modules.get("cuda.core") or types.ModuleType("cuda.core"))
    checked = []
    diagnosis = "tcgen05.ld wrote nothing back"
    monkeypatch.setattr(bw, "GpuWorker", _StandInWorker)
    monkeypatch.setattr(bw, "plumbing_check", lambda worker, target: checked.append(target) or PlumbingCheck(False, "tmem", diagnosis))
    backend = BlackwellBackend()
    programs = [_program(CTA1, seed) for seed in (1, 2)]
    observations = backend.observe(programs)
    assert checked == ["sm_100a"]  # once, for the GPU's own target, before any case
    assert [o.error for o in observations] == [f"not run: the Blackwell plumbing check failed at its tmem step: {diagnosis}"] * 2


def test_the_plumbing_check_is_not_run_without_a_blackwell_gpu(monkeypatch):
    import tcgen05_conformance.harness.backends.blackwell as bw

    reason = BlackwellBackend().unavailable_reason()
    if reason is None:
        pytest.skip("a Blackwell GPU is here: the plumbing check runs")
    monkeypatch.setattr(bw, "plumbing_check", lambda worker, target: pytest.fail("the plumbing check ran"))
    [observation] = BlackwellBackend().observe([_program(CTA1)])
    assert observation.skip == reason


# --- case decisions that need no GPU -------------------------------------------------------


def _program(shape_class: mma.ShapeClass, seed: int = 5) -> Program:
    target = "sm_103a" if shape_class.feature == "K=96" else "sm_100a"
    return draw_examples(tcgen05_programs(target, shape_class), 1, seed=seed)[0]


CTA1 = next(c for c in mma.SHAPE_CLASSES if c.cta_group == 1 and c.kind == "f16" and not c.sparse)
CTA2 = next(c for c in mma.SHAPE_CLASSES if c.cta_group == 2 and c.kind == "f8f6f4" and c.sparse)


def test_a_program_with_tcgen05_ld_is_skipped_naming_it():
    p = Program(target="sm_100a", tmem_columns=32, ops=(Tcgen05Ld(shape="32x32b", num=4),))
    result = prepare_case(p)
    assert isinstance(result, Observation) and result.skip.startswith("no kernel: ") and "tcgen05.ld" in result.skip


def test_a_cta_pair_issuing_cta_group_1_is_an_error():
    p = _program(CTA1)
    result = prepare_case(Program(target=p.target, ops=p.ops, ctas=2, tmem_columns=p.tmem_columns, smem=p.smem, tmem=p.tmem))
    assert isinstance(result, Observation) and "cta_group::1" in result.error


@pytest.fixture
def no_kernel_runs(monkeypatch):
    """The backend as if on a Blackwell GPU, failing the test if it is asked to run a case."""
    monkeypatch.setattr(BlackwellBackend, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(BlackwellBackend, "_observe_one", lambda self, p: pytest.fail(f"case {p.case_id} was run"))


def test_a_program_the_oracle_does_not_model_is_skipped_unrun(no_kernel_runs):
    sp = MmaSp(k=64, dtype="s32", atype="s4", btype="s4", ctype="s32")  # 4-bit mma.sp: not modelled
    [result] = execute([Program(target="sm_100a", tmem_columns=32, ops=(sp,))], ["blackwell"]).results["blackwell"]
    assert result.status == "skip" and result.detail.startswith("no reference state from oracle: not modelled: ")


def test_a_program_reading_uninitialised_shared_memory_is_an_error_unrun(no_kernel_runs):
    p = _program(CTA1)
    [result] = execute([Program(target=p.target, ops=p.ops, tmem_columns=p.tmem_columns, tmem=p.tmem)], ["blackwell"]).results["blackwell"]
    assert result.status == "error" and result.detail.startswith("no reference state from oracle: undefined behaviour: ")


@pytest.mark.parametrize("shape_class", [CTA1, CTA2], ids=lambda c: c.id)
def test_a_generated_program_is_prepared_with_its_cluster(shape_class):
    case = prepare_case(_program(shape_class))
    assert isinstance(case, PreparedCase)
    assert case.cluster == (2 if shape_class.cta_group == 2 else None)
    assert (".reqnctapercluster 2" in case.ptx) == (shape_class.cta_group == 2)


# --- the images the kernel reads and writes ------------------------------------------------


def _smem_bytes_by_hand(p: Program) -> bytes:
    """p_smem: CTA c's image at c x size, segment bytes at their offsets, zero elsewhere."""
    size = smem_bytes(p)
    image = bytearray(p.ctas * size)
    for s in p.smem:
        image[s.cta * size + s.offset: s.cta * size + s.offset + len(s.data)] = s.data
    return bytes(image)


def _tmem_bytes_by_hand(p: Program) -> bytes:
    """p_tmem_in: word (cta, lane, column) at byte 4 x ((cta x 128 + lane) x columns + column)."""
    columns = p.tmem_columns
    image = bytearray(p.ctas * 128 * columns * 4)
    for r in p.tmem:
        for i in range(r.lanes):
            at = 4 * ((r.cta * 128 + r.lane + i) * columns + r.column)
            image[at: at + 4 * r.columns] = r.words[4 * i * r.columns: 4 * (i + 1) * r.columns]
    return bytes(image)


def _hand_made_program() -> Program:
    """Two CTAs, segments and regions at odd places, so misplaced bytes show."""
    rng = np.random.default_rng(7)
    words = [rng.integers(0, 2**32, n, dtype=np.uint32).astype("<u4").tobytes() for n in (3 * 5, 2 * 7)]
    return Program(
        target="sm_100a", ops=(), ctas=2, tmem_columns=64,
        smem=(SmemSegment(48, bytes(range(1, 40))), SmemSegment(1000, b"\xff" * 20, cta=1), SmemSegment(0, b"\x07" * 16, cta=1)),
        tmem=(TmemRegion(5, 9, 3, 5, words[0]), TmemRegion(126, 57, 2, 7, words[1], cta=1)),
    )


@pytest.mark.parametrize("make", [_hand_made_program, lambda: _program(CTA1), lambda: _program(CTA2)],
                         ids=["hand-made", "cta1", "cta2"])
def test_kernel_images_hold_the_programs_bytes_where_the_kernel_reads_them(make):
    p = make()
    images = kernel_images(p)
    assert images.smem.shape == (p.ctas, smem_bytes(p)) and images.tmem.shape == (p.ctas, 128, p.tmem_columns)
    assert images.smem.tobytes() == _smem_bytes_by_hand(p)
    assert images.tmem.tobytes() == _tmem_bytes_by_hand(p)


def test_tmem_state_reads_p_out_lane_major():
    p = _hand_made_program()
    raw = np.random.default_rng(3).integers(0, 256, p.ctas * 128 * p.tmem_columns * 4, dtype=np.uint8)
    state = tmem_state(p, raw)
    assert state.tmem.shape == (2, 128, 64) and state.loads == [] and state.hopper_d is None
    for cta, lane, column in [(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 127, 63), (0, 77, 31)]:
        at = 4 * ((cta * 128 + lane) * 64 + column)
        assert state.tmem[cta, lane, column] == int.from_bytes(raw[at: at + 4].tobytes(), "little")


def test_an_image_read_back_unchanged_is_the_programs_initial_tmem():
    # round trip: p_tmem_in's bytes read back as p_out give each region's words at its place
    p = _hand_made_program()
    state = tmem_state(p, np.frombuffer(_tmem_bytes_by_hand(p), dtype=np.uint8))
    for r in p.tmem:
        words = np.frombuffer(r.words, dtype="<u4").reshape(r.lanes, r.columns)
        assert np.array_equal(state.tmem[r.cta, r.lane:r.lane + r.lanes, r.column:r.column + r.columns], words)
    assert int(np.count_nonzero(state.tmem)) == sum(np.count_nonzero(np.frombuffer(r.words, "<u4")) for r in p.tmem)


# --- the launch path on any GPU with clusters (sm_90 and later) ------------------------------


@pytest.fixture(scope="module")
def worker():
    problem, capability, _ = _gpu_here()
    if problem or capability < (9, 0):
        pytest.skip(f"needs a CUDA GPU of compute capability 9.0 or later: {problem or f'this one is {capability}'}")
    worker = GpuWorker()
    yield worker
    worker.close()


def _arch(worker: GpuWorker) -> str:
    major, minor = worker.describe()[1]
    return f"sm_{major}{minor}"


def _stand_in_kernel(arch: str, smem_size: int, columns: int, cluster: bool, body: str | None = None) -> str:
    """A kernel with the tcgen05 kernel's parameters and per-CTA slices (by cluster rank) that
    writes p_out[w] = p_tmem_in[w] XOR the shared-memory image's word w mod (size / 4) for each
    word w of its CTA's TMEM image, after copying the image in as the tcgen05 kernel does."""
    echo = body or f"""
{copy_to_shared(smem_size, 128)}
  bar.sync 0;
  mov.u32 %r_col, 0;
ECHO:
  setp.ge.u32 %p_done, %r_col, {columns};
  @%p_done bra ECHO_DONE;
  mad.lo.u32 %r_i, %r_tid, {columns}, %r_col;
  mul.wide.u32 %rd_off, %r_i, 4;
  add.u64 %rd_src, %rd_tmem_in, %rd_off;
  ld.global.b32 %r_echo, [%rd_src];
  rem.u32 %r_off, %r_i, {smem_size // 4};
  shl.b32 %r_off, %r_off, 2;
  add.u32 %r_dst, %r_smem, %r_off;
  ld.shared.b32 %r_word, [%r_dst];
  xor.b32 %r_echo, %r_echo, %r_word;
  add.u64 %rd_src, %rd_out, %rd_off;
  st.global.b32 [%rd_src], %r_echo;
  add.u32 %r_col, %r_col, 1;
  bra ECHO;
ECHO_DONE:"""
    return f""".version {PTX_VERSION}
.target {arch}
.address_size 64

.extern .shared .align 1024 .b8 smem_image[];

.visible .entry program(.param .u64 p_smem, .param .u64 p_tmem_in, .param .u64 p_out)
.maxntid 128, 1, 1{chr(10) + ".reqnctapercluster 2, 1, 1" if cluster else ""}
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
  .reg .b32 %r_echo, %r_word;
  mov.u32 %r_tid, %tid.x;
  mov.u32 %r_cta, %cluster_ctarank;
  mov.u32 %r_smem, smem_image;
{global_pointers(("p_smem", "p_tmem_in", "p_out"), ("%rd_in", "%rd_tmem_in", "%rd_out"))}
  mul.wide.u32 %rd_off, %r_cta, {smem_size};
  add.u64 %rd_in, %rd_in, %rd_off;
  mul.wide.u32 %rd_off, %r_cta, {128 * columns * 4};
  add.u64 %rd_tmem_in, %rd_tmem_in, %rd_off;
  add.u64 %rd_out, %rd_out, %rd_off;
{echo}
  ret;
}}
"""


def _images(ctas: int, smem_size: int, columns: int, seed: int) -> KernelImages:
    rng = np.random.default_rng(seed)
    return KernelImages(rng.integers(0, 256, (ctas, smem_size), dtype=np.uint8),
                        rng.integers(0, 2**32, (ctas, 128, columns), dtype=np.uint32).astype("<u4"))


def _echoed(images) -> np.ndarray:
    ctas, size = images.smem.shape
    words = images.smem.view("<u4")
    index = np.arange(images.tmem[0].size) % (size // 4)
    return images.tmem ^ words[:, index].reshape(images.tmem.shape)


@pytest.mark.parametrize("ctas, smem_size, columns", [(1, 4096, 32), (2, 100 * 1024, 256)],
                         ids=["one CTA, 4 KiB", "CTA pair in a cluster, 100 KiB"])
def test_run_program_kernel_moves_every_ctas_images(worker, ctas, smem_size, columns):
    cluster = 2 if ctas == 2 else None
    arch = _arch(worker)
    images = _images(ctas, smem_size, columns, seed=ctas)
    out = run_program_kernel(worker, _stand_in_kernel(arch, smem_size, columns, cluster is not None), arch, images, cluster)
    assert out.shape == images.tmem.shape
    assert np.array_equal(out, _echoed(images))


@pytest.mark.parametrize("fault", ["trap;", "ld.global.b32 %r_echo, [%rd_in+1];\n  st.global.b32 [%rd_out], %r_echo;"],
                         ids=["trap", "misaligned address"])
def test_after_a_kernel_faults_the_next_runs_in_a_fresh_worker(worker, fault):
    arch = _arch(worker)
    with pytest.raises(KernelFailed, match="CUDA_ERROR") as failed:
        run_program_kernel(worker, _stand_in_kernel(arch, 16, 32, False, body=f"  {fault}"), arch, _images(1, 16, 32, seed=0), None)
    assert failed.value.stage == "run" and "\n" not in str(failed.value)
    images = _images(1, 1024, 32, seed=9)
    assert np.array_equal(run_program_kernel(worker, _stand_in_kernel(arch, 1024, 32, False), arch, images, None), _echoed(images))


def test_a_kernel_that_does_not_link_costs_no_worker(worker):
    arch = _arch(worker)
    with pytest.raises(KernelFailed) as failed:
        run_program_kernel(worker, _stand_in_kernel(arch, 16, 32, False, body="  frobnicate.u32 %r_echo;"), arch,
                           _images(1, 16, 32, seed=0), None)
    assert failed.value.stage == "link"
    images = _images(1, 64, 32, seed=4)
    assert np.array_equal(run_program_kernel(worker, _stand_in_kernel(arch, 64, 32, False), arch, images, None), _echoed(images))
