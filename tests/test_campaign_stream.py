"""Stream data sets (`campaign --draw gpu`) without a GPU: the programs the host rebuilds from the
operand stream hold each operand where the ISA's layouts place it (checked against the
generators' own image writer and the oracle's reading), the drawing tables give the words the
host packs, and a host-only stream run counts, cross-checks and judges as a GPU run would, with
the numpy twin drawing what the GPU's kernels draw (tests/test_stream_operands.py proves the two
equal; tests/device/ runs the kernels on a GPU)."""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import io
import json
import shutil

import numpy as np
import pytest

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.instructions import MmaSp
from tcgen05_conformance.core.isa import hopper as hopper_isa
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.mma import TYPE_BITS
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.core.program import load
from tcgen05_conformance.harness.judge import profile_for
from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.campaign import stream
from tcgen05_conformance.campaign.stream import (
    StreamPrograms, fill_arena, host_draw, returned, stream_group, stream_parameters,
)
from tcgen05_conformance.numerics.gpu_checker import checker_kernels_source
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.check_kernels import host_library
from tcgen05_conformance.device.hopper_batch import pack, register_layouts
from tcgen05_conformance.device.kernel_cache import KernelCache
from tcgen05_conformance.device.ptx.kernels import hopper_form, hopper_kernel
from tcgen05_conformance.generators import stream_operands as so
from tcgen05_conformance.generators.hopper_forms import modelled_hopper_forms
from tcgen05_conformance.generators.operand_images import write_bits
from tcgen05_conformance.generators.programs import INPUTS, hopper_instructions
from tcgen05_conformance.generators.sampling import draw_examples, seed_only_draws
from tcgen05_conformance.generators.stream_data_sets import stream_layout, stream_programs
from tcgen05_conformance.oracles.execute import matrix_products
from tcgen05_conformance.oracles.hopper import instruction_issue
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.oracles.numerics.checker import CrossCheckError
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct
from tests.conftest import ASSEMBLER

needs_run = pytest.mark.skipif(shutil.which("g++") is None or not ASSEMBLER,
                               reason="a host-only run needs g++ (the checker on the CPU) and nvJitLink (the kernels)")


# mixed fp8 through mma.sp (f32 accumulators only, PTX ISA 9.7.14.6.3), modelled since
# A-MMA-SP-MIXED-FP8 was settled: one of each order, so the tests below hold whatever the draw gives
MIXED_FP8_MMA_SP = (MmaSp(k=64, dtype="f32", ctype="f32", atype="e4m3", btype="e5m2", metadata=0x4E4E_E4E4),
                    MmaSp(k=64, dtype="f32", ctype="f32", atype="e5m2", btype="e4m3", ordered_metadata=True,
                          sparse_selector=0, metadata=0x1234_5678))


@pytest.fixture(scope="module")
def instructions():
    with seed_only_draws():
        return draw_examples(hopper_instructions(forms="modelled"), 60, seed=23) + list(MIXED_FP8_MMA_SP)


def _programs(op, inputs: str, count: int = 3, first: int = 1000):
    spec = so.spec_for(7, op.atype, op.btype, op.dtype, inputs)
    tiles = np.arange(first, first + count, dtype=np.uint64)
    return spec, tiles, stream_programs(op, spec, tiles, "sm_90a", "exact" if inputs == "exact" else "sm_90a")


@pytest.mark.parametrize("inputs", INPUTS)
def test_each_image_holds_a_then_b_where_their_descriptors_place_them_over_filler(instructions, inputs):
    """Rebuilt independently: the filler words, then A's and B's codes written by the generators'
    image writer (a later element wins) at the layout's addresses."""
    for op in instructions:
        if isinstance(op, MmaSp):
            continue
        spec, tiles, programs = _programs(op, inputs)
        layout = stream_layout(op)
        filler = so.words(spec, tiles, np.full_like(layout.image_table, so.entry(so.OP_FILLER, 0, 0, 0)))
        k_stored = hopper_isa.WGMMA_TYPES[hopper_isa.wgmma_type_family(op.atype)].k_dense
        writes = [(op.b_desc, op.imm_trans_b, op.n, op.k, op.btype, so.OP_B)]
        if not op.a_in_registers:
            writes.insert(0, (op.a_desc, op.imm_trans_a, hopper_isa.WGMMA_M, k_stored, op.atype, so.OP_A))
        for i, p in enumerate(programs):
            image = filler[i].view(np.uint8).copy()
            for desc, transposed, rows, cols, fmt, which in writes:
                storage = storage_for(mma.TYPE_BITS[fmt], False)
                addresses = element_bit_addresses(sdesc_codec.decode(desc, "sm90"), not transposed, rows, cols, storage)
                write_bits(image, addresses, so.codes(spec, which, tiles[i:i + 1], rows, cols)[0], storage.bits)
            assert p.smem[0].data == image.tobytes(), op


