"""Stream data sets on the CPU: the checker kernels' `stream_*` kernels and `sample_rows`,
compiled for the CPU (tcgen05_conformance.device.check_kernels.HOST_STAND_IN, one block of one thread), draw exactly
what their numpy twin (`tcgen05_conformance.generators.stream_operands`) draws, for both kinds of inputs and several
format triples; and checks that trust neither: exact codes come from their tables, discriminating
codes are the operand stream's (`numeric_stream.codes`), metadata nibbles are legal and name the
columns `stream_columns` reports, filler differs between tiles, an element is the same whichever
word asks for it. tests/device/test_stream_operands_device.py runs the same cases on a GPU."""

from __future__ import annotations

import ctypes
import shutil
from typing import Callable

import numpy as np
import pytest

from tcgen05_conformance.numerics import gpu_checker as gc
from tcgen05_conformance.device.check_kernels import JOB_KERNELS
from tcgen05_conformance.generators import numeric_stream as ns
from tcgen05_conformance.generators import stream_operands as so

SEED = 20261125
FORMATS = [("f16", "f16", "f32"), ("e4m3", "e5m2", "f32"), ("tf32", "tf32", "f32"), ("s8", "u8", "s32"),
           ("bf16", "bf16", "f32"), ("f16", "f16", "f16")]
SPECS = [(f, inputs) for f in FORMATS for inputs in ("exact", "discriminating")]
SPEC_IDS = [f"{'.'.join(f)}-{inputs}" for f, inputs in SPECS]
TILES = np.array([0, 5, 2**33 + 1, 7], np.uint64)
u32, u64 = np.uint32, np.uint64

#: run(kernel name, *arguments, out=index of the output argument) -> that argument after the
#: kernel ran; arguments are arrays, np.uint32 / np.uint64 scalars, or None (a null pointer).
Run = Callable[..., np.ndarray]


def spec(formats: tuple[str, str, str], inputs: str) -> so.StreamSpec:
    return so.spec_for(SEED, *formats, inputs)


def host_run(library) -> Run:
    """A `Run` through the g++ build of the kernels (ctypes): the kernel launched over one job."""
    def run(name: str, *args, out: int) -> np.ndarray:
        args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)  # copies, as on a GPU
        kernel = JOB_KERNELS[name]
        job = kernel.table([[0 if a is None else a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]])
        getattr(library, kernel.entry)(None, ctypes.c_void_p(job.ctypes.data), ctypes.c_uint32(1))
        return args[out]
    return run


def _stream_args(s: so.StreamSpec) -> tuple:
    return s.params_a, s.params_b, u32(s.exact), s.exact_codes, s.exact_lengths


def random_tables(rng: np.random.Generator, count: int, words: int) -> np.ndarray:
    """`count` word tables [count * words, 4] mixing zero bytes, filler bytes and bytes of every operand."""
    shape = (count * words, 4)
    op = rng.integers(0, 4, shape)
    table = so.entries(op, rng.integers(0, 64, shape), rng.integers(0, 64, shape), rng.integers(0, 4, shape))
    return np.where(rng.random(shape) < 0.15, so.ZERO, table).astype(np.int32)


def check_words(run: Run, s: so.StreamSpec) -> None:
    rng = np.random.default_rng(1)
    words = 24
    tables = random_tables(rng, 3, words)
    table_at = np.array([2, 0, 2, 1], np.uint32) * words  # programs 0 and 2 share a table
    got = run("stream_words", *_stream_args(s), u32(len(TILES)), TILES, table_at, tables, u32(words),
              np.zeros((len(TILES), words), np.uint32), out=10)
    for p, at in enumerate(table_at):
        assert np.array_equal(got[p], so.words(s, TILES[p:p + 1], tables[at:at + words])[0]), p


def metadata_case(field_bits: int) -> tuple[int, int, int]:
    """(values per thread, logical metadata columns, stored A columns) of a metadata case."""
    return (32, 32, 16) if field_bits == 1 else (16, 16, 8)


