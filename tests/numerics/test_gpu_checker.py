"""The GPU numerics checker on the CPU: the operand stream's C and numpy versions draw the same
codes; the integer checker (host build of oracles/numerics/checker.h) agrees with the Python model
(the reference) on the stream's tiles and on `tcgen05_conformance.generators.numeric_vectors.mix`, and a mutant datapath
makes that cross-check fail; the CUDA kernels, compiled for the CPU (one block of one thread),
pack what the host packs and count, record and sample as they claim; they compile for sm_90a with
NVRTC; the whole `check` flow runs on a stand-in GPU."""

from __future__ import annotations

import ctypes
import dataclasses
import io
import shutil

import numpy as np
import pytest

from tcgen05_conformance.core.isa.fragments import MMA_SYNC_SHAPES, register_elements, wgmma_accumulator
from tcgen05_conformance.numerics import gpu_checker as gc
from tcgen05_conformance.numerics.measure import (
    ACC_BITS, COMBINATIONS, HOPPER_COMBINATIONS, INPUT_BITS, MIXED_FP8, WGMMA_N, d_fragment, pack_images, smem_images_for,
)
from tcgen05_conformance.device.registers import pack_registers, unpack_registers
from tcgen05_conformance.generators import numeric_stream as ns
from tcgen05_conformance.generators.numeric_vectors import mix
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.oracles.numerics.profiles import get_profile

ALL = HOPPER_COMBINATIONS  # the 24 same-type combinations and the 8 mixed fp8 ones
IDS = [c.id for c in ALL]
SEED = 20261125


@pytest.mark.parametrize("c", ALL, ids=IDS)
def test_stream_c_and_numpy_draw_the_same_codes(host, c):
    p, p_b = gc.stream_parameters(c, SEED)
    tiles = np.array([0, 1, 7, 2**33 + 5, 2**40 - 1], dtype=np.uint64)
    m, n = c.tile
    for params, op, rows, cols in ((p, ns.OP_A, m, c.k), (p_b, ns.OP_B, n, c.k), (p, ns.OP_C, m, n)):
        assert np.array_equal(host.stream(params, op, tiles, rows, cols), ns.codes(params, op, tiles, rows, cols)), op


def test_a_same_type_b_draws_as_before_and_a_mixed_b_in_its_own_format():
    """A same-type combination's B draws from A's parameters (its codes are those drawn before
    B had parameters of its own); a mixed combination's B differs from what A's format would draw
    at the same tiles, and the model reads it in B's format (the tests above: the C and numpy
    streams, the packing and the checker agree on every combination, the mixed ones included)."""
    same = next(c for c in COMBINATIONS if c.id == "mma.sync.e4m3.f32")
    q, q_b = gc.stream_parameters(same, SEED)
    assert np.array_equal(q, q_b)
    e4m3_e5m2 = next(c for c in MIXED_FP8 if c.id == "mma.sync.e4m3xe5m2.f32")
    p, p_b = gc.stream_parameters(e4m3_e5m2, SEED)
    tiles = np.arange(64, dtype=np.uint64)
    assert np.array_equal(p[:2], p_b[:2])  # one seed and combination number: the same row keys
    assert not np.array_equal(ns.codes(p_b, ns.OP_B, tiles, 8, 32), ns.codes(p, ns.OP_B, tiles, 8, 32))


def _fields(codes, exp_bits, frac_bits, shift=0):
    x = codes.astype(np.int64) >> shift
    return (x >> (exp_bits + frac_bits)) & 1, (x >> frac_bits) & ((1 << exp_bits) - 1), x & ((1 << frac_bits) - 1)


def test_stream_families_hold_what_they_claim():
    """e4m3 rows: NaN, subnormals, the largest exponent and exactly cancelling pairs all occur; f32
    c: zeros of both signs, subnormals, Inf and NaN occur (fields decoded here by hand)."""
    c = next(x for x in COMBINATIONS if x.id == "wgmma.e4m3.f32")
    p, _ = gc.stream_parameters(c, SEED)  # same-type: B draws from A's parameters
    a = ns.codes(p, ns.OP_A, np.arange(64), 64, 32)
    b = ns.codes(p, ns.OP_B, np.arange(64), 64, 32)
    sign, e, f = _fields(a, 4, 3)
    assert ((e == 15) & (f == 7)).any() and ((e == 0) & (f != 0)).any() and (e == 15).sum() > 100
    cancel_a = (a[..., 0::2] ^ 0x80) == a[..., 1::2]
    cancel_b = b[..., 0::2] == b[..., 1::2]
    assert cancel_a.all(axis=-1).sum() > 64 and cancel_b.all(axis=-1).sum() > 64
    cs, ce, cf = _fields(ns.codes(p, ns.OP_C, np.arange(64), 64, 64), 8, 23)
    assert ((ce == 0) & (cf == 0) & (cs == 0)).any() and ((ce == 0) & (cf == 0) & (cs == 1)).any()
    assert ((ce == 0) & (cf != 0)).any() and ((ce == 255) & (cf == 0)).any() and ((ce == 255) & (cf != 0)).any()
    assert 0.05 < np.mean(sign) < 0.95