def _group(programs: list, op, spec, tiles, inputs: str):
    """A one-instruction stream group of `programs` (the first two sampled, by the model's stand-in D)."""
    form = hopper_form(programs[0])
    profile = profile_for(programs[0])
    source = StreamPrograms((op,), np.zeros(len(tiles), np.int32), tiles, spec, "sm_90a", programs[0].profile)
    d_shape = stream_layout(op).c_shape
    sample = {0: np.zeros(d_shape, np.uint32), 1: np.zeros(d_shape, np.uint32)}
    return stream_group(hopper_kernel(form), b"", form, source, stream_parameters(op, profile), sample,
                        {0: programs[0], 1: programs[1]}, ("form", (op.atype,), op.dtype, profile))


@pytest.mark.parametrize("inputs", INPUTS)
def test_what_the_gpu_draws_is_what_the_oracle_reads_and_the_kernel_packs(instructions, inputs):
    """Per program, the operand buffer the checker reads equals the oracle's matrix product (A and
    B read through the descriptors, imm-scale and scale-d applied, a sparse A's columns from the
    metadata), and the registers equal what `pack` makes of the rebuilt program."""
    for op in instructions:
        spec, tiles, programs = _programs(op, inputs)
        group = _group(programs, op, spec, tiles, inputs)
        images, registers, operands = host_draw(group)
        assert np.array_equal(registers, pack(programs).registers), op
        assert np.array_equal(registers[group.sample], group.sample_registers)
        assert np.array_equal(images[group.sample], group.sample_images)
        for i, product in enumerate(matrix_products(programs, profile_for(programs[0]))):
            assert np.array_equal(operands.a[i], product.a), op
            assert np.array_equal(operands.b[i], product.b), op
            if getattr(op, "scale_d", True):
                assert np.array_equal(operands.c[i], product.c), op
            else:
                # scale-d false: the oracle adds -0 (A-NO-ACCUMULATOR), the stream's C is +0 (its and-mask
                # clears every bit): the same D under the Hopper profiles, which make every zero +0
                assert profile_for(programs[0]).startswith("sm_90a") and not operands.c[i].any(), op
                zero = 0 if op.dtype == "s32" else 1 << (TYPE_BITS[op.dtype] - 1)  # an integer has one zero
                assert (product.c == zero).all(), op
            if product.columns is not None:
                assert np.array_equal(operands.columns[i], product.columns), op


def test_forms_sharing_a_register_table_each_draw_their_own_registers(monkeypatch):
    """`register_table` keeps one table per register layout, not per kernel form: of two modelled
    forms with one layout (the first and last listed: imm-scales, transposes, saturation,
    selectors apart), the second, drawn from the table the first made, still draws the registers
    `pack` makes of its own programs; every fifth layout of the modelled forms that has two."""
    monkeypatch.setattr(stream, "_REGISTER_TABLES", {})
    by_layout = collections.defaultdict(list)
    for op in modelled_hopper_forms():
        by_layout[tuple(register_layouts(op))].append(op)
    shared = [forms for forms in by_layout.values() if len(forms) > 1][::5]
    assert len(shared) > 20
    for forms in shared:
        for op in (forms[0], forms[-1]):
            spec, tiles, programs = _programs(op, "discriminating", count=2)
            registers = host_draw(_group(programs, op, spec, tiles, "discriminating"))[1]
            assert np.array_equal(registers, pack(programs).registers), op
    assert len(stream._REGISTER_TABLES) == len(shared)


