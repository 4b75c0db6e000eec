"""The campaign's stream data sets (`campaign --draw gpu`): each drawn instruction's data sets are
drawn on the GPU from the counter-based operand stream (`generators.stream_data_sets`), so the
host draws instructions only, never operand data, and nothing but tables crosses to the GPU.

A producer draws a chunk's instructions, judges each by itself (its judging profile, whether the
oracle models it, the checker's parameters: `stream_parameters`), has the Python model evaluate
every N-th program of the chunk, rebuilt on the host from its tile (the sample), and ships per
kernel form the tables that say where each byte of a data set comes from, packed into one buffer
(`stream_group`). The GPU worker (`GpuStream`) draws every program's shared-memory image and
registers (`stream_words`, `stream_metadata`), reads A, B and C out of them as the layout tables
place them, imm-scale and scale-d applied (`stream_operand`, `stream_columns`), runs the tensor
core's kernel and the integer checker on them, the checker counting the words in which the two
differ (`reference_products`), all queued on its stream so that it prepares the next launch while
this one runs. Three checks keep it honest: the sampled programs' images
and registers the GPU drew must equal the host's rebuild byte for byte (`drawn_differently`),
the checker's D of the sample must equal the model's (`checker_differs`), and a program whose D
differs is rebuilt and judged by the oracle as `run` judges it. `host_draw` and `stream_result`
do a launch's drawing and counting with the numpy twin, for runs without a GPU.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np

from conformance.core.instructions import MmaSp, WgmmaMma
from conformance.core.isa.mma import TYPE_BITS
from conformance.core.program import Program
from conformance.tools.campaign_checker import Operands, word_table
from conformance.tools.numerics_gpucheck import THREADS, grid_for
from device.hopper_batch import control_records, pack, pack_d, register_bytes, unpack_d
from device.ptx.kernels import HopperForm
from generators import stream_operands as so
from generators.stream_data_sets import Metadata, stream_layout, stream_programs
from oracles.numerics import checker

REGISTER_OPS = {"a": so.OP_A, "b": so.OP_B, "c": so.OP_C}


@dataclass(frozen=True)
class StreamPrograms:
    """Programs named by stream tiles: instruction `ops[instruction_of[i]]` with data set
    `tiles[i]` drawn under `spec`, rebuilt on demand (`programs`)."""

    ops: tuple[WgmmaMma | MmaSp, ...]
    instruction_of: np.ndarray  # int32 [P]
    tiles: np.ndarray  # uint64 [P]
    spec: so.StreamSpec
    target: str
    profile: str  # the programs' own (as generated: "exact" for exact inputs)

    def __len__(self) -> int:
        return len(self.tiles)

    def programs(self, positions: np.ndarray | list[int] | None = None) -> list[Program]:
        """The programs at `positions` (default all), in that order."""
        positions = np.arange(len(self)) if positions is None else np.asarray(positions, np.int64)
        out: dict[int, Program] = {}
        for i in np.unique(self.instruction_of[positions]).tolist():
            members = positions[self.instruction_of[positions] == i]
            for k, p in zip(members.tolist(), stream_programs(self.ops[i], self.spec, self.tiles[members], self.target,
                                                              self.profile)):
                out[k] = p
        return [out[k] for k in positions.tolist()]


@dataclass(frozen=True)
class StreamGroup:
    """A launch group of stream programs (one kernel form): the kernel; what the GPU reads, packed
    by the producer into one buffer that goes to the GPU in one copy (`inputs`, its arrays at
    `layout`: name -> (offset, shape, dtype)): the tiles, each instruction's image table
    (`image_words` rows each) and where each program's starts, A's and B's byte addresses per
    instruction (absent for an operand in registers), each program's control record and operand
    masks (xor A, xor B, and C: imm-scale and scale-d), the sample's positions, zeros for the
    counts, and the constants every kernel of the launch reads: the stream's parameters and exact
    tables, the checker's parameters, the form's register table, the word table the checker writes
    D by (`campaign_checker.word_table`) and a sparse form's metadata cells, all made by the
    producer so that a GPU worker keeps nothing per form and copies nothing else; the checker's
    parameters, the shapes (M, N, K stored, K of B) and element bytes, and the sample: positions,
    the model's D packed as the kernel stores D, and the images and registers the host rebuilt
    for them."""

    text: str
    cubin: bytes
    form: HopperForm
    source: StreamPrograms
    inputs: np.ndarray
    layout: dict[str, tuple[int, tuple[int, ...], str]]
    image_words: int
    word_bits: int
    parameters: np.ndarray
    shape: tuple[int, int, int, int]
    element_bytes: tuple[int, int]
    metadata: Metadata | None
    sample: np.ndarray
    sample_words: np.ndarray
    sample_images: np.ndarray
    sample_registers: np.ndarray
    form_name: str
    input_formats: tuple[str, ...]
    accumulator: str
    profile: str

    @property
    def programs(self) -> int:
        return len(self.source)

    @property
    def image_bytes(self) -> int:
        return 4 * self.image_words

    def table(self, name: str) -> np.ndarray | None:
        """The array `name` of `inputs` (None when the group has none)."""
        if name not in self.layout:
            return None
        at, shape, dtype = self.layout[name]
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return self.inputs[at:at + size].view(dtype).reshape(shape)

    @property
    def image_tables(self) -> np.ndarray:
        return self.table("image_tables")

    @property
    def register_table(self) -> np.ndarray:
        return self.table("register_table")

    @property
    def word_table(self) -> np.ndarray:
        return self.table("word_table")

    @property
    def a_addresses(self) -> np.ndarray | None:
        return self.table("a_addresses")

    @property
    def b_addresses(self) -> np.ndarray | None:
        return self.table("b_addresses")

    @property
    def masks(self) -> np.ndarray:
        """[P, 3]: xor A, xor B, and C."""
        return self.table("masks").T

    @property
    def offsets(self) -> tuple[int, int, int]:
        """Where B, C and the columns start in the operand buffer (words), as `Operands.offsets`."""
        p = self.programs
        m, n, k, k_b = self.shape
        b_at = p * m * k
        c_at = b_at + p * n * k_b
        return b_at, c_at, c_at + p * m * n

    @property
    def operand_words(self) -> int:
        p = self.programs
        m, _, k, _ = self.shape
        return self.offsets[2] + (-(-p * m * k // 4) if self.metadata is not None else 0)


@cache
def register_table(form: HopperForm) -> np.ndarray:
    """The stream table of a form's register words (int32 [threads * words_in, 4]): each byte of
    an element of a register operand from its stream code; the metadata word and unused bytes zero."""
    table = np.full(form.threads * form.words_in * 4, so.ZERO, np.int32)
    for name, where, rows, cols, byte in register_bytes(form):
        table[where] = so.entries(REGISTER_OPS[name], rows, cols, byte)
    table.setflags(write=False)
    return table.reshape(-1, 4)


def operand_masks(ops: list[WgmmaMma | MmaSp]) -> np.ndarray:
    """Per program [P, 3] uint32: the xor that negates A and B (imm-scale -1 flips each sign bit,
    PTX ISA 9.7.15.5.2) and the and that keeps C (scale-d false: D = A x B, as adding +0)."""
    sign = lambda fmt, scale: (1 << (TYPE_BITS[fmt] - 1)) if scale == -1 else 0  # noqa: E731
    return np.array([(sign(op.atype, getattr(op, "imm_scale_a", 1)), sign(op.btype, getattr(op, "imm_scale_b", 1)),
                      0xFFFFFFFF if getattr(op, "scale_d", True) else 0) for op in ops], np.uint32).reshape(-1, 3)


def stream_parameters(op: WgmmaMma | MmaSp, profile: str) -> np.ndarray:
    """The checker's parameters for every data set of `op` judged under `profile` (those of the
    oracle's product of any of them: formats, stored K, saturation). ValueError when the checker
    cannot compute them (e.g. a profile without a datapath for the formats)."""
    return checker.parameters(op.atype, op.dtype, stream_layout(op).a_shape[1], profile, b_fmt=op.btype,
                              saturate=op.satfinite if op.dtype == "s32" else None)


def stream_group(text: str, cubin: bytes, form: HopperForm, source: StreamPrograms, parameters: np.ndarray,
                 sample: dict[int, np.ndarray], rebuilt: dict[int, Program],
                 labels: tuple[str, tuple[str, ...], str, str]) -> StreamGroup:
    """A launch group's tables from its programs (`source`, every instruction of one form), the
    checker's parameters, and the model's D of the sampled programs by position with those
    programs as the host rebuilt them (`rebuilt`, by position); `labels`: form, input formats,
    accumulator and judging profile."""
    layouts = [stream_layout(op) for op in source.ops]
    words = max(len(x.image_table) for x in layouts)
    tables = np.full((len(layouts), words, 4), so.ZERO, np.int32)
    for i, x in enumerate(layouts):
        tables[i, :len(x.image_table)] = x.image_table
    first = layouts[0]
    addresses = lambda name: (None if getattr(first, name) is None  # noqa: E731
                              else np.concatenate([getattr(x, name) for x in layouts]).astype(np.uint32))
    positions = np.array(sorted(sample), dtype=np.int64)
    (m, k), (n, k_b) = first.a_shape, first.b_shape
    sample_d = np.stack([sample[i] for i in positions]) if positions.size else np.zeros((0, m, n), np.uint32)
    images = np.zeros((len(positions), 4 * words), np.uint8)
    registers = np.zeros((len(positions), form.threads, form.words_in), np.uint32)
    if positions.size:
        batch = pack([rebuilt[i] for i in positions.tolist()])
        images[:, :batch.images.shape[1]] = batch.images
        registers = batch.registers
    ops = [source.ops[i] for i in source.instruction_of.tolist()]
    p, spec, md = len(source), source.spec, first.metadata
    table, bits = word_table(form)
    inputs = {"tiles": source.tiles, "table_at": (source.instruction_of * words).astype(np.uint32),
              "image_tables": tables.reshape(-1, 4), "register_at": np.zeros(p, np.uint32),
              "differing": np.zeros(p, np.uint32), "control": control_records(ops),
              "sample": positions.astype(np.uint32), "masks": np.ascontiguousarray(operand_masks(ops).T),
              "params_a": spec.params_a, "params_b": spec.params_b,
              "exact_codes": spec.exact_codes if spec.exact_codes.size else np.zeros(1, np.uint32),
              "exact_lengths": spec.exact_lengths, "parameters": parameters, "register_table": register_table(form),
              "word_table": table}
    if md is not None:
        inputs |= {"cells": md.cells, "selected": md.selected.astype(np.uint8)}
    for name in ("a", "b"):
        operand = addresses(f"{name}_addresses")
        if operand is not None:
            inputs[f"{name}_addresses"] = operand
            inputs[f"{name}_at"] = (source.instruction_of * (len(operand) // len(layouts))).astype(np.uint32)
    blob, layout = packed(inputs)
    return StreamGroup(text, cubin, form, source, blob, layout, words, bits,
                       parameters, (m, n, k, k_b), first.element_bytes, md, positions,
                       pack_d(form, sample_d) if positions.size else np.zeros((0, form.threads, form.words_out), np.uint32),
                       images, registers, *labels)


@dataclass
class StreamResult:
    """What a stream launch gives back: the count of differing words per program, the checker's
    words, images and registers of the sampled programs, and the tensor core's words of the
    programs whose words differ (`flagged`, positions)."""

    differing: np.ndarray
    sample_words: np.ndarray
    sample_images: np.ndarray
    sample_registers: np.ndarray
    flagged: np.ndarray
    flagged_words: np.ndarray


def drawn_differently(group: StreamGroup, result: StreamResult, label: str) -> str | None:
    """None when the sampled programs' images and registers the GPU drew equal the host's
    rebuild, else one line naming the first program and byte that differ."""
    for name, got, want in (("image", result.sample_images, group.sample_images),
                            ("registers", result.sample_registers, group.sample_registers)):
        if np.array_equal(got, want):
            continue
        got, want = (np.ascontiguousarray(x).view(np.uint8).reshape(len(group.sample), -1) for x in (got, want))
        bad = np.argwhere(got != want)
        if bad.size:
            s, at = (int(x) for x in bad[0])
            tile = int(group.source.tiles[group.sample[s]])
            return (f"{label}: the GPU drew a different {name} from the host's rebuild of stream tile {tile}: "
                    f"{len(bad)} byte(s) differ, first at byte {at} (GPU {int(got[s, at]):#04x}, host {int(want[s, at]):#04x})")
    return None


def checker_differs(group: StreamGroup, result: StreamResult, label: str) -> str | None:
    """None when the checker's D of the sample equals the model's, else one line naming the first
    differing element (the program by its stream tile)."""
    if np.array_equal(result.sample_words, group.sample_words):
        return None
    got = unpack_d(group.form, result.sample_words)
    model = unpack_d(group.form, group.sample_words)
    bad = np.argwhere(got != model)
    if not bad.size:
        return None
    s, m, n = (int(x) for x in bad[0])
    tile = int(group.source.tiles[group.sample[s]])
    return (f"{label}: the integer checker's D differs from the Python model's in {len(bad)} element(s) of {got.size} "
            f"sampled; first: stream tile {tile}, D[{m}, {n}]: checker={int(got[s, m, n]):#x} "
            f"model={int(model[s, m, n]):#x}")


def _host_operands(group: StreamGroup, images: np.ndarray) -> np.ndarray:
    """The operand buffer the GPU's `stream_operand` and `stream_columns` write,
    computed with the numpy twin (A, B, C, then a sparse A's logical columns as bytes)."""
    src, spec = group.source, group.source.spec
    m, n, k, k_b = group.shape
    tiles = src.tiles

    def operand(op: int, name: str, rows: int, cols: int, width: int) -> np.ndarray:
        addresses = group.table(f"{name}_addresses")
        if addresses is None:
            return so.codes(spec, op, tiles, rows, cols)
        at = group.table(f"{name}_at").astype(np.int64)[:, None] + np.arange(rows * cols)
        gathered = [so.gather(images[i:i + 1], addresses[at[i]], width, rows, cols) for i in range(len(tiles))]
        return np.concatenate(gathered)

    a = operand(so.OP_A, "a", m, k, group.element_bytes[0]) ^ group.masks[:, 0, None, None]
    b = operand(so.OP_B, "b", n, k_b, group.element_bytes[1]) ^ group.masks[:, 1, None, None]
    c = so.codes(spec, so.OP_C, tiles, m, n) & group.masks[:, 2, None, None]
    parts = [a.ravel(), b.ravel(), c.ravel()]
    if group.metadata is not None:
        columns = so.columns(spec, tiles, m, k, group.metadata.field_bits).ravel()
        parts.append(np.pad(columns, (0, -columns.size % 4)).view(np.uint32))
    return np.concatenate(parts).astype(np.uint32)


def host_draw(group: StreamGroup) -> tuple[np.ndarray, np.ndarray, Operands]:
    """What the GPU's drawing kernels make of a group, drawn by the numpy twin instead: images
    [P, bytes], registers [P, threads, words in] and the checker's operands (for runs without a
    GPU: every host stage of a stream run, and the rebuild, exercised on the CPU)."""
    src = group.source
    images = np.zeros((len(src), group.image_words), np.uint32)
    for j in range(len(src.ops)):
        members = np.flatnonzero(src.instruction_of == j)
        images[members] = so.words(src.spec, src.tiles[members], group.image_tables[j * group.image_words:(j + 1) * group.image_words])
    images = images.view(np.uint8)
    registers = so.words(src.spec, src.tiles, group.register_table).reshape(len(src), group.form.threads, -1)
    if group.metadata is not None:
        md = group.metadata
        registers[:, :, -1] = so.metadata(src.spec, src.tiles, md.cells, md.selected, md.field_bits, md.k)
    m, n, k, k_b = group.shape
    ops = Operands(_host_operands(group, images), (len(src), m, n, k, k_b), group.metadata is not None, group.parameters,
                   np.zeros(0, np.int64), np.zeros((0, m, n), np.uint32))
    return images, registers, ops


def stream_result(group: StreamGroup, images: np.ndarray, registers: np.ndarray, expected: np.ndarray,
                  words: np.ndarray) -> StreamResult:
    """The result of a group drawn on the host (`host_draw`): the checker's words `expected` and the
    tensor core's `words` compared as `reference_products` compares them on the GPU."""
    differing = (words != expected).reshape(len(words), -1).sum(axis=1).astype(np.uint32)
    flagged = np.flatnonzero(differing)
    return StreamResult(differing, expected[group.sample], images[group.sample], registers[group.sample], flagged,
                        words[flagged])


STREAM_KERNELS = ("stream_words", "stream_metadata", "stream_columns", "stream_operand", "reference_products",
                  "sample_rows")


@dataclass
class Pending:
    """A stream launch queued on the GPU: its group, the device arrays it uses (kept alive until it
    is collected), the page-locked buffer its inputs went out from and its results come back to
    (after the `sent` bytes of inputs), their layout (words of the counts and of each sampled
    array's rows), and its timing events."""

    group: StreamGroup
    arrays: dict
    pinned: object
    sent: int
    layout: list[int]
    events: tuple


class GpuStream:
    """Stream launches on a GPU (the drawing and checking kernels of `checker_module`), queued on
    its stream by `submit` and read back by `collect`, so that a worker queues its next launch
    before it waits for the last. Its seconds are GPU time between events on the stream: "draw"
    (the tables' copy, drawing every input and operand), "launch" (the tensor core), "reference"
    (the checker and the comparison) and "read_back" (gathering the sample, the copies back)."""

    def __init__(self, gpu, module, seconds: Counter):
        self.gpu, self.seconds = gpu, seconds
        self.kernels = {name: module.get_kernel(name) for name in STREAM_KERNELS}
        self.pinned: list = []  # page-locked buffers free for the next launches' inputs and results

    def run(self, name: str, work: int, *args) -> None:
        self.gpu.launch(self.kernels[name], grid_for(work), THREADS, 0, *args)

    def buffer(self, nbytes: int):
        """A free page-locked buffer of at least `nbytes` (the smallest that fits, else a new one)."""
        from device.launch import Pinned

        fits = [b for b in self.pinned if b.array.nbytes >= nbytes]
        if fits:
            chosen = min(fits, key=lambda b: b.array.nbytes)
            self.pinned.remove(chosen)
            return chosen
        return Pinned(max(nbytes, 1 << 18))

    def __call__(self, group: StreamGroup, tensor_kernel) -> StreamResult:
        return self.collect(self.submit(group, tensor_kernel))

    def submit(self, group: StreamGroup, tensor_kernel) -> Pending:
        """Queue a group's whole launch on the GPU's stream: the inputs' copy (from page-locked
        memory, so that it does not wait), the drawing, the tensor core, the checker with the
        comparison, and the copies back of the counts and the sample."""
        gpu, form, md = self.gpu, group.form, group.metadata
        p, count = group.programs, len(group.sample)
        m, n, k, k_b = group.shape
        b_at, c_at, columns_at = group.offsets
        u32, u64 = np.uint32, np.uint64
        words_in, words_out = form.threads * form.words_in, form.threads * form.words_out
        sizes = [words_out, group.image_words, words_in]  # a sampled program's words of expected, images, registers
        sent = group.inputs.nbytes
        staged = self.buffer(sent + 4 * (p + count * sum(sizes)))
        arrays = allocated(gpu, {"inputs": ((sent,), np.uint8), "images": ((p, group.image_words), np.uint32),
                                 "registers": ((p, form.threads, form.words_in), np.uint32),
                                 "operands": ((group.operand_words,), np.uint32),
                                 "out": ((p, form.threads, form.words_out), np.uint32),
                                 "expected": ((p, form.threads, form.words_out), np.uint32),
                                 "gathered": ((max(1, count * sum(sizes)),), np.uint32)})
        images, registers, operands = arrays["images"], arrays["registers"], arrays["operands"]
        start = gpu.record()
        np.copyto(staged.array[:sent], group.inputs)
        whole = gpu.to_device_async(staged.array[:sent], arrays["inputs"])  # every table and constant in one copy
        inputs = {name: whole.view(at, shape, dtype) for name, (at, shape, dtype) in group.layout.items()}
        stream = (inputs["params_a"], inputs["params_b"], u32(group.source.spec.exact), inputs["exact_codes"],
                  inputs["exact_lengths"])
        tiles = inputs["tiles"]
        self.run("stream_words", p * group.image_words, *stream, u32(p), tiles, inputs["table_at"], inputs["image_tables"],
                 u32(group.image_words), images)
        self.run("stream_words", p * words_in, *stream, u32(p), tiles, inputs["register_at"], inputs["register_table"],
                 u32(words_in), registers)
        if md is not None:
            self.run("stream_metadata", p * len(md.cells), stream[0], u32(p), tiles, u32(len(md.cells)), inputs["cells"],
                     u32(md.cells.shape[1]), inputs["selected"], u32(md.field_bits), u32(md.k), registers,
                     u32(words_in), u32(form.words_in), u32(form.words_in - 1))
        masks = group.masks
        for which, (op, name, at, rows, cols, width) in enumerate(((so.OP_A, "a", 0, m, k, group.element_bytes[0]),
                                                                   (so.OP_B, "b", b_at, n, k_b, group.element_bytes[1]),
                                                                   (so.OP_C, "c", c_at, m, n, 4))):
            source = ((images, u64(group.image_bytes), inputs[f"{name}_at"], inputs[f"{name}_addresses"])
                      if f"{name}_addresses" in inputs else (u64(0), u64(0), u64(0), u64(0)))
            unchanged = 0xFFFFFFFF if which == 2 else 0  # the mask that changes nothing
            mask = inputs["masks"].pointer(4 * p * which) if (masks[:, which] != unchanged).any() else u64(0)
            self.run("stream_operand", p * rows * cols, *stream, u32(op), u32(p), tiles, u32(rows), u32(cols), *source,
                     u32(width), mask, u32(which == 2), operands.pointer(4 * at))
        if md is not None:
            self.run("stream_columns", p * m * k, stream[0], u32(p), tiles, u32(m), u32(k), u32(md.field_bits),
                     operands.pointer(4 * columns_at))
        drawn = gpu.record()
        out, expected = arrays["out"], arrays["expected"]
        gpu.launch(tensor_kernel, p, form.threads, group.image_bytes, images, inputs["control"], registers, out,
                   u32(group.image_bytes))
        launched = gpu.record()
        table = group.word_table
        self.run("reference_products", p * table.shape[0], inputs["parameters"], u32(p), u32(m), u32(n), operands,
                 u32(k_b), u64(b_at), u64(c_at), u64(columns_at), u32(md is not None), inputs["word_table"],
                 u32(table.shape[0]), u32(table.shape[1]), u32(group.word_bits), expected, out, inputs["differing"])
        checked = gpu.record()
        gathered = arrays["gathered"]
        if count:
            self.run("sample_rows", count * sum(sizes), inputs["sample"], u32(count), expected, u32(sizes[0]), images,
                     u32(sizes[1]), registers, u32(sizes[2]), gathered)
        results = staged.array[sent:]
        gpu.to_host_async(inputs["differing"], results[:4 * p])
        if count:
            gpu.to_host_async(gathered, results[4 * p:4 * (p + count * sum(sizes))])
        done = gpu.record()
        return Pending(group, arrays, staged, sent, [p] + [count * x for x in sizes], (start, drawn, launched, checked, done))

    def collect(self, pending: Pending) -> StreamResult:
        """Wait for a queued launch and read its results: the counts, the sample's rows, and the
        tensor core's words of any program whose words differ (copied then)."""
        start, drawn, launched, checked, done = pending.events
        done.sync()
        words = pending.pinned.array[pending.sent:pending.sent + 4 * sum(pending.layout)].view(np.uint32).copy()
        self.pinned.append(pending.pinned)
        group = pending.group
        count, form = len(group.sample), group.form
        parts = np.split(words, np.cumsum(pending.layout)[:-1])
        counts = parts[0]
        expected, images, registers = (part.reshape((count,) + shape) for part, shape in
                                       zip(parts[1:], ((form.threads, form.words_out), (group.image_words,),
                                                       (form.threads, form.words_in))))
        flagged = np.flatnonzero(counts)
        out = pending.arrays["out"]
        flagged_words = (self.gpu.to_host_rows(out, flagged) if flagged.size  # waits for every queued launch: rare
                         else np.zeros((0,) + tuple(out.shape[1:]), np.uint32))
        for stage, (later, earlier) in (("draw", (drawn, start)), ("launch", (launched, drawn)),
                                        ("reference", (checked, launched)), ("read_back", (done, checked))):
            self.seconds[stage] += (later - earlier) / 1000
        return StreamResult(counts, expected, images.view(np.uint8), registers, flagged, flagged_words)


ARENA_ALIGN = 256  # bytes: where each array of an arena starts


def _offsets(shapes: dict[str, tuple[tuple[int, ...], np.dtype]]) -> tuple[dict[str, int], int]:
    """Each array's aligned offset in one allocation, and the allocation's size."""
    offsets, at = {}, 0
    for name, (shape, dtype) in shapes.items():
        offsets[name] = at
        at += -(-int(np.prod(shape, dtype=np.int64)) * dtype.itemsize // ARENA_ALIGN) * ARENA_ALIGN
    return offsets, max(at, ARENA_ALIGN)


def packed(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, tuple[int, tuple[int, ...], str]]]:
    """Arrays one after another in one uint8 buffer, each at an aligned offset, and where each
    lies: name -> (offset, shape, dtype), as `StreamGroup.inputs` and `layout` hold them."""
    layout, size = _offsets({name: (a.shape, a.dtype) for name, a in arrays.items()})
    blob = np.zeros(size, np.uint8)
    for name, a in arrays.items():
        blob[layout[name]:layout[name] + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return blob, {name: (layout[name], tuple(a.shape), a.dtype.str) for name, a in arrays.items()}


def allocated(gpu, shapes: dict[str, tuple[tuple[int, ...], type]]) -> dict:
    """Uninitialised device arrays of the given (shape, dtype), in one allocation: {name: DeviceArray}."""
    shapes = {name: (tuple(shape), np.dtype(dtype)) for name, (shape, dtype) in shapes.items()}
    offsets, size = _offsets(shapes)
    whole = gpu.empty((size,), np.uint8)
    return {name: whole.view(offsets[name], shape, dtype) for name, (shape, dtype) in shapes.items()}