def _stream_vectors(c, count):
    tiles = np.arange(-(-count // (c.tile[0] * c.tile[1])), dtype=np.uint64)
    return gc.tile_vectors(c, SEED, tiles)


@pytest.mark.parametrize("c", ALL, ids=IDS)
def test_checker_agrees_with_the_model(host, c):
    """10^5 stream vectors and 2 x 10^4 vectors of every numeric_vectors family, bit for bit."""
    profile = c.profile("sm_90a")
    params = checker.parameters(c.in_fmt, c.acc, c.k, profile, b_fmt=c.b_fmt, saturate=c.saturate)
    a, b, cc = _stream_vectors(c, 10**5)
    assert a.shape[0] >= 10**5
    mixed = mix(c.inputs, c.acc, c.k, 2 * 10**4, np.random.default_rng(SEED))
    for a_, b_, c_ in ((a, b, cc), mixed[:3]):
        want = checker.model_codes(a_, b_, c_, c.in_fmt, c.acc, profile, c.saturate, c.b_fmt)
        checker.cross_check(host.dot(params, a_, b_, c_), want, a_, b_, c_, c.id)


@pytest.mark.parametrize("cid, change, count", [
    ("wgmma.f16.f32", lambda dp: {"align_frac_bits": dp.align_frac_bits + 1}, 10**5),
    ("wgmma.e5m2.f32", lambda dp: {"align_frac_bits": dp.align_frac_bits + 1}, 10**5),
    ("mma.sync.bf16.f32", lambda dp: {"group_rounding": "rne"}, 10**5),
    ("mma.sync.e4m3.f16", lambda dp: {"split_ways": 1}, 10**5),  # its f16 sums accept any align_frac_bits >= 18
    # the grid floor shows in about 1 of 10^5 results (subnormal sums crossing a unit): a run's sample
    ("wgmma.bf16.f32", lambda dp: {"align_floor": dp.align_floor - 1}, 10**6),
    ("wgmma.tf32.f32", lambda dp: {"align_floor": dp.align_floor + 1}, 10**6),
], ids=["f16-align", "e5m2-align", "bf16-rounding", "e4m3-split", "bf16-floor-1", "tf32-floor+1"])
def test_a_mutant_datapath_fails_the_cross_check(host, cid, change, count):
    """A checker built from a datapath one parameter away from the profile's must be caught."""
    c = next(x for x in COMBINATIONS if x.id == cid)
    profile = c.profile("sm_90a")
    dp = get_profile(profile).datapath(c.in_fmt, c.acc)
    mutant = dataclasses.replace(dp, **change(dp))
    a, b, cc = _stream_vectors(c, count)
    got = host.dot(checker.parameters(c.in_fmt, c.acc, c.k, profile, datapath=mutant), a, b, cc)
    want = checker.model_codes(a, b, cc, c.in_fmt, c.acc, profile, c.saturate)
    with pytest.raises(checker.CrossCheckError, match="differs from the Python model"):
        checker.cross_check(got, want, a, b, cc, cid)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The CUDA kernels compiled for the CPU (tcgen05_conformance.device.check_kernels.HOST_STAND_IN), through ctypes."""
    from tcgen05_conformance.device.check_kernels import host_library

    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    return host_library(gc.checker_kernels_source(), str(tmp_path_factory.mktemp("kernels")))


def _ptr(x: np.ndarray):
    return ctypes.c_void_p(x.ctypes.data)


def _pack(kernels, streams, tile0, tiles, table):
    words = table.size // 4
    out = np.zeros(tiles * words, np.uint32)
    kernels.pack_operands(*map(_ptr, streams), ctypes.c_uint64(tile0), ctypes.c_uint32(tiles), _ptr(table),
                          ctypes.c_uint32(words), _ptr(out))
    return out


@pytest.mark.parametrize("c", ALL, ids=IDS)
def test_pack_kernel_reproduces_the_host_packing(kernels, c):
    """The words `pack_operands` draws (run on the CPU) are those `numerics measure --checker host`
    packs from the same codes (tcgen05_conformance.device.registers / pack_images), tile after tile."""
    p, p_b = gc.stream_parameters(c, SEED)
    m, n = c.tile
    tiles = np.array([5, 6], dtype=np.uint64)
    a, b, cm = (ns.codes(q, op, tiles, r, k) for q, op, r, k in ((p, ns.OP_A, m, c.k), (p_b, ns.OP_B, n, c.k),
                                                                 (p, ns.OP_C, m, n)))
    a_s, b_s = checker.as_storage(a, c.in_fmt), checker.as_storage(b, c.b_fmt or c.in_fmt)
    c_s = checker.as_storage(cm, c.acc)
    acc_bits = ACC_BITS[c.acc]
    if c.family == "mma.sync":
        shape = MMA_SYNC_SHAPES[INPUT_BITS[c.in_fmt]]
        bits = INPUT_BITS[c.in_fmt]
        expected = [pack_registers(a_s, *register_elements(shape.a, bits), bits),
                    pack_registers(b_s, *register_elements(shape.b, bits), bits),
                    pack_registers(c_s, *register_elements(shape.c, acc_bits), acc_bits)]
    else:
        image = pack_images(smem_images_for(c), a_s, b_s).view(np.uint32)
        expected = [image, pack_registers(c_s, *register_elements(wgmma_accumulator(WGMMA_N), acc_bits), acc_bits)]
    for (name, table), words in zip(gc.operand_tables(c), expected):
        assert np.array_equal(_pack(kernels, (p, p_b), 5, 2, table), words.reshape(-1)), name


@pytest.mark.parametrize("c", ALL, ids=IDS)
def test_check_kernel_counts_records_and_samples(kernels, c):
    """`check_tiles` (run on the CPU) over D words packed from the Python model's results, one of
    them wrong: every element counted, the wrong one recorded with the model's value as the
    checker's, the sample tiles' checker and silicon values kept."""
    m, n = c.tile
    profile = c.profile("sm_90a")
    tile0, tiles, sample_tiles = 2, 3, 3
    a, b, cc = gc.tile_vectors(c, SEED, np.arange(tile0, tile0 + tiles, dtype=np.uint64))
    model = checker.model_codes(a, b, cc, c.in_fmt, c.acc, profile, c.saturate, c.b_fmt)
    silicon = model.copy()
    bad = m * n + 5  # tile 3, element 5
    silicon[bad] ^= 0x1
    rows, cols = d_fragment(c)
    acc_bits = ACC_BITS[c.acc]
    d = pack_registers(silicon.reshape(tiles, m, n), rows, cols, acc_bits).reshape(-1)
    streams = gc.stream_parameters(c, SEED)
    params = checker.parameters(c.in_fmt, c.acc, c.k, profile, b_fmt=c.b_fmt, saturate=c.saturate)
    offsets = gc.d_offsets(c)
    sample_checker = np.zeros(sample_tiles * m * n, np.uint32)
    sample_silicon = np.zeros(sample_tiles * m * n, np.uint32)
    counters = np.zeros(2, np.uint64)
    records = np.zeros(4 * 5, np.uint32)
    u32 = ctypes.c_uint32
    kernels.check_tiles(_ptr(params), *map(_ptr, streams), ctypes.c_uint64(tile0), u32(tiles), u32(m), u32(n), _ptr(d),
                        u32(rows.shape[0] * rows.shape[1]), _ptr(offsets), u32(acc_bits // 8), u32(sample_tiles),
                        _ptr(sample_checker), _ptr(sample_silicon), _ptr(counters), _ptr(records), u32(4))
    assert counters.tolist() == [tiles * m * n, 1]
    assert records[:5].tolist() == [3, 0, 5, int(silicon[bad]), int(model[bad])]
    assert np.array_equal(sample_checker[tile0 * m * n:], model[: m * n])  # tile 2 is the only sample tile run
    assert np.array_equal(sample_silicon[tile0 * m * n:], silicon[: m * n])
    assert not sample_checker[: tile0 * m * n].any()


def test_d_offsets_read_what_unpack_registers_reads():
    for c in COMBINATIONS:
        rows, cols = d_fragment(c)
        acc_bits = ACC_BITS[c.acc]
        d = np.random.default_rng(1).integers(0, 2**32, (1, rows.shape[0], rows.shape[1]), dtype=np.uint32)
        want = unpack_registers(d, rows, cols, acc_bits, c.tile, np.dtype(f"u{acc_bits // 8}")).reshape(-1)
        got = d.view(np.uint8).reshape(-1)
        offsets = gc.d_offsets(c)
        read = sum(got[offsets + i].astype(np.uint64) << np.uint64(8 * i) for i in range(acc_bits // 8))
        assert np.array_equal(read, want.astype(np.uint64)), c.id


def test_kernels_compile_for_sm_90a():
    from tcgen05_conformance.device.check_kernels import NvrtcError

    try:
        cubin = gc._cubin()
    except NvrtcError as e:
        if "not available" in str(e):
            pytest.skip(str(e))
        raise
    assert b"check_tiles" in cubin and b"pack_operands" in cubin


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_the_checker_kernels_compile_for_blackwell(arch):
    """`numerics measure --tcgen05 --checker gpu` compiles the campaign's checker kernels for its target."""
    from tcgen05_conformance.device.check_kernels import JOB_KERNELS, NvrtcError, compile_cubin

    try:
        cubin = compile_cubin(gc.checker_kernels_source(), arch)
    except NvrtcError as e:
        if "not available" in str(e):
            pytest.skip(str(e))
        raise
    assert all(JOB_KERNELS[name].entry.encode() in cubin for name in ("decode_operands", "reference_products"))


def test_a_silicon_mismatch_is_decoded_with_the_model(host):
    """decode_mismatch re-evaluates the vector with the Python model, whatever the checker said."""
    c = next(x for x in COMBINATIONS if x.id == "mma.sync.bf16.f32")
    a, b, cc = gc.tile_vectors(c, SEED, np.array([9], dtype=np.uint64))
    element = 5 * c.tile[1] + 3
    want = checker.model_codes(a[element:element + 1], b[element:element + 1], cc[element:element + 1], c.in_fmt,
                               c.acc, c.profile("sm_90a"))
    record = np.array([9, 0, element, 0x12345678, 0xDEADBEEF], np.uint32)
    out = gc.decode_mismatch(c, SEED, "sm_90a", record)
    assert (out["m"], out["n"], out["silicon"], out["checker"]) == (5, 3, "0x12345678", "0xdeadbeef")
    assert out["model"] == f"{int(want[0]):#x}" and out["c"] == f"{int(cc[element]):#x}"


class _Kernel:
    def __init__(self, name):
        self.name = name

    def get_kernel(self, name):
        return _Kernel(name)


class _StandInGpu:
    """A CPU stand-in for tcgen05_conformance.device.launch.Gpu: pack_operands draws with numpy, the tensor core is the
    Python model (with one planted wrong bit), check_tiles is the host checker."""

    name, arch = "stand-in", "sm_90"

    def __init__(self, host, c, seed, profile, plant):
        self.host, self.c, self.seed, self.profile, self.plant = host, c, seed, profile, plant

    def load_cubin(self, data):
        return _Kernel("module")

    def load(self, ptx, arch):
        return _Kernel("module")

    def to_device(self, array):
        return np.array(array)

    def empty(self, shape, dtype):
        return np.zeros(shape, dtype)

    def to_host(self, array):
        return np.array(array)

    def sync(self):
        pass

    def launch(self, kernel, grid, block, shared, *args):
        c = self.c
        m, n = c.tile
        if kernel.name == "pack_operands":
            return
        if kernel.name in ("mma_sync_batch", "wgmma_batch"):
            self.d = args[-1] if kernel.name == "mma_sync_batch" else args[2]
            return
        (params, _, _, tile0, count, _, _, d, d_words, offsets, acc_bytes, sample_tiles, sample_checker,
         sample_silicon, counters, records, max_records) = args
        tiles = np.arange(int(tile0), int(tile0) + int(count), dtype=np.uint64)
        a, b, cc = gc.tile_vectors(c, self.seed, tiles)
        silicon = checker.model_codes(a, b, cc, c.in_fmt, c.acc, c.profile(self.profile), c.saturate, c.b_fmt)
        if int(tile0) == 0 and self.plant is not None:
            silicon[self.plant] ^= 1
        want = self.host.dot(params, a, b, cc)
        counters[0] += silicon.size
        for i in np.flatnonzero(silicon != want):
            slot = int(counters[1])
            counters[1] += 1
            g = int(tiles[i // (m * n)])
            if slot < int(max_records):
                records[slot * 5:slot * 5 + 5] = [g & 0xFFFFFFFF, g >> 32, i % (m * n), silicon[i], want[i]]
        keep = tiles < int(sample_tiles)
        first = int(tile0) * m * n
        sample_checker[first:first + keep.sum() * m * n] = want[: keep.sum() * m * n]
        sample_silicon[first:first + keep.sum() * m * n] = silicon[: keep.sum() * m * n]


@pytest.mark.parametrize("cid", ["mma.sync.e5m2.f32", "mma.sync.e4m3xe5m2.f32"])
def test_check_runs_counts_cross_checks_and_decodes_on_a_stand_in(host, monkeypatch, cid):
    """The whole `check` flow over batches: every inner product counted as checked, the planted
    silicon error reported decoded with the model's value, the sample cross-checked."""
    c = next(x for x in ALL if x.id == cid)
    monkeypatch.setattr(gc, "BATCH_INNER_PRODUCTS", 128 * 3)
    gpu = _StandInGpu(host, c, SEED, "sm_90a", plant=7)
    seen = []
    report = gc.check(gpu, [c], 128 * 10, SEED, "sm_90a", 1, 128 * 4, log=io.StringIO(),
                      progress=lambda r: seen.append(len(r["combinations"])))
    assert seen == [1]
    e = report["combinations"][0]
    assert (e["inner_products"], e["checked"], e["mismatches"], e["sample_cross_checked"]) == (1280, 1280, 1, 512)
    assert e["sample_silicon_mismatches"] == 1 and report["unchecked"] == 0
    record = e["mismatch_records"][0]
    assert (record["tile"], record["m"], record["n"]) == (0, 0, 7)
    assert record["model"] == record["checker"] != record["silicon"]
    assert f"| {cid} |" in gc.markdown(report) and e["b_input"] == (c.b_fmt or c.in_fmt)


def test_check_stops_when_the_checker_differs_from_the_model(host, monkeypatch):
    c = next(x for x in COMBINATIONS if x.id == "wgmma.bf16.f32")
    real = checker.parameters
    monkeypatch.setattr(checker, "parameters", lambda *a, **k: _rounding_mutant(real(*a, **k)))
    gpu = _StandInGpu(host, c, SEED, "sm_90a", plant=0)
    with pytest.raises(checker.CrossCheckError, match="wgmma.bf16.f32"):
        gc.check(gpu, [c], 4096, SEED, "sm_90a", 1, 4096, log=io.StringIO())


def _rounding_mutant(params):
    out = params.copy()
    out[checker.datapath_index("group_rne")] = 1  # round to nearest instead of truncating
    return out


def test_sweep_finds_the_profiles_value_and_refutes_a_wrong_one(host, monkeypatch):
    """On a stand-in whose silicon is the sm_90a model (no planted error), sweeping align_frac_bits
    gives 0 mismatches at the profile's own value (listed first) and mismatches at a narrower
    alignment window, each variant's checker agreeing with the model run under that variant."""
    c = next(x for x in COMBINATIONS if x.id == "mma.sync.f16.f32")
    monkeypatch.setattr(gc, "BATCH_INNER_PRODUCTS", 128 * 4)
    gpu = _StandInGpu(host, c, SEED, "sm_90a", plant=None)
    report = gc.sweep(gpu, [c], "align_frac_bits", [25, 8], 128 * 8, SEED, "sm_90a", 128 * 2, log=io.StringIO())
    rows = report["combinations"][0]["values"]
    assert [(r["value"], r["profile's"]) for r in rows] == [(25, True), (8, False)]
    assert rows[0]["mismatches"] == 0 and rows[0]["checked"] == 1024
    assert rows[1]["mismatches"] > 0 and rows[1]["sample_cross_checked"] == 256
    first = rows[1]["first_mismatches"][0]
    assert first["model"] == first["checker"] != first["silicon"]


def test_sweep_refuses_a_value_the_datapath_cannot_take(host):
    c = next(x for x in COMBINATIONS if x.id == "mma.sync.f16.f32")
    with pytest.raises(ValueError, match="multiple of split_ways"):  # 16 products in 3 groups
        gc.variant(c.profile("sm_90a"), c.in_fmt, c.acc, "split_ways", 3)