def test_what_is_judged_by_the_instruction_alone_is_what_the_oracle_makes_of_its_programs(instructions):
    """The checker's parameters from the instruction equal those of the oracle's product of a
    rebuilt program, and the oracle gives a product exactly when `instruction_issue` finds none."""
    for op in instructions:
        for inputs in INPUTS:
            _, _, programs = _programs(op, inputs, count=1)
            profile = profile_for(programs[0])
            product = matrix_products(programs, profile)[0]
            assert (instruction_issue(op, profile) is None) == isinstance(product, MatrixProduct), op
            want = checker.parameters(product.afmt, product.acc, product.a.shape[1], product.profile, b_fmt=product.bfmt,
                                      saturate=product.saturate)
            assert np.array_equal(stream_parameters(op, profile), want), op


def test_data_sets_differ_and_a_tile_is_a_program(instructions):
    """Two tiles give two data sets; one tile gives the same program whichever batch rebuilds it."""
    op = instructions[0]
    spec, tiles, programs = _programs(op, "discriminating", count=4)
    assert len({p.case_id for p in programs}) == 4
    again = stream_programs(op, spec, tiles[2:3], "sm_90a", "sm_90a")[0]
    assert again.case_id == programs[2].case_id


# --- a host-only run ----------------------------------------------------------------------------------

SMALL = dict(programs=48, seed=4, data_sets=4, chunk=12, numerics=tool.CHECKER, draw=tool.GPU_DRAW)


@pytest.fixture
def settings(tmp_path, monkeypatch) -> tool.Settings:
    monkeypatch.setenv("FAKE_LAUNCHER_MARKERS", str(tmp_path))
    return tool.Settings(**SMALL, cache_dir=str(tmp_path / "kernels"))


def run(settings: tool.Settings, launcher: str, cases=None) -> dict:
    return tool.campaign(settings, 1, [None], launcher, cases, 120.0, log=io.StringIO())


