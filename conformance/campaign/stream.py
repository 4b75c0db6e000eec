"""The campaign's stream data sets (`campaign --draw gpu`): each drawn instruction's data sets are
drawn on the GPU from the counter-based operand stream (`tcgen05_conformance.generators.stream_data_sets`), so the
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

import numpy as np

from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.isa.mma import TYPE_BITS
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.campaign.checker import CHECK_KERNELS, Operands, word_table
from tcgen05_conformance.numerics.gpu_checker import THREADS, grid_for
from tcgen05_conformance.device.check_kernels import JOB_KERNELS
from tcgen05_conformance.device.hopper_batch import (
    control_records, pack, pack_d, register_bytes, register_layouts, unpack_d,
)
from tcgen05_conformance.device.ptx.kernels import HopperForm
from tcgen05_conformance.generators import stream_operands as so
from tcgen05_conformance.generators.stream_data_sets import Metadata, stream_layout, stream_programs
from tcgen05_conformance.oracles.numerics import checker

REGISTER_OPS = {"a": so.OP_A, "b": so.OP_B, "c": so.OP_C}
GPU_IDLE = "idle"  # GpuStream's seconds between batches: not busy time
# the idle seconds again, by the length of the gap they fell in: many short gaps are the stream's own
# turnaround, a few long ones a worker or the producers late (`count_idle`)
IDLE_GAPS_MS = ((0.1, "<0.1 ms"), (1.0, "0.1-1 ms"), (10.0, "1-10 ms"), (float("inf"), ">=10 ms"))
ARENA_ALIGN = 256  # bytes: where each array of a launch's inputs and arena starts


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
    masks (xor A, xor B, and C: imm-scale and scale-d), the sample's positions, and the constants
    every kernel of the launch reads: the stream's parameters and exact
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


def register_table(form: HopperForm) -> np.ndarray:
    """The stream table of a form's register words (int32 [threads * words_in, 4]): each byte of
    an element of a register operand from its stream code; the metadata word and unused bytes zero.
    Kept per register layout (the threads, the words each loads, and each register operand's
    fragment and element size), which far fewer forms than there are share: the imm-scales,
    transposes, saturation and descriptors of a form leave it as it is."""
    key = (form.threads, form.words_in, tuple(register_layouts(form.op)))
    table = _REGISTER_TABLES.get(key)
    if table is None:
        table = np.full(form.threads * form.words_in * 4, so.ZERO, np.int32)
        for name, where, rows, cols, byte in register_bytes(form):
            table[where] = so.entries(REGISTER_OPS[name], rows, cols, byte)
        table.setflags(write=False)
        table = _REGISTER_TABLES[key] = table.reshape(-1, 4)
    return table


_REGISTER_TABLES: dict[tuple, np.ndarray] = {}  # register_table's, by register layout


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
    per_instruction = list(source.ops)  # a program's control record and masks are its instruction's
    p, spec, md = len(source), source.spec, first.metadata
    table, bits = word_table(form)
    inputs = {"tiles": source.tiles, "table_at": (source.instruction_of * words).astype(np.uint32),
              "image_tables": tables.reshape(-1, 4), "register_at": np.zeros(p, np.uint32),
              "control": control_records(per_instruction)[source.instruction_of], "sample": positions.astype(np.uint32),
              "masks": np.ascontiguousarray(operand_masks(per_instruction)[source.instruction_of].T),
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


DRAW_KERNELS = ("stream_words", "stream_metadata", "stream_operand", "stream_columns")  # in launch order
SAMPLE_KERNELS = ("sample_rows",)


@dataclass(frozen=True)
class GroupArrays:
    """Where one group's arrays lie in a batch's arena (byte offsets): its inputs (`StreamGroup.layout`
    from `inputs`), the images, registers and operands the GPU draws, the tensor core's words
    (`out`), the checker's (`expected`), and in the results its counts and its sample's rows."""

    inputs: int
    images: int
    registers: int
    operands: int
    out: int
    expected: int
    counts: int
    sample: int


@dataclass(frozen=True)
class StreamBatch:
    """The launch plan of stream groups queued together (a chunk's, or in a careful rerun one
    group's), laid out by the producer before any device address exists: one arena holds every
    array (offset 0 is never used: it is the null pointer), and every kernel but the tensor core's
    runs once over a table of jobs (`tcgen05_conformance.device.kernel_jobs`), one job per group and operand.

    The arena: a null pad, the groups' inputs (`arrays[i].inputs`), the job tables (`own`, at
    `own_at`), the results (`results_at`: each program's count of differing words, zeros when
    copied in, then the sampled programs' rows), then what only the GPU writes. One copy sends
    bytes [0, `sent`), one brings back the `returned` bytes from `results_at`. `launches`: per
    stage ("draw", "reference", "sample"), (kernel, table offset, jobs, CTAs); `tensor`: per group,
    the tensor core's launch (programs, threads, shared bytes)."""

    arrays: tuple[GroupArrays, ...]
    own: np.ndarray
    own_at: int
    results_at: int
    sent: int
    returned: int
    size: int
    launches: dict[str, tuple[tuple[str, int, int, int], ...]]
    tensor: tuple[tuple[int, int, int], ...]


def _aligned(at: int) -> int:
    return -(-at // ARENA_ALIGN) * ARENA_ALIGN


def sample_sizes(group: StreamGroup) -> tuple[int, int, int]:
    """A sampled program's words of the checker's D, of its image and of its registers, as they come back."""
    form = group.form
    return form.threads * form.words_out, group.image_words, form.threads * form.words_in


def stream_batch(groups: list[StreamGroup]) -> StreamBatch:
    """The launch plan of `groups`, in that order (see StreamBatch)."""
    at, inputs = ARENA_ALIGN, []
    for g in groups:
        inputs.append(at)
        at = _aligned(at + g.inputs.nbytes)
    counts_words = sum(g.programs for g in groups)
    sample_words = [len(g.sample) * sum(sample_sizes(g)) for g in groups]
    # the job tables lie before the arrays their jobs point to, so their sizes come first: the
    # jobs of every group, counted with every offset zero
    counted = _jobs(groups, [GroupArrays(0, 0, 0, 0, 0, 0, 0, 0)] * len(groups))[0]
    own_at, table_at = at, {}
    for name, rows in counted.items():
        table_at[name] = at - own_at
        at = _aligned(at + len(rows) * JOB_KERNELS[name].dtype.itemsize)
    results_at = at
    at = _aligned(results_at + 4 * (counts_words + sum(sample_words)))
    sent = results_at + 4 * counts_words
    arrays, counts_at, sample_at = [], results_at, results_at + 4 * counts_words
    for g, inputs_at, sampled in zip(groups, inputs, sample_words):
        form, p = g.form, g.programs
        sizes = {"images": 4 * p * g.image_words, "registers": 4 * p * form.threads * form.words_in,
                 "operands": 4 * g.operand_words, "out": 4 * p * form.threads * form.words_out,
                 "expected": 4 * p * form.threads * form.words_out}
        places = {}
        for name, size in sizes.items():
            places[name] = at
            at = _aligned(at + size)
        arrays.append(GroupArrays(inputs_at, **places, counts=counts_at, sample=sample_at))
        counts_at += 4 * p
        sample_at += 4 * sampled
    jobs, work = _jobs(groups, arrays)
    own = np.zeros(results_at - own_at, np.uint8)
    launches: dict[str, list] = {"draw": [], "reference": [], "sample": []}
    for stage, names in (("draw", DRAW_KERNELS), ("reference", CHECK_KERNELS), ("sample", SAMPLE_KERNELS)):
        for name in names:
            if jobs[name]:
                table = JOB_KERNELS[name].table(jobs[name])
                own[table_at[name]:table_at[name] + table.nbytes] = table.view(np.uint8)
                launches[stage].append((JOB_KERNELS[name].entry, own_at + table_at[name], len(table), grid_for(work[name])))
    tensor = tuple((g.programs, g.form.threads, g.image_bytes) for g in groups)
    return StreamBatch(tuple(arrays), own, own_at, results_at, sent, 4 * (counts_words + sum(sample_words)), at,
                       {k: tuple(v) for k, v in launches.items()}, tensor)


def _jobs(groups: list[StreamGroup], arrays: list[GroupArrays]) -> tuple[dict[str, list], dict[str, int]]:
    """Every group's jobs (arena offsets `arrays`) per kernel, and each kernel's largest work."""
    jobs: dict[str, list] = {name: [] for name in DRAW_KERNELS + CHECK_KERNELS + SAMPLE_KERNELS}
    work: dict[str, int] = dict.fromkeys(jobs, 0)
    for g, a in zip(groups, arrays):
        _group_jobs(g, a, jobs, work)
    return jobs, work


def _group_jobs(g: StreamGroup, a: GroupArrays, jobs: dict[str, list], work: dict[str, int]) -> None:
    """Add a group's jobs (arena offsets `a`) to the batch's, and the largest work of each kernel to `work`."""
    def add(name: str, amount: int, *args) -> None:
        jobs[name].append(args)
        work[name] = max(work[name], amount)

    form, md, p = g.form, g.metadata, g.programs
    m, n, k, k_b = g.shape
    b_at, c_at, columns_at = g.offsets
    at = {name: a.inputs + offset for name, (offset, _, _) in g.layout.items()}
    words_in = form.threads * form.words_in
    stream = (at["params_a"], at["params_b"], g.source.spec.exact, at["exact_codes"], at["exact_lengths"])
    add("stream_words", p * g.image_words, *stream, p, at["tiles"], at["table_at"], at["image_tables"], g.image_words,
        a.images)
    add("stream_words", p * words_in, *stream, p, at["tiles"], at["register_at"], at["register_table"], words_in,
        a.registers)
    if md is not None:
        add("stream_metadata", p * len(md.cells), at["params_a"], p, at["tiles"], len(md.cells), at["cells"],
            md.cells.shape[1], at["selected"], md.field_bits, md.k, a.registers, words_in, form.words_in,
            form.words_in - 1)
        add("stream_columns", p * m * k, at["params_a"], p, at["tiles"], m, k, md.field_bits, a.operands + 4 * columns_at)
    masks = g.masks
    for which, (op, name, start, rows, cols, width) in enumerate(((so.OP_A, "a", 0, m, k, g.element_bytes[0]),
                                                                  (so.OP_B, "b", b_at, n, k_b, g.element_bytes[1]),
                                                                  (so.OP_C, "c", c_at, m, n, 4))):
        source = ((a.images, g.image_bytes, at[f"{name}_at"], at[f"{name}_addresses"]) if f"{name}_addresses" in at
                  else (0, 0, 0, 0))
        unchanged = 0xFFFFFFFF if which == 2 else 0  # the mask that changes nothing
        mask = at["masks"] + 4 * p * which if (masks[:, which] != unchanged).any() else 0
        add("stream_operand", p * rows * cols, *stream, op, p, at["tiles"], rows, cols, *source, width, mask,
            int(which == 2), a.operands + 4 * start)
    table = g.word_table
    add("decode_operands", p * (m * k + n * k_b), at["parameters"], a.operands, p * m * k, b_at, p * n * k_b, 0, 0)
    add("reference_products", p * THREADS, at["parameters"], p, m, n, a.operands, k_b, b_at, c_at, columns_at,  # a block per program
        int(md is not None), 0, at["word_table"], table.shape[0], table.shape[1], g.word_bits, a.expected, a.out,
        a.counts)
    if len(g.sample):
        sizes = sample_sizes(g)
        add("sample_rows", len(g.sample) * sum(sizes), at["sample"], len(g.sample), a.expected, sizes[0], a.images,
            sizes[1], a.registers, sizes[2], a.sample)


class Reused:
    """Buffers kept for reuse: `take(nbytes)` gives the smallest free one that holds `nbytes`, else a
    new one with room to spare (`make(bytes)`; `size(buffer)` its bytes); `give` returns one
    whose work has completed. At most KEPT are kept free, the smallest dropped first."""

    KEPT = 4
    SPARE = 1.25

    def __init__(self, make, size):
        self.make, self.size, self.free = make, size, []

    def take(self, nbytes: int):
        fits = [b for b in self.free if self.size(b) >= nbytes]
        if not fits:
            return self.make(max(int(nbytes * self.SPARE), 1 << 20))
        chosen = min(fits, key=self.size)
        self.free.remove(chosen)
        return chosen

    def give(self, buffer) -> None:
        self.free.append(buffer)
        if len(self.free) > self.KEPT:
            self.free.remove(min(self.free, key=self.size))


def fill_arena(groups: list[StreamGroup], batch: StreamBatch, out: np.ndarray) -> None:
    """Write the bytes a batch sends (its arena's first `batch.sent`) into `out`: the null pad, each
    group's inputs, the job tables, and zero counts (the checker adds to them)."""
    out[:ARENA_ALIGN] = 0
    for g, a in zip(groups, batch.arrays):
        out[a.inputs:a.inputs + g.inputs.nbytes] = g.inputs
    out[batch.own_at:batch.own_at + batch.own.nbytes] = batch.own
    out[batch.results_at:batch.sent] = 0


def returned(groups: list[StreamGroup], batch: StreamBatch, words: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """What a batch's copy back (`words`, uint32) holds for each group: its programs' counts of
    differing words, and its sampled programs' checker words [S, threads, words out], images [S,
    bytes] and registers [S, threads, words in]."""
    out = []
    for g, a in zip(groups, batch.arrays):
        count, form, sizes = len(g.sample), g.form, sample_sizes(g)
        counts = words[(a.counts - batch.results_at) // 4:][:g.programs]
        rows = words[(a.sample - batch.results_at) // 4:][:count * sum(sizes)]
        expected, images, registers = np.split(rows, np.cumsum([count * x for x in sizes])[:-1])
        out.append((counts, expected.reshape(count, form.threads, form.words_out),
                    images.reshape(count, g.image_words).view(np.uint8), registers.reshape(count, form.threads, form.words_in)))
    return out


@dataclass
class Pending:
    """Stream launches queued on the GPU: their groups and plan, the arena (kept alive until they
    are collected), the page-locked buffer their bytes went out from and their results come back
    to (after the plan's `sent` bytes), and the timing events."""

    groups: list[StreamGroup]
    batch: StreamBatch
    arena: object
    pinned: object
    events: tuple
    after: object  # the previous batch's last event on the stream (None for the first)


class GpuStream:
    """Stream launches on a GPU (the drawing and checking kernels of `checker_module`), a batch of
    groups at a time (`stream_batch`), queued on its stream by `submit` and read back by
    `collect`, so that a worker queues its next batch before it waits for the last. Its seconds
    are GPU time between events on the stream: "draw" (the arena's copy, drawing every input and
    operand), "launch" (the tensor core), "reference" (the checker and the comparison) and
    "read_back" (gathering the sample, the copy back). "idle" is not busy time: the stream's
    time between a batch's end and the next batch's start, which is the GPU waiting for the worker
    (it stays near zero while the worker keeps the next batch queued)."""

    def __init__(self, gpu, module, seconds: Counter):
        from tcgen05_conformance.device.launch import Pinned

        self.gpu, self.seconds, self.module = gpu, seconds, module
        self.kernels: dict[str, object] = {}
        self.last_done = None  # the last queued batch's final event
        # page-locked buffers for the bytes going out and coming back, device arenas: kept for the
        # next batches (allocating either costs milliseconds: as much as a chunk's GPU work)
        self.pinned = Reused(Pinned, lambda b: b.array.nbytes)
        self.arenas = Reused(lambda nbytes: gpu.empty((nbytes,), np.uint8), lambda a: a.shape[0])

    def kernel(self, entry: str):
        if entry not in self.kernels:
            self.kernels[entry] = self.module.get_kernel(entry)
        return self.kernels[entry]

    def submit(self, groups: list[StreamGroup], batch: StreamBatch, tensor_kernels: list) -> Pending:
        """Queue a batch on the GPU's stream: the arena's copy in (from page-locked memory, so that
        it does not wait), the drawing kernels, each group's tensor core, the checker with the
        comparison, and the copy back of the counts and the sample."""
        gpu, u32, u64 = self.gpu, np.uint32, np.uint64
        staged = self.pinned.take(batch.sent + batch.returned)
        out = staged.array
        fill_arena(groups, batch, out)
        arena = self.arenas.take(batch.size)
        base = arena.address
        start = gpu.record()
        gpu.to_device_async(out[:batch.sent], arena)

        def run(stage: str) -> None:
            for entry, table, jobs, ctas in batch.launches[stage]:
                gpu.launch(self.kernel(entry), (ctas, jobs), THREADS, 0, u64(base), u64(base + table), u32(jobs))

        run("draw")
        drawn = gpu.record()
        for kernel, a, (programs, threads, image_bytes), g in zip(tensor_kernels, batch.arrays, batch.tensor, groups):
            gpu.launch(kernel, programs, threads, image_bytes, u64(base + a.images),
                       u64(base + a.inputs + g.layout["control"][0]), u64(base + a.registers), u64(base + a.out),
                       u32(image_bytes))
        launched = gpu.record()
        run("reference")
        checked = gpu.record()
        run("sample")
        gpu.to_host_async(arena.view(batch.results_at, (batch.returned,), np.uint8), out[batch.sent:batch.sent + batch.returned])
        done = gpu.record()
        after, self.last_done = self.last_done, done
        return Pending(groups, batch, arena, staged, (start, drawn, launched, checked, done), after)

    def collect(self, pending: Pending) -> list[StreamResult]:
        """Wait for a queued batch and read its results, a StreamResult per group: the counts, the
        sample's rows, and the tensor core's words of any program whose words differ (copied then)."""
        start, drawn, launched, checked, done = pending.events
        done.sync()
        batch = pending.batch
        words = pending.pinned.array[batch.sent:batch.sent + batch.returned].view(np.uint32).copy()
        self.pinned.give(pending.pinned)
        results = []
        for g, a, (counts, expected, images, registers) in zip(pending.groups, batch.arrays,
                                                               returned(pending.groups, batch, words)):
            form = g.form
            flagged = np.flatnonzero(counts)
            out = pending.arena.view(a.out, (g.programs, form.threads, form.words_out), np.uint32)
            flagged_words = (self.gpu.to_host_rows(out, flagged) if flagged.size  # waits for every queued batch: rare
                             else np.zeros((0, form.threads, form.words_out), np.uint32))
            results.append(StreamResult(counts, expected, images, registers, flagged, flagged_words))
        self.arenas.give(pending.arena)  # every queued use of it has completed
        for stage, (later, earlier) in (("draw", (drawn, start)), ("launch", (launched, drawn)),
                                        ("reference", (checked, launched)), ("read_back", (done, checked))):
            self.seconds[stage] += (later - earlier) / 1000
        if pending.after is not None:
            count_idle(self.seconds, (start - pending.after) / 1000)
        return results


def count_idle(seconds: Counter, gap: float) -> None:
    """Add a gap between batches to a GPU's seconds: to its idle time, and to that of its length
    (`idle_gap_key`)."""
    seconds[GPU_IDLE] += gap
    seconds[idle_gap_key(next(label for bound_ms, label in IDLE_GAPS_MS if gap * 1000 < bound_ms))] += gap


def idle_gap_key(label: str) -> str:
    """Where a GPU's seconds hold its idle time in gaps of one length ("idle <0.1 ms", IDLE_GAPS_MS)."""
    return f"{GPU_IDLE} {label}"


def packed(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, tuple[int, tuple[int, ...], str]]]:
    """Arrays one after another in one uint8 buffer, each at an aligned offset, and where each
    lies: name -> (offset, shape, dtype), as `StreamGroup.inputs` and `layout` hold them."""
    layout, at = {}, 0
    for name, a in arrays.items():
        layout[name] = at
        at = _aligned(at + a.nbytes)
    blob = np.zeros(max(at, ARENA_ALIGN), np.uint8)
    for name, a in arrays.items():
        blob[layout[name]:layout[name] + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return blob, {name: (layout[name], tuple(a.shape), a.dtype.str) for name, a in arrays.items()}
