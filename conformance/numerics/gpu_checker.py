"""`numerics measure --checker gpu`: inner products drawn, run and checked on the GPU, so that
10^9 per combination take seconds, with the Python model kept as the reference.

Per combination and batch of tiles: `pack_operands` draws A, B and C on the device (the counter-
based operand stream, `generators/numeric_stream.h`) into the words the tensor-core kernel of
`numerics measure` reads (mma.sync registers or wgmma shared-memory images, placed by tables built
here from the ISA's fragments and the oracle's shared-memory layout); the tensor-core kernel runs;
`check_tiles` redraws each tile, computes every element with the integer checker
(`oracles/numerics/checker.h`, parameterised by the profile's datapath) and counts mismatches.
Only counters, the first mismatches and the sample tiles come back. Meanwhile worker processes
redraw the sample tiles with numpy and run the Python model on them; the run stops
(CrossCheckError) when the checker's values for the sample differ from the model's. Silicon
mismatches are re-evaluated by the model and reported decoded (inputs, silicon, checker, model).
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import cache
from typing import Callable, Sequence, TextIO

import numpy as np

from tcgen05_conformance.core.isa.fragments import MMA_SYNC_SHAPES, register_elements, wgmma_accumulator
from tcgen05_conformance.device.target_gpu import TARGET
from tcgen05_conformance.numerics.measure import (
    ACC_BITS, HOPPER_COMBINATIONS, INPUT_BITS, WGMMA_N, Combination, d_fragment, kernel_source, smem_images_for,
)
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.check_kernels import RECORD_WORDS, THREADS, compile_cubin, source
from tcgen05_conformance.generators import numeric_stream
from tcgen05_conformance.oracles.numerics import checker
from tcgen05_conformance.oracles.numerics.profiles import Datapath, Profile, get_profile

BATCH_INNER_PRODUCTS = 1 << 24  # per launch of each kernel
MAX_RECORDS = 64  # silicon mismatches kept per combination
CHECK_THREADS = 128
GRID_LIMIT = 132 * 16  # CTAs of the pack and check kernels (H100: 132 SMs)


def grid_for(work: int) -> int:
    """CTAs of THREADS threads for `work` items, each thread looping over the items beyond the grid."""
    return max(1, min(GRID_LIMIT, -(-work // THREADS)))


# --- tables: where each operand byte goes, where each D element is --------------------------------


def _entry(op: int, row: np.ndarray, col: np.ndarray, byte: np.ndarray) -> np.ndarray:
    """`pack_operands` table entries: op << 24 | row << 16 | col << 8 | byte of the element."""
    return (op << 24) | (row.astype(np.int64) << 16) | (col.astype(np.int64) << 8) | byte


def register_table(fragment, bits: int, op: int) -> np.ndarray:
    """Per byte of a tile's fragment words [registers, threads] (as `tcgen05_conformance.device.registers.pack_registers`
    lays them out), the element byte that goes there."""
    rows, cols = register_elements(fragment, bits)  # [registers, threads, per word]
    size = bits // 8
    byte = np.arange(4)
    slot = byte * 8 // bits
    return _entry(op, rows[..., slot], cols[..., slot], byte % size).astype(np.int32).reshape(-1)


def image_table(c: Combination) -> np.ndarray:
    """Per byte of a wgmma tile's shared-memory image (`numerics_measure.pack_images`), the element
    byte that goes there, -1 for padding."""
    img = smem_images_for(c)
    table = np.full(img.image_bytes, -1, np.int64)
    for op, where in ((numeric_stream.OP_A, img.a_bytes), (numeric_stream.OP_B, img.b_bytes)):
        rows, k, size = where.shape
        r, kk, s = np.meshgrid(np.arange(rows), np.arange(k), np.arange(size), indexing="ij")
        table[where.reshape(-1)] = _entry(op, r, kk, s).reshape(-1)
    return table.astype(np.int32)


def d_offsets(c: Combination) -> np.ndarray:
    """Byte offset of D[m, n] in a tile's result words [registers, threads], indexed m * N + n."""
    rows, cols = d_fragment(c)
    registers, threads, per = rows.shape
    size = ACC_BITS[c.acc] // 8
    word = np.arange(registers)[:, None, None] * threads + np.arange(threads)[None, :, None]
    offset = word * 4 + np.arange(per)[None, None, :] * size
    out = np.full(c.tile[0] * c.tile[1], -1, np.int64)
    out[(rows * c.tile[1] + cols).reshape(-1)] = np.broadcast_to(offset, rows.shape).reshape(-1)
    return out.astype(np.uint32)