def check_metadata(run: Run, s: so.StreamSpec, field_bits: int) -> None:
    rng = np.random.default_rng(2)
    threads, rows, words_in, offset = 8, 16, 3, 2
    values, k_logical, _ = metadata_case(field_bits)
    cells = rng.integers(0, rows * k_logical, (threads, values)).astype(np.int32)
    selected = np.array([1, 1, 0, 1, 0, 1, 1, 1], np.uint8)
    out = np.full((len(TILES), threads, words_in), 0xDEADBEEF, np.uint32)
    got = run("stream_metadata", s.params_a, u32(len(TILES)), TILES, u32(threads), cells, u32(values), selected,
              u32(field_bits), u32(k_logical), out, u32(threads * words_in), u32(words_in), u32(offset), out=9)
    want = out.copy()
    want[:, :, offset] = so.metadata(s, TILES, cells, selected.astype(bool), field_bits, k_logical)
    assert np.array_equal(got, want)


def check_columns(run: Run, s: so.StreamSpec, field_bits: int) -> None:
    rows, k_stored = 16, metadata_case(field_bits)[2]
    got = run("stream_columns", s.params_a, u32(len(TILES)), TILES, u32(rows), u32(k_stored), u32(field_bits),
              np.zeros((len(TILES), rows, k_stored), np.uint8), out=6)
    assert np.array_equal(got, so.columns(s, TILES, rows, k_stored, field_bits))


def operand(run: Run, s: so.StreamSpec, op: int, rows: int, cols: int, images=None, address_at=None, addresses=None,
            element_bytes: int = 0, masks=None, keep: bool = False) -> np.ndarray:
    """`stream_operand` of the test tiles: drawn codes, or (with images) elements read from them;
    with `masks`, each tile's codes xor its mask, or (`keep`) and it."""
    empty = np.zeros(1, np.uint32)
    image_bytes = 0 if images is None else images.shape[1]
    return run("stream_operand", *_stream_args(s), u32(op), u32(len(TILES)), TILES, u32(rows), u32(cols), images,
               u64(image_bytes), empty if address_at is None else address_at, empty if addresses is None else addresses,
               u32(element_bytes), masks, u32(keep), np.zeros((len(TILES), rows, cols), np.uint32), out=17)


def check_operand_codes(run: Run, s: so.StreamSpec) -> None:
    for op, rows, cols in ((so.OP_A, 64, 32), (so.OP_B, 48, 32), (so.OP_C, 64, 48)):
        assert np.array_equal(operand(run, s, op, rows, cols), so.codes(s, op, TILES, rows, cols)), op


