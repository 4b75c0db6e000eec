"""Stream data sets of a Hopper instruction: programs whose every operand byte is drawn from the
counter-based operand stream (`tcgen05_conformance.generators.stream_operands`), so that a GPU can draw a data set's
shared-memory image, registers and metadata itself and the host can rebuild the same program
exactly (to replay a failure, to cross-check a sample).

A data set is named by its tile (a 64-bit counter, unique within a run). Its shared-memory image
holds A (unless A is read from registers) and B where the instruction's descriptors place them
(`tcgen05_conformance.core.layouts.smem`), B written after A so that B wins where the two overlap, as a
later element wins over an earlier one of the same operand; every other byte up to the image's
end is filler from the stream. The register operands (A in registers, mma.sp's A and B, C) are
the stream's codes as matrices, and a sparse instruction's metadata words hold stream-drawn
legal nibbles in the threads its selector reads (random words elsewhere). The oracle reads a
rebuilt program like any other, so the layouts it tests are read from the image, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.isa import hopper as hopper_isa
from tcgen05_conformance.core.isa import mma
from tcgen05_conformance.core.isa.fragments import WGMMA_METADATA, Fragment, mma_sp_fragments, selected_threads
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.core.memo import frozen, memo
from tcgen05_conformance.core.program import MatrixImage, Program, SmemSegment
from tcgen05_conformance.generators import stream_operands as so
from tcgen05_conformance.generators.programs import metadata_packing

MMA_SP_ROWS, MMA_SP_COLS = 16, 8  # mma.sp.m16n8kK: A is 16 x K (stored K / 2), B 8 x K, C 16 x 8 (PTX ISA 9.7.14.6)


@dataclass(frozen=True)
class Metadata:
    """Where a sparse instruction's metadata comes from: the fragment's packing (each thread's
    values as logical elements row * K + column), the threads the selector reads, the bits per
    logical element (2 for tf32, else 1; PTX ISA 9.7.15.5.1) and the logical K."""

    cells: np.ndarray  # int32 [threads, values]
    selected: np.ndarray  # bool [threads]
    field_bits: int
    k: int


@dataclass(frozen=True)
class StreamLayout:
    """Where each byte of an instruction's data sets comes from: its shared-memory image as
    stream-table rows (int32 [words, 4], `stream_operands.entries`), the byte address of each A and
    B element in it (int32 [rows * columns], row-major; None for an operand read from registers),
    the shapes of A (stored), B and C, each operand's element bytes, and the metadata (None when
    dense)."""

    image_table: np.ndarray
    a_addresses: np.ndarray | None
    b_addresses: np.ndarray | None
    a_shape: tuple[int, int]
    b_shape: tuple[int, int]
    c_shape: tuple[int, int]
    element_bytes: tuple[int, int]
    metadata: Metadata | None

    @property
    def image_bytes(self) -> int:
        return 4 * len(self.image_table)


def _metadata(fragment: Fragment, bits: int, k: int, selector: int) -> Metadata:
    cells, _ = metadata_packing(fragment, k)
    return Metadata(frozen(cells.astype(np.int32)), selected_threads(fragment, selector), 2 if bits == 32 else 1, k)


def _operand_bytes(addresses: np.ndarray, bits: int, op: int) -> tuple[np.ndarray, np.ndarray]:
    """The image bytes an operand's elements occupy (row-major, each element's bytes in order) and
    the stream entry of each."""
    if (addresses % bits).any():
        raise ValueError(f"{bits}-bit elements at addresses not aligned to their size")
    rows, cols = np.indices(addresses.shape)
    width = np.arange(bits // 8)
    where = (addresses[..., None] // 8 + width).ravel()
    return where, so.entries(op, np.repeat(rows.ravel(), len(width)), np.repeat(cols.ravel(), len(width)),
                             np.tile(width, addresses.size))


def _image_table(operands: list[tuple[np.ndarray, int, int]]) -> np.ndarray:
    """Table rows of an image holding `operands` ((bit addresses, bits, stream op), in writing
    order: where bytes overlap the last written wins), filler elsewhere up to the 16-byte end."""
    placed = [_operand_bytes(*operand) for operand in operands]
    where = np.concatenate([w for w, _ in placed])
    what = np.concatenate([e for _, e in placed])
    end = max(16, -(-(int(where.max()) + 1) // 16) * 16)
    table = np.full(end, so.entry(so.OP_FILLER, 0, 0, 0), np.int32)
    last = len(where) - 1 - np.unique(where[::-1], return_index=True)[1]  # the last write of each byte
    table[where[last]] = what[last]
    return table.reshape(-1, 4)


def _smem_operand(desc: int, k_major: bool, rows: int, k: int, type_name: str) -> np.ndarray:
    storage = storage_for(mma.TYPE_BITS[type_name], False)
    return element_bit_addresses(sdesc_codec.decode(desc, "sm90"), k_major, rows, k, storage)


@memo(maxsize=512)
def stream_layout(op: WgmmaMma | MmaSp) -> StreamLayout:
    """The stream layout of a modelled Hopper instruction (wgmma dense or sparse, A in shared
    memory or registers; mma.sp with 8- to 32-bit inputs). Read-only arrays."""
    a_bits, b_bits = mma.TYPE_BITS[op.atype], mma.TYPE_BITS[op.btype]
    if isinstance(op, MmaSp):
        if hopper_isa.mma_sp_family(op.atype) == "i4":
            raise ValueError("mma.sp with 4-bit integers takes no stream data sets")
        metadata = _metadata(mma_sp_fragments(a_bits, op.k).metadata, a_bits, op.k, op.sparse_selector)
        table = np.full((4, 4), so.ZERO, np.int32)  # no shared memory: the kernel's 16 bytes stay zero
        return StreamLayout(frozen(table), None, None, (MMA_SP_ROWS, op.k // 2), (MMA_SP_COLS, op.k),
                            (MMA_SP_ROWS, MMA_SP_COLS), (a_bits // 8, b_bits // 8), metadata)
    m = hopper_isa.WGMMA_M
    k_stored = hopper_isa.WGMMA_TYPES[hopper_isa.wgmma_type_family(op.atype)].k_dense
    b = _smem_operand(op.b_desc, not op.imm_trans_b, op.n, op.k, op.btype)
    a = None if op.a_in_registers else _smem_operand(op.a_desc, not op.imm_trans_a, m, k_stored, op.atype)
    operands = ([] if a is None else [(a, a_bits, so.OP_A)]) + [(b, b_bits, so.OP_B)]
    metadata = _metadata(WGMMA_METADATA[a_bits], a_bits, op.k, op.sparse_selector) if op.sparse else None
    byte_addresses = lambda x: None if x is None else frozen((x // 8).astype(np.int32).ravel())  # noqa: E731
    return StreamLayout(frozen(_image_table(operands)), byte_addresses(a), byte_addresses(b), (m, k_stored),
                        (op.n, op.k), (m, op.n), (a_bits // 8, b_bits // 8), metadata)


def _matrix(name: str, codes: np.ndarray) -> MatrixImage:
    return MatrixImage(name, codes.shape[0], codes.shape[1], codes.astype("<u4").tobytes())


def stream_programs(op: WgmmaMma | MmaSp, spec: so.StreamSpec, tiles: np.ndarray, target: str, profile: str
                    ) -> list[Program]:
    """The programs of instruction `op` with the stream data sets `tiles` (uint64), each as any
    generated program (its image, register matrices and metadata), `meta` naming its tile."""
    layout = stream_layout(op)
    tiles = np.asarray(tiles, np.uint64)
    images = so.words(spec, tiles, layout.image_table).view(np.uint8)
    registers = {"c": so.codes(spec, so.OP_C, tiles, *layout.c_shape)}
    if layout.a_addresses is None:
        registers["a"] = so.codes(spec, so.OP_A, tiles, *layout.a_shape)
    if layout.b_addresses is None:
        registers["b"] = so.codes(spec, so.OP_B, tiles, *layout.b_shape)
    if layout.metadata is not None:
        md = layout.metadata
        registers["e"] = so.metadata(spec, tiles, md.cells, md.selected, md.field_bits, md.k)[:, :, None]
    programs = []
    for i, tile in enumerate(tiles.tolist()):
        matrices = tuple(_matrix(name, registers[name][i]) for name in ("e", "a", "b", "c") if name in registers)
        smem = () if isinstance(op, MmaSp) else (SmemSegment(0, images[i].tobytes()),)
        programs.append(Program(target=target, ops=(op,), profile=profile, smem=smem, matrices=matrices, label=op.OP,
                                meta={"stream_tile": tile}))
    return programs