def operand_tables(c: Combination) -> list[tuple[str, np.ndarray]]:
    """(name, table) of each input buffer of the tensor-core kernel, in its argument order."""
    acc_bits = ACC_BITS[c.acc]
    if c.family == "mma.sync":
        shape = MMA_SYNC_SHAPES[INPUT_BITS[c.in_fmt]]
        bits = INPUT_BITS[c.in_fmt]
        return [("a", register_table(shape.a, bits, numeric_stream.OP_A)),
                ("b", register_table(shape.b, bits, numeric_stream.OP_B)),
                ("c", register_table(shape.c, acc_bits, numeric_stream.OP_C))]
    return [("image", image_table(c)),
            ("c", register_table(wgmma_accumulator(WGMMA_N), acc_bits, numeric_stream.OP_C))]


# --- the host side: operand stream, model, decoding ---------------------------------------------


def stream_parameters(c: Combination, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The operand stream's parameters of `c`: A's and C's, and B's (its own format where the inputs
    are mixed; the same seed and combination number, so a same-type B draws what A's array draws)."""
    number = HOPPER_COMBINATIONS.index(c)
    return (numeric_stream.parameters(seed, number, c.in_fmt, c.acc),
            numeric_stream.parameters(seed, number, c.b_fmt or c.in_fmt, c.acc))


def tile_vectors(c: Combination, seed: int, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows a [*, K], b [*, K] and c [*] of every element of the given tiles (m-major, then n)."""
    m, n = c.tile
    p, p_b = stream_parameters(c, seed)
    a = numeric_stream.codes(p, numeric_stream.OP_A, tiles, m, c.k)
    b = numeric_stream.codes(p_b, numeric_stream.OP_B, tiles, n, c.k)
    cc = numeric_stream.codes(p, numeric_stream.OP_C, tiles, m, n)
    t = len(tiles)
    return (np.broadcast_to(a[:, :, None, :], (t, m, n, c.k)).reshape(-1, c.k),
            np.broadcast_to(b[:, None, :, :], (t, m, n, c.k)).reshape(-1, c.k), cc.reshape(-1))


def sample_model(c: Combination, seed: int, sample_tiles: int, profile: str) -> tuple[np.ndarray, float]:
    """The Python model's results for the sample tiles (0 .. sample_tiles - 1), and its seconds."""
    t0 = time.perf_counter()
    a, b, cc = tile_vectors(c, seed, np.arange(sample_tiles))
    out = checker.model_codes(a, b, cc, c.in_fmt, c.acc, c.profile(profile), c.saturate, c.b_fmt)
    return out, time.perf_counter() - t0


def decode_mismatch(c: Combination, seed: int, profile: str | Profile, record: np.ndarray) -> dict:
    """A silicon mismatch with its inputs and the model's result (evaluated here, independently
    of the checker) under `profile` (a name, taken as its variant for `c`'s family, or a Profile)."""
    tile = int(record[0]) | (int(record[1]) << 32)
    element = int(record[2])
    m, n = divmod(element, c.tile[1])
    a, b, cc = tile_vectors(c, seed, np.array([tile]))
    a, b, cc = a[element:element + 1], b[element:element + 1], cc[element:element + 1]
    model = checker.model_codes(a, b, cc, c.in_fmt, c.acc,
                                profile if isinstance(profile, Profile) else c.profile(profile), c.saturate, c.b_fmt)
    return {"tile": tile, "m": m, "n": n, "a": [f"{int(x):#x}" for x in a[0]], "b": [f"{int(x):#x}" for x in b[0]],
            "c": f"{int(cc[0]):#x}", "silicon": f"{int(record[3]):#x}", "checker": f"{int(record[4]):#x}",
            "model": f"{int(model[0]):#x}"}


# --- the GPU side -------------------------------------------------------------------------------


@cache
def checker_kernels_source() -> str:
    """The checker kernels' CUDA source (`tcgen05_conformance.device.check_kernels.source`) with the two headers they
    need: the operand stream (`generators/numeric_stream.h`) and the checker (`checker.h`)."""
    return source(numeric_stream.C_SOURCE.read_text(), checker.C_SOURCE.read_text())


@cache
def _cubin() -> bytes:
    return compile_cubin(checker_kernels_source(), TARGET)


def run_combination(gpu, module, c: Combination, count: int, sample: int, seed: int, profile: str,
                    datapath: Datapath | None = None) -> dict:
    """Draw, run and check `count` inner products (whole tiles) of `c` on `gpu` against `profile`'s
    datapath (or `datapath`, a variant of it); the GPU's counts, the checker's and silicon's values
    for the first `sample` inner products (whole tiles), the mismatch records and the seconds per
    stage (each stage waits for the GPU before it ends)."""
    m, n = c.tile
    per_tile = m * n
    tiles = -(-count // per_tile)
    batch = max(1, min(tiles, BATCH_INNER_PRODUCTS // per_tile))
    sample_tiles = min(tiles, -(-sample // per_tile))
    stages = Stages()
    with stages("setup"):
        pack, check = module.get_kernel("pack_operands"), module.get_kernel("check_tiles")
        tensor = gpu.load(kernel_source(c), TARGET).get_kernel("mma_sync_batch" if c.family == "mma.sync" else "wgmma_batch")
        stream_a, stream_b = (gpu.to_device(p) for p in stream_parameters(c, seed))
        params = gpu.to_device(checker.parameters(c.in_fmt, c.acc, c.k, c.profile(profile), b_fmt=c.b_fmt,
                                                  saturate=c.saturate, datapath=datapath))
        tables = [(name, gpu.to_device(t), t.size // 4) for name, t in operand_tables(c)]
        inputs = [gpu.empty((batch * words,), np.uint32) for _, _, words in tables]
        threads = 32 if c.family == "mma.sync" else 128
        registers = len(d_fragment(c)[0])
        d_words = registers * threads
        d = gpu.empty((batch * d_words,), np.uint32)
        offsets = gpu.to_device(d_offsets(c))
        sample_checker = gpu.empty((sample_tiles * per_tile,), np.uint32)
        sample_silicon = gpu.empty((sample_tiles * per_tile,), np.uint32)
        counters = gpu.to_device(np.zeros(2, np.uint64))
        records = gpu.to_device(np.zeros(MAX_RECORDS * RECORD_WORDS, np.uint32))
        shared = (m * c.k + n * c.k + m * n) * 4
        gpu.sync()
    for tile0 in range(0, tiles, batch):
        count_now = min(batch, tiles - tile0)
        with stages("draw"):
            for (_, table, words), buffer in zip(tables, inputs):
                gpu.launch(pack, grid_for(count_now * words), THREADS, 0, stream_a, stream_b, np.uint64(tile0),
                           np.uint32(count_now), table, np.uint32(words), buffer)
            gpu.sync()
        with stages("tensor_core"):
            if c.family == "mma.sync":
                gpu.launch(tensor, min(count_now // 4 + 1, 1024), 128, 0, *inputs, d, np.uint32(count_now))
            else:
                img = smem_images_for(c)
                gpu.launch(tensor, min(count_now, 528), 128, img.image_bytes, inputs[0], inputs[1], d,
                           np.uint32(count_now), np.uint64(img.a_desc), np.uint64(img.b_desc))
            gpu.sync()
        with stages("check"):
            gpu.launch(check, min(count_now, GRID_LIMIT), CHECK_THREADS, shared, params, stream_a, stream_b, np.uint64(tile0),
                       np.uint32(count_now), np.uint32(m), np.uint32(n), d, np.uint32(d_words), offsets,
                       np.uint32(ACC_BITS[c.acc] // 8), np.uint32(sample_tiles), sample_checker, sample_silicon,
                       counters, records, np.uint32(MAX_RECORDS))
            gpu.sync()
    with stages("read_back"):
        counts = gpu.to_host(counters)
        result = {"tiles": tiles, "inner_products": tiles * per_tile, "checked": int(counts[0]),
                  "mismatches": int(counts[1]),
                  "records": gpu.to_host(records).reshape(MAX_RECORDS, RECORD_WORDS)[: min(int(counts[1]), MAX_RECORDS)],
                  "sample_checker": gpu.to_host(sample_checker), "sample_silicon": gpu.to_host(sample_silicon)}
    result["seconds"] = dict(stages.wall)
    return result


def check(gpu, combinations: Sequence[Combination], count: int, seed: int, profile: str, jobs: int, sample: int,
          log: TextIO | None = None, progress: Callable[[dict], None] | None = None) -> dict:
    """Run and check `count` inner products per combination (rounded up to whole tiles) on `gpu`
    (a `tcgen05_conformance.device.launch.Gpu` of sm_90), cross-checking the GPU checker with the Python model on the
    first `sample` of each (whole tiles) in `jobs` worker processes; the report (JSON-able).
    CrossCheckError when the checker and the model differ. Progress lines go to `log`; `progress`
    gets the report so far after each combination (a run cut short keeps what it checked)."""
    log = log or sys.stderr
    started = time.perf_counter()
    module = gpu.load_cubin(_cubin())
    compile_s = time.perf_counter() - started
    report = {"gpu": gpu.name, "arch": gpu.arch, "profile": profile, "seed": seed, "checker": "gpu",
              "compile_s": round(compile_s, 3), "combinations": []}
    with ProcessPoolExecutor(jobs) as pool:
        models = {c.id: pool.submit(sample_model, c, seed, min(-(-count // (c.tile[0] * c.tile[1])),
                                                              -(-sample // (c.tile[0] * c.tile[1]))), profile)
                  for c in combinations}
        for c in combinations:
            t0 = time.perf_counter()
            r = run_combination(gpu, module, c, count, sample, seed, profile)
            w0 = time.perf_counter()
            model, model_s = models.pop(c.id).result()
            wait_s = time.perf_counter() - w0
            c0 = time.perf_counter()
            if (r["sample_checker"] != model).any():
                a, b, cc = tile_vectors(c, seed, np.arange(model.size // (c.tile[0] * c.tile[1])))
                checker.cross_check(r["sample_checker"], model, a, b, cc, c.id)
            silicon_vs_model = int((r["sample_silicon"] != model).sum())
            mismatches = [decode_mismatch(c, seed, profile, rec) for rec in r["records"]]
            stages = {k: round(v, 3) for k, v in r["seconds"].items()}
            stages.update(host_model=round(model_s, 3), wait_for_model=round(wait_s, 3),
                          cross_check=round(time.perf_counter() - c0, 3))
            entry = {"id": c.id, "instruction": c.family, "profile": c.profile(profile), "input": c.in_fmt,
                     "b_input": c.b_fmt or c.in_fmt,
                     "accumulator": c.acc, "satfinite": c.satfinite, "k": c.k, "inner_products": r["inner_products"],
                     "checked": r["checked"], "mismatches": r["mismatches"], "sample_cross_checked": int(model.size),
                     "sample_silicon_mismatches": silicon_vs_model,
                     "gpu_s": round(sum(r["seconds"][s] for s in ("draw", "tensor_core", "check")), 3),
                     "stages_s": stages, "seconds": round(time.perf_counter() - t0, 3),
                     "mismatch_records": mismatches}
            report["combinations"].append(entry)
            print(f"{c.id}: {entry['checked']} of {entry['inner_products']} inner products checked, "
                  f"{entry['mismatches']} mismatches, sample of {entry['sample_cross_checked']} agrees with the model, "
                  f"GPU {entry['gpu_s']} s, {entry['seconds']} s", file=log, flush=True)
            if progress:
                progress(_totals(report, started))
    return _totals(report, started)


def variant(profile: str, in_fmt: str, acc: str, parameter: str, value) -> Profile:
    """`profile` with one parameter of its `in_fmt` -> `acc` datapath set to `value` (ValueError
    when the datapath refuses it)."""
    base = get_profile(profile)
    key = (in_fmt, acc)
    changed = replace(base.datapath(in_fmt, acc), **{parameter: value})
    return replace(base, name=f"{base.name}[{parameter}={value}]", datapaths={**base.datapaths, key: changed})


def sweep(gpu, combinations: Sequence[Combination], parameter: str, values: Sequence, count: int, seed: int,
          profile: str, sample: int, log: TextIO | None = None) -> dict:
    """Silicon mismatches of each value of one datapath `parameter` (the profile's own value first):
    `count` inner products per combination and value, checked on the GPU by the checker built from
    the varied datapath. Each variant's checker is first cross-checked with the Python model run
    under the same variant on `sample` inner products (CrossCheckError on any difference), so a
    count of 0 means the variant reproduces silicon, not that the checker skipped it."""
    log = log or sys.stderr
    started = time.perf_counter()
    module = gpu.load_cubin(_cubin())
    report = {"gpu": gpu.name, "arch": gpu.arch, "profile": profile, "seed": seed, "parameter": parameter,
              "count": count, "sample": sample, "combinations": []}
    for c in combinations:
        name = c.profile(profile)
        own = getattr(get_profile(name).datapath(c.in_fmt, c.acc), parameter)
        rows = []
        for value in [own, *(v for v in values if v != own)]:
            varied = variant(name, c.in_fmt, c.acc, parameter, value)
            datapath = varied.datapath(c.in_fmt, c.acc)
            r = run_combination(gpu, module, c, count, sample, seed, name, datapath)
            tiles = r["sample_checker"].size // (c.tile[0] * c.tile[1])
            a, b, cc = tile_vectors(c, seed, np.arange(tiles))
            model = checker.model_codes(a, b, cc, c.in_fmt, c.acc, varied, c.saturate, c.b_fmt)
            checker.cross_check(r["sample_checker"], model, a, b, cc, f"{c.id} {parameter}={value}")
            rows.append({"value": value, "profile's": value == own, "inner_products": r["inner_products"],
                         "checked": r["checked"], "mismatches": r["mismatches"],
                         "sample_cross_checked": int(model.size),
                         "first_mismatches": [decode_mismatch(c, seed, varied, rec) for rec in r["records"][:4]]})
            print(f"{c.id} {parameter}={value}: {r['mismatches']} mismatches in {r['checked']} inner products",
                  file=log, flush=True)
        report["combinations"].append({"id": c.id, "profile": name, "values": rows})
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def _totals(report: dict, started: float) -> dict:
    """The report with its totals over the combinations done so far."""
    report["seconds"] = round(time.perf_counter() - started, 3)
    report["inner_products"] = {e["id"]: e["inner_products"] for e in report["combinations"]}
    report["mismatches"] = sum(e["mismatches"] for e in report["combinations"])
    report["unchecked"] = sum(e["inner_products"] - e["checked"] for e in report["combinations"])
    return report


def markdown(report: dict) -> str:
    """The report as a Markdown table, one row per combination."""
    lines = ["| combination | profile | inner products | checked | mismatches | sample cross-checked | GPU s | s |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for e in report["combinations"]:
        lines.append(f"| {e['id']} | `{e['profile']}` | {e['inner_products']:,} | {e['checked']:,} | "
                     f"{e['mismatches']} | {e['sample_cross_checked']:,} | {e['gpu_s']} | {e['seconds']} |")
    total = sum(e["checked"] for e in report["combinations"])
    lines.append(f"\n{total:,} inner products checked in {report['seconds']} s, {report['mismatches']} mismatches.")
    return "\n".join(lines) + "\n"