def check_operand_images(run: Run, s: so.StreamSpec, element_bytes: int) -> None:
    rng = np.random.default_rng(element_bytes)
    rows, cols, image_bytes = 8, 12, 512
    images = rng.integers(0, 256, (len(TILES), image_bytes), dtype=np.uint8)
    addresses = (rng.integers(0, (image_bytes - 4) // element_bytes, 2 * rows * cols) * element_bytes).astype(np.uint32)
    address_at = np.array([0, 1, 1, 0], np.uint32) * rows * cols
    got = operand(run, s, so.OP_A, rows, cols, images, address_at, addresses, element_bytes)
    for p, at in enumerate(address_at):
        want = so.gather(images[p:p + 1], addresses[at:at + rows * cols], element_bytes, rows, cols)[0]
        assert np.array_equal(got[p], want), p


def check_operand_masks(run: Run, s: so.StreamSpec) -> None:
    """imm-scale -1 flips each element's sign bit (xor, PTX ISA 9.7.15.5.2); scale-d false keeps
    nothing of C (and 0): per tile, as its mask says."""
    codes = so.codes(s, so.OP_A, TILES, 8, 16)
    flips = np.array([0, 0x80, 0x8000, 0], np.uint32)
    assert np.array_equal(operand(run, s, so.OP_A, 8, 16, masks=flips), codes ^ flips[:, None, None])
    keeps = np.array([0xFFFFFFFF, 0, 0, 0xFFFFFFFF], np.uint32)
    kept = operand(run, s, so.OP_A, 8, 16, masks=keeps, keep=True)
    assert np.array_equal(kept[[0, 3]], codes[[0, 3]]) and not kept[[1, 2]].any()


def check_sample_rows(run: Run) -> None:
    """`sample_rows` gathers the same rows of three arrays, the first's rows first."""
    rng = np.random.default_rng(3)
    arrays = [rng.integers(0, 2**32, (9, words), dtype=np.uint32) for words in (5, 3, 7)]
    rows = np.array([8, 0, 4], np.uint32)
    got = run("sample_rows", rows, u32(len(rows)), arrays[0], u32(5), arrays[1], u32(3), arrays[2], u32(7),
              np.zeros(len(rows) * 15, np.uint32), out=8)
    assert np.array_equal(got, np.concatenate([a[rows].ravel() for a in arrays]))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    from tcgen05_conformance.device.check_kernels import host_library

    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the CPU build of the checker kernels needs a C++ compiler")
    return host_run(host_library(gc.checker_kernels_source(), str(tmp_path_factory.mktemp("kernels"))))


@pytest.mark.parametrize("formats,inputs", SPECS, ids=SPEC_IDS)
def test_kernels_draw_what_the_twin_draws(run, formats, inputs):
    s = spec(formats, inputs)
    check_words(run, s)
    check_operand_codes(run, s)
    for field_bits in (1, 2):
        check_metadata(run, s, field_bits)
        check_columns(run, s, field_bits)


@pytest.mark.parametrize("element_bytes", [1, 2, 4])
def test_stream_operand_reads_the_images(run, element_bytes):
    check_operand_images(run, spec(FORMATS[0], "exact"), element_bytes)


@pytest.mark.parametrize("formats", FORMATS[:2], ids=[".".join(f) for f in FORMATS[:2]])
def test_stream_operand_applies_imm_scale_and_scale_d(run, formats):
    check_operand_masks(run, spec(formats, "discriminating"))


def test_sample_rows_gathers_three_arrays_in_one_buffer(run):
    check_sample_rows(run)


@pytest.mark.parametrize("formats", FORMATS, ids=[".".join(f) for f in FORMATS])
def test_exact_codes_come_from_their_tables(run, formats):
    from tcgen05_conformance.generators.operand_images import exact_codes

    s = spec(formats, "exact")
    tables = exact_codes(formats[0]), exact_codes(formats[1]), exact_codes(formats[2], accumulator=True)
    for op, table in enumerate(tables):
        drawn = operand(run, s, op, 32, 32)
        assert np.isin(drawn, table).all() and len(np.unique(drawn)) > min(len(table), 100) // 2, op


@pytest.mark.parametrize("formats", FORMATS, ids=[".".join(f) for f in FORMATS])
def test_discriminating_codes_are_the_operand_streams(run, formats):
    s = spec(formats, "discriminating")
    for op, params in ((so.OP_A, ns.parameters(SEED, 0, formats[0], formats[2])),
                       (so.OP_B, ns.parameters(SEED, 0, formats[1], formats[2])),
                       (so.OP_C, ns.parameters(SEED, 0, formats[0], formats[2]))):
        assert np.array_equal(operand(run, s, op, 16, 32), ns.codes(params, op, TILES, 16, 32)), op


def _decoded_nibbles(words: np.ndarray, field_bits: int, values: int) -> np.ndarray:
    """The nibbles [P, groups] of a metadata word holding one row's fields in column order."""
    fields = (words[:, None] >> (np.arange(values, dtype=np.uint32) * (32 // values))) & ((1 << field_bits) - 1)
    per_nibble = 4 // field_bits
    grouped = fields.reshape(len(words), -1, per_nibble)
    return (grouped << (field_bits * np.arange(per_nibble, dtype=np.uint32))).sum(axis=2)


@pytest.mark.parametrize("field_bits", [1, 2])
def test_metadata_is_legal_and_names_the_columns(run, field_bits):
    """One selected thread per row holds the row's fields in column order: the nibbles decoded from
    its word are legal, and the columns they select (2:4: the nibble's low and high 2-bit indices of
    stored elements 2g, 2g+1, increasing; tf32: the pair's half, field 0b00 or 0b10 then + 1) are
    `stream_columns`'."""
    s = spec(FORMATS[2] if field_bits == 2 else FORMATS[1], "exact")
    values, k_logical, k_stored = metadata_case(field_bits)
    rows = 16
    cells = (np.arange(rows)[:, None] * k_logical + np.arange(values)[None, :]).astype(np.int32)
    words = run("stream_metadata", s.params_a, u32(len(TILES)), TILES, u32(rows), cells, u32(values),
                np.ones(rows, np.uint8), u32(field_bits), u32(k_logical), np.zeros((len(TILES), rows), np.uint32),
                u32(rows), u32(1), u32(0), out=9)
    nibbles = _decoded_nibbles(words.reshape(-1), field_bits, values).reshape(len(TILES), rows, -1)
    legal = {1: {0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110}, 2: {0b0100, 0b1110}}[field_bits]
    assert set(np.unique(nibbles).tolist()) == legal
    low, high = nibbles & 3, nibbles >> 2
    if field_bits == 1:
        assert (low < high).all()
        g = np.arange(nibbles.shape[2]) * 4
        want = np.stack([g + low, g + high], axis=-1).reshape(len(TILES), rows, -1)
    else:
        assert ((low % 2 == 0) & (high == low + 1)).all()
        want = 2 * np.arange(k_stored) + low // 2
    got = run("stream_columns", s.params_a, u32(len(TILES)), TILES, u32(rows), u32(k_stored), u32(field_bits),
              np.zeros((len(TILES), rows, k_stored), np.uint8), out=6)
    assert np.array_equal(got, want)


def test_filler_and_unselected_threads_differ_between_tiles(run):
    s = spec(FORMATS[0], "exact")
    words = 64
    table = so.entries(so.OP_FILLER, np.zeros((words, 4), int), 0, np.arange(4)[None, :])
    filler = run("stream_words", *_stream_args(s), u32(2), TILES[:2], np.zeros(2, np.uint32), table, u32(words),
                 np.zeros((2, words), np.uint32), out=10)
    assert (filler[0] != filler[1]).mean() > 0.9 and len(np.unique(filler[0])) == words
    unselected = run("stream_metadata", s.params_a, u32(2), TILES[:2], u32(words), np.zeros((words, 16), np.int32), u32(16),
                     np.zeros(words, np.uint8), u32(2), u32(16), np.zeros((2, words), np.uint32), u32(words), u32(1), u32(0),
                     out=9)
    assert (unselected[0] != unselected[1]).mean() > 0.9 and len(np.unique(unselected[0])) == words


def test_an_element_is_the_same_whichever_word_asks(run):
    """Element bytes asked for by different words, byte positions and tables of one tile agree; a
    different tile draws other codes."""
    s = spec(FORMATS[1], "discriminating")
    elements = [(so.OP_A, 3, 17), (so.OP_B, 40, 2), (so.OP_C, 63, 63)]
    first = [[so.entry(op, r, c, 0), so.ZERO, so.entry(so.OP_FILLER, 0, 0, 0), so.ZERO] for op, r, c in elements]
    second = [[so.ZERO, so.entry(so.OP_A, 0, 0, 1), so.ZERO, so.entry(op, r, c, 0)] for op, r, c in reversed(elements)]
    tables = np.array(first + second, np.int32)
    got = run("stream_words", *_stream_args(s), u32(3), TILES[[1, 1, 2]], np.array([0, 3, 0], np.uint32), tables,
              u32(3), np.zeros((3, 3), np.uint32), out=10)
    asked_first, asked_second = got[0] & 0xFF, (got[1] >> 24)[::-1]
    assert np.array_equal(asked_first, asked_second)
    assert np.array_equal(asked_first, [so.codes(s, op, TILES[1:2], r + 1, c + 1)[0, r, c] & 0xFF for op, r, c in elements])
    assert not np.array_equal(got[0], got[2])