def _expected(settings: tool.Settings) -> tuple[int, int, dict]:
    """Programs and inner products of the run, and programs per form and input formats, from its
    instructions drawn here."""
    programs = inner_products = 0
    by_formats = {f: collections.Counter() for f in tool.FORMS}
    for c in settings.chunks():
        _, ops = tool.draw_instructions(c, settings)
        for k in range(settings.chunk_programs(c)):
            op = ops[k // settings.data_sets]
            programs += 1
            inner_products += 16 * 8 if isinstance(op, MmaSp) else 64 * op.n  # D's elements
            form = ("mma.sp (warp-level)" if isinstance(op, MmaSp) else "wgmma sparse, A in shared memory" if op.sparse
                    else "wgmma dense, A in registers" if op.a_in_registers else "wgmma dense, A in shared memory")
            by_formats[form][op.atype if op.atype == op.btype else f"{op.atype} x {op.btype}"] += 1
    return programs, inner_products, {f: dict(sorted(n.items())) for f, n in by_formats.items()}


@needs_run
def test_a_stream_run_counts_every_program_and_cross_checks_the_sample(settings):
    report = run(settings, "tests.fake_launchers:well")
    assert (report["programs"], report["inner_products_total"],
            report["programs_by_form_and_formats"]) == _expected(settings)
    assert (report["mismatches"], report["errors"], report["not_run"]) == (0, 0, 0)
    every = settings.cross_check_every
    assert report["cross_checked"]["programs"] == sum(-(-settings.chunk_programs(c) // every) for c in settings.chunks())
    assert report["settings"]["draw"] == "gpu"


@needs_run
def test_a_planted_difference_is_rebuilt_judged_and_written_for_replay(settings, tmp_path):
    report = run(settings, "tests.fake_launchers:flip_on_0", cases=str(tmp_path / "cases"))
    assert (report["mismatches"], report["mismatched_words"], report["errors"]) == (1, 1, 0)
    failure = report["failures"][0]
    assert failure["status"] == "fail" and failure["diff"]["mismatched"] == 1
    replayed = load(str(tmp_path / "cases" / f"{failure['case_id']}.json"))
    assert replayed.case_id == failure["case_id"]


@needs_run
@pytest.mark.parametrize("launcher, message", [
    ("checker_wrong_in_sample", r"the integer checker's D differs from the Python model's in 1 element\(s\)"),
    ("checker_wrong_outside_sample", r"the integer checker's D differs from the Python model's, which the GPU's D equals"),
])
def test_a_wrong_checker_stops_a_stream_run(settings, launcher, message):
    with pytest.raises(CrossCheckError, match=message):
        run(dataclasses.replace(settings, cross_check_every=4), f"tests.fake_launchers:{launcher}")


@needs_run
def test_a_chunks_batch_draws_and_checks_every_group_through_the_cpu_build(settings, tmp_path):
    """A chunk's launch plan (`stream_batch`: one arena, a table of jobs per kernel) run through the
    g++ build of the job kernels, as the GPU runs it but for the tensor core: every program is
    sampled, and each one's image and registers equal the host's rebuild, the checker's D equals
    the model's, and (the tensor core's words left zero) its count of differing words is the
    number of its nonzero checker words."""
    settings = dataclasses.replace(settings, cross_check_every=1)
    cache = KernelCache(settings.cache_dir)
    library = host_library(checker_kernels_source(), str(tmp_path / "kernels-cpu"))
    checked = 0
    for c in settings.chunks():
        prepared, _ = tool.prepare_stream(c, settings, cache, Stages())
        groups, batch = prepared["groups"], prepared["batch"]
        arena = np.zeros(batch.size, np.uint8)
        fill_arena(groups, batch, arena)
        base = arena.ctypes.data
        for stage in ("draw", "reference", "sample"):
            for entry, table, jobs, _ in batch.launches[stage]:
                getattr(library, entry)(ctypes.c_void_p(base), ctypes.c_void_p(base + table), ctypes.c_uint32(jobs))
        words = arena[batch.results_at:batch.results_at + batch.returned].view(np.uint32)
        for g, a, (counts, expected, images, registers) in zip(groups, batch.arrays, returned(groups, batch, words)):
            assert np.array_equal(images, g.sample_images) and np.array_equal(registers, g.sample_registers)
            assert np.array_equal(expected, g.sample_words)
            assert np.array_equal(counts, (expected != 0).reshape(g.programs, -1).sum(axis=1)) and counts.any()
            checked += g.programs
    assert checked == settings.programs


def test_gpu_draws_need_the_checker():
    with pytest.raises(ValueError, match="--draw gpu needs --numerics checker"):
        tool.Settings(programs=1, seed=0, numerics=tool.MODEL, draw=tool.GPU_DRAW)


def test_the_cli_refuses_gpu_draws_with_the_model_in_one_line(tmp_path, capsys):
    from tcgen05_conformance.cli import main

    assert main(["campaign", "--draw", "gpu", "--numerics", "model", "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--draw gpu checks D with the integer checker" in err[0]


def _stream_groups(settings: tool.Settings) -> list[list[str]]:
    """The case ids of each launch group of the run, from its chunks prepared here."""
    cache = KernelCache(settings.cache_dir)
    return [sorted(p.case_id for p in g.source.programs())
            for c in settings.chunks() for g in tool.prepare_stream(c, settings, cache, Stages())[0]["groups"]]


def _charged(report: dict, groups: list[list[str]]) -> list[list[str]]:
    errors = {f["case_id"] for f in report["failures"] if f["status"] == "error"}
    return [g for g in groups if set(g) <= errors]


@needs_run
def test_a_fault_and_a_crash_cost_only_their_launch_in_a_stream_run(settings):
    """With a launch queued while the last is collected, a worker that raises and one that dies
    still cost exactly one launch each; every other program runs, the unsettled ones again."""
    groups = _stream_groups(settings)
    report = tool.campaign(settings, 1, [None, None], "tests.fake_launchers:raise_on_0_exit_on_1", None, 120.0,
                           log=io.StringIO())
    charged = _charged(report, groups)
    assert len(charged) == 2 and report["errors"] == sum(map(len, charged))
    assert report["programs"] + report["errors"] == sum(map(len, groups)) and report["mismatches"] == 0


@needs_run
def test_a_chunk_rerun_one_group_at_a_time_counts_each_launch_once(settings):
    """After a batch faults, its chunks run again one launch group at a time: each group that
    completes adds its GPU seconds once (the launcher's per-group seconds, times the launches)."""
    from tests.fake_launchers import Timed

    groups = _stream_groups(settings)
    report = run(settings, "tests.fake_launchers:timed_raise_on_0")
    # the worker is replaced twice: after the batch, and after the group alone
    assert len(_charged(report, groups)) == 1 and report["gpus"][0]["restarts"] == 2
    gpu, launches = report["gpus"][0], report["launches"]
    assert launches == len(groups) - 1
    assert gpu["launch_seconds"] == gpu["busy_seconds"] == round(launches * Timed.LAUNCH_S, 3)


@needs_run
def test_a_hang_costs_its_launch_in_a_stream_run(settings):
    groups = _stream_groups(settings)
    report = tool.campaign(settings, 1, [None], "tests.fake_launchers:hang_on_0", None, 8.0, log=io.StringIO())
    charged = _charged(report, groups)
    assert len(charged) == 1 and report["errors"] == len(charged[0])
    assert report["programs"] + report["errors"] == sum(map(len, groups))


@pytest.mark.parametrize("argv, want", [
    ([], "gpu"),
    (["--numerics", "model"], "host"),
    (["--draw", "host"], "host"),
    (["--reference", "tests.alternative_backends:ZcmaskFieldReading"], "host"),
])
def test_the_draw_default_follows_the_numerics(argv, want):
    """Data sets drawn on the GPU need the checker: the model, or a reference other than the
    oracle (which implies the model), draws on the host."""
    import argparse

    import tcgen05_conformance.cli.campaign as cli_campaign

    parser = argparse.ArgumentParser()
    cli_campaign.add(parser.add_subparsers())
    args = parser.parse_args(["campaign", "--json", "r.json", *argv])
    assert cli_campaign.draw_for(args, cli_campaign.numerics_for(args)) == want


@needs_run
@pytest.mark.parametrize("draw, want", [("gpu", (512, 1024)), ("host", (tool.DEFAULT_DATA_SETS, tool.DEFAULT_CROSS_CHECK_EVERY))])
def test_the_data_sets_and_the_sample_default_by_where_data_sets_are_drawn(draw, want, tmp_path, monkeypatch, capsys):
    """Data sets drawn on the GPU cost the host nothing: the command line asks for 256 per
    instruction and samples one program in 512; drawn on the host, the campaign's own defaults.
    A host-only run's summary says it had no GPU time rather than a rate of None, and a run that
    assembled kernels points to `cache fill`; a second run, with every form cached, does not."""
    from tcgen05_conformance.cli import main

    monkeypatch.setenv("TCGEN05_CACHE", str(tmp_path / "kernels"))
    report = tmp_path / "report.json"
    argv = ["campaign", "--host-only", "--count", "8", "--jobs", "1", "--draw", draw, "--out", str(report)]
    assert main(argv) == 0
    settings = json.loads(report.read_text())["settings"]
    assert (settings["data_sets"], settings["cross_check_every"]) == want
    *_, summary, hint = capsys.readouterr().err.strip().splitlines()
    assert "programs/s end to end; no GPU time)" in summary and "None" not in summary
    assembled = json.loads(report.read_text())["kernel_cache"]["assembled"]
    assert assembled > 0 and hint.startswith(f"campaign: {assembled:,} kernel forms were assembled") and "cache fill" in hint
    assert main(argv) == 0
    assert "programs/s end to end" in capsys.readouterr().err.strip().splitlines()[-1]  # nothing left to assemble


def test_a_stream_chunk_holds_32_instructions():
    assert tool.chunk_programs_for(tool.GPU_DRAW, 32) == 32 * 32 and tool.chunk_programs_for(tool.HOST_DRAW, 32) == tool.CHUNK
    assert tool.chunk_programs_for(tool.GPU_DRAW, 1) == tool.CHUNK  # never fewer programs than a host chunk
