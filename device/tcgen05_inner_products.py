"""Batches of inner products through `tcgen05.mma` (sm_100a / sm_103a), for measuring and inferring
numeric profiles on Blackwell silicon, and the plumbing self-check a Blackwell run starts with.

One *form* (`Tcgen05Form`) is one instruction: a kind, its A/B format, D format, block scaling
(scale format and `.scale_vec`), K (96 on sm_103a) and N. Each tile is one MMA of M x N x K: D[m, n]
= A[m] . B[n] (x scales) + C[m, n]. M = 128 with one CTA (data-path layout D: row r at TMEM lane r,
column j at column j); K = 96 exists only with `.cta_group::2` and M = 256 (PTX ISA Table 39), each
CTA of the pair holding 128 rows of A and D and half of B's columns (assumption A-CTA-PAIR-SPLIT).

Per tile and CTA the host packs a shared-memory image (A K-major without swizzle from byte 0, B at
the next 1024-byte boundary; 4/6-bit elements of .kind::f8f6f4 and .kind::mxf8f6f4 padded to a
byte, PTX ISA 9.7.16.10.4.4) and a TMEM image (C at D's place; the scale factors of A's rows and
B's columns at the columns after D, duplicated into every 32-lane subpartition, 9.7.16.10.7),
placed by the layout functions the oracle reads them with (`tcgen05_conformance.core.layouts`). The kernel
(`batch_kernel`) copies both in, issues the MMA from one thread, waits on an mbarrier, and reads
the TMEM image back; `unpack` picks D out of it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.formats import get_format, storage_dtype
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.layouts.smem import element_bit_addresses, storage_for
from tcgen05_conformance.core.layouts.tmem import d_positions, data_path, scale_factor_positions
from tcgen05_conformance.core.program import Program, SmemSegment, TmemRegion
from tcgen05_conformance.core.ptx.render import REGISTER_DECLARATIONS, render
from tcgen05_conformance.core.state import initial_smem, initial_tmem
from tcgen05_conformance.device.ptx.kernels import KERNEL_REGISTERS, THREADS, _relocated, _tmem_rows, copy_to_shared, global_pointers, ptx_header

LANES = 128
ALLOC_COLUMNS = 512  # every column: the largest image (N = 256 plus scale factors) fits
CORE_ROWS, CHUNK = 8, 16  # a core matrix: 8 rows of 16 bytes (9.7.16.3.3)
K96_SCALE_COLUMNS = 2  # K = 96: each 32 rows' (columns') scale factors fill two TMEM columns (A-SF-K96-LAYOUT)


def kmajor(start: int, rows: int) -> sdesc_codec.SmemDescriptor:
    """A K-major layout without swizzle at byte `start` (9.7.16.3.3): 8-row core matrices of 16-byte
    rows, row groups SBO = 128 bytes apart, K chunks LBO = 128 x row groups apart."""
    return sdesc_codec.SmemDescriptor(start, CORE_ROWS * CHUNK * -(-rows // CORE_ROWS), CORE_ROWS * CHUNK)


@dataclass(frozen=True)
class Tcgen05Form:
    """One tcgen05.mma instruction form measured as a batch of tiles."""

    kind: str
    in_fmt: str
    acc: str
    target: str = "sm_100a"
    scale_fmt: str | None = None
    scale_vec: str | None = None
    k96: bool = False
    satfinite: bool = False
    n: int = 256
    descriptors: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if self.k96 and self.target != "sm_103a":
            raise ValueError("K = 96 needs sm_103a (PTX ISA Table 39)")
        if (self.kind in isa.BLOCK_SCALED_KINDS) != (self.scale_fmt is not None):
            raise ValueError(f".kind::{self.kind}: block scaling {'needs' if self.scale_fmt is None else 'takes no'} scale format")
        if self.scale_fmt is not None and self.scale_vector is None:
            raise ValueError(f"no Table 54/55 scale vector for {self.kind} {self.scale_vec} K96={self.k96}")

    @property
    def id(self) -> str:
        parts = ["tcgen05", self.kind, self.in_fmt, self.acc]
        parts += [self.scale_vec.replace("scale_vec::", ""), self.scale_fmt] if self.scale_fmt else []
        parts += ["k96"] if self.k96 else []
        parts += ["satfinite"] if self.satfinite else []
        return ".".join(parts)

    @property
    def ctas(self) -> int:
        return 2 if self.k96 else 1

    @property
    def m(self) -> int:
        return LANES * self.ctas

    @cached_property
    def k(self) -> int:
        shape = isa.shape_class_for(self.kind, False, self.ctas, False, self.m, self.k96)
        if shape is None or self.n not in shape.n:
            raise ValueError(f".kind::{self.kind} M={self.m} N={self.n} is not a Table 39 shape")
        return shape.k

    @property
    def tile(self) -> tuple[int, int]:
        return self.m, self.n

    @property
    def scale_vector(self) -> isa.ScaleVector | None:
        return isa.scale_vector(self.kind, self.scale_vec, self.k96) if self.scale_fmt else None

    @property
    def factors(self) -> int:
        """Scale factors per row of A (column of B): K / block."""
        return self.scale_vector.factors if self.scale_fmt else 0

    @property
    def bits(self) -> int:
        return isa.TYPE_BITS[self.in_fmt]

    @property
    def padded(self) -> bool:
        return self.kind in ("f8f6f4", "mxf8f6f4")

    # --- layout -------------------------------------------------------------------------

    @cached_property
    def row_bytes(self) -> int:
        """Bytes of one K-major row of A or B in shared memory."""
        storage = storage_for(self.bits, self.padded)
        return -(-self.k // storage.per_chunk) * CHUNK

    @cached_property
    def a_desc(self) -> sdesc_codec.SmemDescriptor:
        return kmajor(0, LANES)

    @cached_property
    def b_desc(self) -> sdesc_codec.SmemDescriptor:
        start = -(-LANES * self.row_bytes // 1024) * 1024
        return kmajor(start, self.n // self.ctas)

    @cached_property
    def smem_bytes(self) -> int:
        return self.b_desc.start_address + self.n // self.ctas * self.row_bytes

    @property
    def sfa_column(self) -> int:
        return self.n

    @property
    def sfb_column(self) -> int:
        per = K96_SCALE_COLUMNS if self.k96 else 1
        return self.n + per * LANES // 32

    @cached_property
    def image_columns(self) -> int:
        """TMEM columns each tile writes and reads back: D, then the scale factors, to 32 columns."""
        per = K96_SCALE_COLUMNS if self.k96 else 1
        end = self.sfb_column + per * -(-self.n // 32) if self.scale_fmt else self.n
        return -(-end // 32) * 32

    def instruction(self) -> Tcgen05Mma:
        """The MMA, descriptors relative to the image (the kernel relocates them)."""
        d = idesc_codec.InstrDescriptor(m=self.m, n=self.n, atype=self.in_fmt, btype=self.in_fmt,
                                        dtype="f32" if self.scale_fmt else self.acc, saturate=self.satfinite,
                                        scale_type=self.scale_fmt, k96=self.k96)
        scales = {}
        if self.scale_fmt:
            scales = dict(block_scale=True, scale_vec=self.scale_vec, scale_a_tmem=taddr_codec.encode(0, self.sfa_column),
                          scale_b_tmem=taddr_codec.encode(0, self.sfb_column))
        return Tcgen05Mma(kind=self.kind, cta_group=self.ctas, idesc=idesc_codec.encode(self.kind, d),
                          a_desc=sdesc_codec.encode(self.a_desc), b_desc=sdesc_codec.encode(self.b_desc),
                          d_tmem=0, enable_input_d=True, **scales)

    @cached_property
    def _places(self) -> dict[str, np.ndarray]:
        """Byte or bit addresses of A's and B's elements in a CTA's image, D's (lane, column)."""
        storage = storage_for(self.bits, self.padded)
        a = element_bit_addresses(self.a_desc, True, LANES, self.k, storage)
        b = element_bit_addresses(self.b_desc, True, self.n // self.ctas, self.k, storage)
        lane, column = d_positions(data_path(self.m, self.ctas, False, False), self.n, 0)
        return {"a": a, "b": b, "d_lane": lane, "d_column": column}

    def _scale_places(self, count: int, column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lane, column, bit) [subpartitions, count, factors] of the factors of `count` rows or
        columns, duplicated into the four 32-lane subpartitions."""
        index = np.broadcast_to(np.arange(count), (LANES // 32, count))
        part = np.broadcast_to(np.arange(LANES // 32)[:, None], (LANES // 32, count))
        return scale_factor_positions(part, index, column, self.factors, 0, self.k96)

    # --- images ---------------------------------------------------------------------------

    def pack(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, a_scale: np.ndarray | None = None,
             b_scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Images of `tiles` MMAs: A [tiles, M, K], B [tiles, N, K], C [tiles, M, N] codes and the
        scale codes A [tiles, M, F], B [tiles, N, F] -> shared memory uint8 [tiles x CTAs, smem_bytes]
        and TMEM uint32 [tiles x CTAs, 128, image_columns], CTA-major within a tile."""
        tiles = a.shape[0]
        ctas, half = self.ctas, self.n // self.ctas
        smem = np.zeros((tiles, ctas, self.smem_bytes), np.uint8)
        tmem = np.zeros((tiles, ctas, LANES, self.image_columns), np.uint32)
        places = self._places
        words_c = np.asarray(c).astype(np.int64) & 0xFFFFFFFF
        if self.acc == "f16":
            words_c &= 0xFFFF  # a 16-bit D sits in the low half of its word (9.7.16.10.4.1)
        for cta in range(ctas):
            rows = slice(cta * LANES, (cta + 1) * LANES)
            _write_bits(smem[:, cta], places["a"], a[:, rows], self.bits)
            _write_bits(smem[:, cta], places["b"], b[:, cta * half:(cta + 1) * half], self.bits)
            tmem[:, cta, places["d_lane"], places["d_column"]] = words_c[:, rows].astype(np.uint32)
            if self.scale_fmt:
                for codes, count, column in ((a_scale[:, rows], LANES, self.sfa_column), (b_scale, self.n, self.sfb_column)):
                    lane, col, bit = self._scale_places(count, column)
                    value = np.broadcast_to(np.asarray(codes, np.uint32)[:, None], (tiles, *lane.shape)) << bit.astype(np.uint32)
                    np.bitwise_or.at(tmem[:, cta], (slice(None), lane, col), value)
        return smem.reshape(tiles * ctas, -1), tmem.reshape(tiles * ctas, LANES, -1)

    def unpack(self, out: np.ndarray) -> np.ndarray:
        """D codes [tiles, M, N] (the accumulator's storage type) from read-back TMEM images."""
        words = np.ascontiguousarray(out).view(np.uint32).reshape(-1, self.ctas, LANES, self.image_columns)
        places = self._places
        d = np.concatenate([words[:, cta][:, places["d_lane"], places["d_column"]] for cta in range(self.ctas)], axis=1)
        dtype = storage_dtype(get_format(self.acc))
        if self.acc == "f16":
            return (d & 0xFFFF).astype(np.uint16)
        return d.astype(np.uint32).view(dtype) if dtype.kind == "i" else d.astype(np.uint32)

    def program(self, smem: np.ndarray, tmem: np.ndarray) -> Program:
        """The tile's MMA as a Program of the oracle (the images of one tile, [CTAs, ...])."""
        return Program(target=self.target, ops=(self.instruction(),), ctas=self.ctas, tmem_columns=ALLOC_COLUMNS,
                       smem=tuple(SmemSegment(0, smem[cta].tobytes(), cta) for cta in range(self.ctas)),
                       tmem=tuple(TmemRegion(0, 0, LANES, self.image_columns, tmem[cta].astype("<u4").tobytes(), cta)
                                  for cta in range(self.ctas)))

    def kernel(self) -> str:
        return batch_kernel(self)


def _write_bits(image: np.ndarray, bit_addresses: np.ndarray, codes: np.ndarray, bits: int) -> None:
    """Write `bits`-wide fields of codes [tiles, rows, K] at bit addresses [rows, K] of images
    [tiles, bytes]; a field narrower than a byte may straddle two bytes (6-bit elements)."""
    codes = np.asarray(codes).astype(np.uint32) & np.uint32((1 << bits) - 1)
    if bits % 8 == 0:
        byte = bit_addresses // 8
        for i in range(bits // 8):
            image[:, byte + i] = (codes >> np.uint32(8 * i)).astype(np.uint8)
        return
    byte, shift = (bit_addresses // 8).ravel(), (bit_addresses % 8).ravel().astype(np.uint32)
    field = codes.reshape(codes.shape[0], -1) << shift
    tiles = np.arange(image.shape[0])[:, None]
    np.bitwise_or.at(image, (tiles, byte[None, :]), (field & 0xFF).astype(np.uint8))
    high = (field >> 8).astype(np.uint8)
    if high.any():
        np.bitwise_or.at(image, (tiles, byte[None, :] + 1), high)


# --- forms ---------------------------------------------------------------------------------------


def forms(target: str = "sm_100a") -> tuple[Tcgen05Form, ...]:
    """Every dense kind and format of PTX ISA Table 39 with each legal block scaling (Tables 54,
    55): f16/bf16 (kind::f16), tf32, the five f8f6f4 formats into f32 and f16, s8/u8 (with and
    without saturation; sm_100a only), mxf8f6f4, mxf4 and mxf4nvf4 with ue8m0 / ue4m3 scales and
    each .scale_vec; on sm_103a also K = 96 (mxf4, mxf4nvf4; cta_group::2, M = 256). Which target
    has which feature: `tcgen05_conformance.core.isa.targets`."""
    out: list[Tcgen05Form] = []
    features = TARGETS[target].features
    for kind in ("f16", "tf32", "f8f6f4", *(("i8",) if "kind::i8" in features else ())):
        for acc, atypes in isa.D_TYPES[kind].items():
            for fmt in atypes:
                for sat in ((False, True) if kind == "i8" else (False,)):
                    out.append(Tcgen05Form(kind, fmt, acc, target, satfinite=sat))
    for sv in isa.SCALE_VECTORS:
        if sv.k96 and "K=96" not in features:
            continue
        for fmt in isa.D_TYPES[sv.kind]["f32"]:
            for scale in sorted(sv.scale_types):
                out.append(Tcgen05Form(sv.kind, fmt, "f32", target, scale, sv.qualifier, sv.k96))
    return tuple(out)


# --- the batch kernel ----------------------------------------------------------------------------

_BATCH_REGS = """\
  .reg .b32 %r_tile, %r_tiles, %r_step, %r_phase, %r_unit;
  .reg .b64 %rd_smem_all, %rd_tmem_all, %rd_out_all, %rd_smem4, %rd_smem4_lbo;"""


def batch_kernel(form: Tcgen05Form) -> str:
    """The PTX module of `tcgen05_batch(smem, tmem_in, out, tiles)`: each CTA (each cluster of 2
    with K = 96) takes tiles in turn: copies its shared-memory and TMEM images in, CTA 0's thread 0
    issues the MMA and commits to the mbarrier(s), every thread waits for the mbarrier's phase, reads
    the TMEM image back into `out`; TMEM is allocated once (ALLOC_COLUMNS) and freed at the end."""
    op = form.instruction()
    group, size, columns = form.ctas, form.smem_bytes, form.image_columns
    if size % 16:
        size += 16 - size % 16
    tile_bytes_tmem = LANES * columns * 4
    cluster = "\n.reqnctapercluster 2, 1, 1" if group == 2 else ""
    unit = ("mov.u32 %r_tile, %clusterid.x;\n  mov.u32 %r_step, %nclusterid.x;" if group == 2
            else "mov.u32 %r_tile, %ctaid.x;\n  mov.u32 %r_step, %nctaid.x;")
    multicast = ".multicast::cluster" if group == 2 else ""
    mask = ", %h_mask" if group == 2 else ""
    spellings = random.Random(form.id)  # the TMEM moves' qualifier orders, drawn from the form as a case's from its id
    body = "\n".join(f"  {m}" for m in _relocated(op)) + f"\n  {render(op)}"
    return ptx_header(form.target) + f""".extern .shared .align 1024 .b8 smem_image[];
.shared .align 16 .b32 taddr_slot;
.shared .align 8 .b64 mbar;

.visible .entry tcgen05_batch(.param .u64 p_smem, .param .u64 p_tmem_in, .param .u64 p_out, .param .u32 p_tiles)
.maxntid {THREADS}, 1, 1{cluster}
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
{_BATCH_REGS}
  mov.u32 %r_tid, %tid.x;
  shr.u32 %r_warp, %r_tid, 5;
  mov.u32 %r_cta, %cluster_ctarank;
  mov.u32 %r_smem, smem_image;
  shr.u32 %r_off, %r_smem, 4;
  cvt.u64.u32 %rd_smem4, %r_off;  // descriptors hold addresses relative to the image: relocated
  shl.b64 %rd_smem4_lbo, %rd_smem4, 16;
{global_pointers(("p_smem", "p_tmem_in", "p_out"), ("%rd_smem_all", "%rd_tmem_all", "%rd_out_all"))}
  ld.param.u32 %r_tiles, [p_tiles];
  {unit}
  mov.u32 %r_phase, 0;
  setp.eq.u32 %p_warp0, %r_warp, 0;
  setp.eq.u32 %p_leader, %r_tid, 0;
  mov.u64 %rd_mbar, mbar;
  @%p_leader mbarrier.init.shared::cta.b64 [mbar], 1;
  @%p_leader fence.mbarrier_init.release.cluster;
  @%p_warp0 tcgen05.alloc.cta_group::{group}.sync.aligned.shared::cta.b32 [taddr_slot], {ALLOC_COLUMNS};
  @%p_warp0 tcgen05.relinquish_alloc_permit.cta_group::{group}.sync.aligned;
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  tcgen05.fence::after_thread_sync;
  ld.shared.b32 %r_base, [taddr_slot];
  and.b32 %r_quarter, %r_warp, 3;
  shl.b32 %r_quarter, %r_quarter, 21;
  add.u32 %r_quarter, %r_quarter, %r_base;
  setp.eq.u32 %p_issuer, %r_cta, 0;
  and.pred %p_issuer, %p_issuer, %p_leader;
TILE:
  setp.ge.u32 %p_done, %r_tile, %r_tiles;
  @%p_done bra DONE;
  // this CTA's images of the tile: unit = tile x CTAs + CTA rank
  mad.lo.u32 %r_unit, %r_tile, {group}, %r_cta;
  mul.wide.u32 %rd_off, %r_unit, {size};
  add.u64 %rd_in, %rd_smem_all, %rd_off;
  mul.wide.u32 %rd_off, %r_unit, {tile_bytes_tmem};
  add.u64 %rd_tmem_in, %rd_tmem_all, %rd_off;
  add.u64 %rd_out, %rd_out_all, %rd_off;
{copy_to_shared(size, THREADS)}
  fence.proxy.async.shared::cta;
{_tmem_rows("st", columns, spellings)}
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  tcgen05.fence::after_thread_sync;
  @!%p_issuer bra ISSUED;
{body}
  mov.b16 %h_mask, 3;
  tcgen05.commit.cta_group::{group}.mbarrier::arrive::one.shared::cluster{multicast}.b64 [%rd_mbar]{mask};
ISSUED:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p_ready, [mbar], %r_phase;
  @!%p_ready bra WAIT;
  tcgen05.fence::after_thread_sync;
{_tmem_rows("ld", columns, spellings)}
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.release.aligned;  // every CTA is done with this tile's images
  barrier.cluster.wait.acquire.aligned;
  tcgen05.fence::after_thread_sync;
  xor.b32 %r_phase, %r_phase, 1;
  add.u32 %r_tile, %r_tile, %r_step;
  bra TILE;
DONE:
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  @%p_warp0 tcgen05.dealloc.cta_group::{group}.sync.aligned.b32 %r_base, {ALLOC_COLUMNS};
  ret;
}}
"""


# --- the plumbing self-check ---------------------------------------------------------------------

UNWRITTEN = 0xFFFFFFFF  # output words before a kernel runs: a word it never writes cannot pass by chance


@dataclass(frozen=True)
class PlumbingCheck:
    """The outcome of `plumbing_check`: `ok`, the step that failed (or "all"), and a diagnosis a
    person can act on, on one line."""

    ok: bool
    step: str
    diagnosis: str


def _run_program(worker, p: Program) -> np.ndarray:
    """Run a program's kernel (`tcgen05_conformance.device.ptx.kernels.tcgen05_kernel`, the blackwell backend's)
    through a GpuWorker; the TMEM image it reads back [CTAs, 128, tmem_columns]."""
    from tcgen05_conformance.device.gpu_worker import Launch
    from tcgen05_conformance.device.ptx.kernels import smem_bytes, tcgen05_kernel
    smem = np.ascontiguousarray(initial_smem(p)[0][:, :smem_bytes(p)])
    tmem = initial_tmem(p).astype("<u4")
    out = np.full(tmem.shape, UNWRITTEN, dtype="<u4")
    cluster = 2 if p.ctas == 2 else None
    return worker.run(Launch(tcgen05_kernel(p), p.target, "program", p.ctas, THREADS, smem.shape[1], (smem, tmem), out,
                             cluster)).view(np.uint32)


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    bad = np.argwhere(got != want)
    where = tuple(int(x) for x in bad[0])
    return f"{len(bad)} of {got.size} words differ; first at {where}: read {int(got[tuple(bad[0])]):#010x}, expected {int(want[tuple(bad[0])]):#010x}"


def plumbing_check(worker, target: str) -> PlumbingCheck:
    """Before a Blackwell run: (1) allocate TMEM, store a pattern with tcgen05.st, load it back
    with tcgen05.ld, free it; (2) one kind::f16 MMA (M = 128, N = 16, A = B = 1, C = lane + column)
    whose D is K + lane + column, exactly. Stops at the first step that fails with what the failure points to,
    so a broken setup is not reported as thousands of mismatches. `worker` is a
    `tcgen05_conformance.device.gpu_worker.GpuWorker` on an sm_100 / sm_103 GPU; `target` the matching sm_100a/sm_103a."""
    from tcgen05_conformance.device.gpu_worker import KernelFailed

    columns = 32
    lanes, cols = np.indices((LANES, columns))
    pattern = ((lanes << 16) | cols | 0x5A000000).astype(np.uint32)
    trip = Program(target=target, ops=(), tmem_columns=columns,
                   tmem=(TmemRegion(0, 0, LANES, columns, pattern.astype("<u4").tobytes()),))
    try:
        got = _run_program(worker, trip)[0]
    except KernelFailed as e:
        where = "does not link" if e.stage == "link" else "faulted"
        return PlumbingCheck(False, "tmem", f"the TMEM round-trip kernel (tcgen05.alloc, st, ld, dealloc) {where} on "
                                            f"{target}: {e}; check the GPU is sm_{target[3:6]} and the driver supports it")
    if (got == UNWRITTEN).all():
        return PlumbingCheck(False, "tmem", "tcgen05.ld wrote nothing back: the kernel ended before its loads "
                                            "(allocation failed silently, or the wait on the loads did not complete)")
    if not np.array_equal(got, pattern):
        return PlumbingCheck(False, "tmem", "the TMEM round trip corrupts data: " + _first_difference(got, pattern)
                                            + " (the 32x32b lane quarters of each warp, or the allocation's base address, "
                                            "differ from the ISA's reading)")
    form = Tcgen05Form("f16", "f16", "f32", target, n=16)
    one = 0x3C00
    a = np.full((1, form.m, form.k), one, np.uint16)
    b = np.full((1, form.n, form.k), one, np.uint16)
    c = np.add.outer(np.arange(form.m), np.arange(form.n)).astype(np.float32).view(np.uint32)[None]
    smem, tmem = form.pack(a, b, c)
    program = form.program(smem, tmem)
    # D = A.B + C = K + lane + column: small integers, exact in binary32 whatever the datapath rounds.
    want = (c.view(np.float32) + form.k).view(np.uint32)
    try:
        out = _run_program(worker, program)
    except KernelFailed as e:
        return PlumbingCheck(False, "mma", f"one tcgen05.mma.kind::f16 (M=128, N=16) faulted: {e}; the TMEM round trip "
                                           "worked, so suspect the instruction or shared-memory descriptor, or the commit "
                                           "to the mbarrier")
    got = form.unpack(out[:, :, :form.image_columns])
    if np.array_equal(got, c.astype(np.uint32)):
        return PlumbingCheck(False, "mma", "the MMA left D as C was stored: it did not run, or ran before the stores "
                                           "were fenced, or the wait on its commit returned early")
    if not np.array_equal(got, want):
        return PlumbingCheck(False, "mma", "one MMA's D differs from K + lane + column: " + _first_difference(got, want)
                                           + " (A = B = 1, so a wrong value points to the descriptors or D's TMEM layout, "
                                           "not to arithmetic)")
    return PlumbingCheck(True, "all", f"TMEM round trip and one MMA on {target} as the oracle expects")
