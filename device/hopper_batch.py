"""Hopper programs on an sm_90 GPU, in batches: the programs of one kernel form (same instruction;
descriptors, scale-d and operand data vary) run in one launch, one CTA each, with their shared-memory
images, control records and operand registers moved in bulk (`tcgen05_conformance.device.ptx.kernels.hopper_kernel`).

The register operands travel as matrices in the program (`Program.matrices`); they are spread over
the threads by the ISA's fragments (`tcgen05_conformance.core.isa.fragments`: wgmma's `WGMMA_A` for A in registers and
`wgmma_accumulator` for C, PTX ISA 9.7.15.5.1.1; `mma_sp_fragments` for warp-level mma.sp,
9.7.14.6.3) and D is gathered back the same way.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.isa.fragments import WGMMA_A, Fragment, mma_sp_fragments, register_elements, wgmma_accumulator
from tcgen05_conformance.core.isa.mma import TYPE_BITS
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.device.ptx.kernels import HOPPER_CONTROL_BYTES, HopperForm, UnsupportedProgram, hopper_form, hopper_kernel, smem_bytes
from tcgen05_conformance.device.registers import pack_registers, unpack_registers

MAX_CTAS_PER_LAUNCH = 4096  # bounds a launch's buffers (~1 GB of images at the largest programs)


@dataclass(frozen=True)
class Batch:
    """Kernel inputs of programs sharing one form: images [B, bytes], control [B, 32] bytes,
    registers [B, threads, words_in] words."""

    form: HopperForm
    smem_bytes: int
    images: np.ndarray
    control: np.ndarray
    registers: np.ndarray


def register_layouts(op: WgmmaMma | MmaSp) -> list[tuple[str, Fragment, int]]:
    """The register operands a thread loads, in the kernel's order: (matrix name, fragment, bits)."""
    a_bits, c_bits = TYPE_BITS[op.atype], TYPE_BITS[op.dtype]
    if isinstance(op, MmaSp):
        f = mma_sp_fragments(a_bits, op.k)
        return [("a", f.a, a_bits), ("b", f.b, TYPE_BITS[op.btype]), ("c", f.c, c_bits)]
    return ([("a", WGMMA_A[a_bits], a_bits)] if op.a_in_registers else []) + [("c", wgmma_accumulator(op.n), c_bits)]


def _shape(fragment: Fragment) -> tuple[int, int]:
    rows, cols = fragment.elements()
    return fragment.rows, int(cols.max()) + 1


def pack(programs: Sequence[Program]) -> Batch:
    """The kernel inputs of programs that share one form. Each thread's last word is its sparsity
    metadata register (matrix "e")."""
    form = hopper_form(programs[0])
    size = max(smem_bytes(p) for p in programs)
    images = np.zeros((len(programs), size), np.uint8)
    for i, p in enumerate(programs):
        for segment in p.smem:
            images[i, segment.offset:segment.offset + len(segment.data)] = np.frombuffer(segment.data, np.uint8)
    control = control_records([p.ops[0] for p in programs])

    def matrices(name: str, shape: tuple[int, int]) -> np.ndarray:
        return np.stack([m if (m := p.matrix(name)) is not None else np.zeros(shape, np.uint32) for p in programs])

    parts = [pack_registers(matrices(name, _shape(fragment)), *register_elements(fragment, bits), bits)
             for name, fragment, bits in register_layouts(form.op)]  # each [B, registers, threads]
    words = np.concatenate(parts, axis=1)
    registers = np.zeros((len(programs), form.threads, form.words_in), np.uint32)
    registers[:, :, :words.shape[1]] = words.transpose(0, 2, 1)
    registers[:, :, -1] = matrices("e", (form.threads, 1))[:, :, 0]
    return Batch(form, size, images, control, registers)


def control_records(ops: Sequence[WgmmaMma | MmaSp]) -> np.ndarray:
    """Each instruction's control record [B, 32] bytes: the A and B descriptors, then scale-d."""
    control = np.zeros((len(ops), HOPPER_CONTROL_BYTES), np.uint8)
    control[:, :16] = np.array([(getattr(q, "a_desc", 0), getattr(q, "b_desc", 0)) for q in ops], "<u8").view(np.uint8)
    control[:, 16:20] = np.array([[int(getattr(q, "scale_d", True))] for q in ops], "<u4").view(np.uint8)
    return control


def register_bytes(form: HopperForm) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Where each byte of the register operands lies in a program's input words [threads,
    words_in] viewed as bytes: per operand (matrix name, in `register_layouts` order), the flat byte
    index of each byte of each element, with the element's row and column and the byte's place in
    it (the element at bit j * bits of word r holds bytes j * bits / 8 on; `pack`'s layout)."""
    placed, word = [], 0
    for name, fragment, bits in register_layouts(form.op):
        rows, cols = register_elements(fragment, bits)  # [registers, threads, per register]
        registers, threads, per = rows.shape
        width = bits // 8
        r, t, j, b = np.meshgrid(np.arange(registers), np.arange(threads), np.arange(per), np.arange(width), indexing="ij")
        flat = (t * form.words_in + word + r) * 4 + j * width + b
        spread = lambda x: np.broadcast_to(x[..., None], flat.shape).ravel()  # noqa: E731
        placed.append((name, flat.ravel(), spread(rows), spread(cols), b.ravel()))
        word += registers
    return placed


def unpack_d(form: HopperForm, out: np.ndarray) -> np.ndarray:
    """D codes [B, M, N] (uint32, 16-bit types in the low half) from the stored words
    [B, threads, words_out]."""
    _, fragment, bits = register_layouts(form.op)[-1]
    words = np.ascontiguousarray(out.transpose(0, 2, 1))
    return unpack_registers(words, *register_elements(fragment, bits), bits, _shape(fragment), np.uint32)


def d_word_elements(form: HopperForm) -> tuple[np.ndarray, int]:
    """Per word the kernel stores for one program (its [threads, words_out] flattened), the D
    elements m * N + n the word holds, its j-th at bit j * bits (int32 [words, per word]); and
    bits: where a kernel computing D itself must put each element (`pack_d`'s layout)."""
    _, fragment, bits = register_layouts(form.op)[-1]
    rows, cols = register_elements(fragment, bits)  # [registers, threads, per register]
    if rows.shape[0] != form.words_out:
        raise ValueError(f"D's fragment has {rows.shape[0]} registers per thread, the kernel stores {form.words_out}")
    elements = rows * _shape(fragment)[1] + cols
    return np.ascontiguousarray(elements.transpose(1, 0, 2).reshape(-1, rows.shape[-1]), dtype=np.int32), bits


def pack_d(form: HopperForm, d: np.ndarray) -> np.ndarray:
    """The words [B, threads, words_out] the kernel stores for D codes [B, M, N]: the inverse of
    `unpack_d` (what a GPU computing exactly D would leave)."""
    _, fragment, bits = register_layouts(form.op)[-1]
    words = pack_registers(d, *register_elements(fragment, bits), bits)  # [B, registers, threads]
    return np.ascontiguousarray(words.transpose(0, 2, 1))


class HopperRunner:
    """Runs Hopper programs on one GPU; kernels are compiled once per form. `seconds` adds up the
    time of each stage of the launches: copy in, launch (until the GPU is done), read back."""

    def __init__(self, gpu, arch: str = "sm_90a"):
        self.gpu, self.arch = gpu, arch
        self.kernels: dict[str, object] = {}
        self.seconds: Counter = Counter()

    @property
    def gpu_seconds(self) -> float:
        """Seconds of copies in, launches and copies back."""
        return sum(self.seconds.values())

    def kernel(self, form: HopperForm):
        text = hopper_kernel(form)
        if text not in self.kernels:
            self.kernels[text] = self.gpu.load(text, self.arch).get_kernel("hopper_batch")
        return self.kernels[text]

    def load_cubin(self, text: str, code: bytes) -> None:
        """Take the kernel of PTX `text` from its cubin `code` (assembled elsewhere)."""
        from cuda.core import ObjectCode

        self.kernels[text] = ObjectCode.from_cubin(code).get_kernel("hopper_batch")

    def launch_batch(self, batch: Batch) -> np.ndarray:
        """The words [B, threads, words_out] the kernel stores for one packed batch."""
        kernel = self.kernel(batch.form)
        started = time.perf_counter()
        ins = [self.gpu.to_device(x) for x in (batch.images, batch.control, batch.registers)]
        out = self.gpu.empty((len(batch.images), batch.form.threads, batch.form.words_out), np.uint32)
        copied = time.perf_counter()
        self.gpu.launch(kernel, len(batch.images), batch.form.threads, batch.smem_bytes, *ins, out,
                        np.uint32(batch.smem_bytes))
        self.gpu.sync()
        ran = time.perf_counter()
        words = self.gpu.to_host(out)
        self.seconds["copy_in"] += copied - started
        self.seconds["launch"] += ran - copied
        self.seconds["read_back"] += time.perf_counter() - ran
        return words

    def run_batch(self, batch: Batch) -> np.ndarray:
        """D codes [B, M, N] of one packed batch."""
        return unpack_d(batch.form, self.launch_batch(batch))

    def run(self, programs: Sequence[Program], finished: Callable[[int, np.ndarray | Exception], None]) -> None:
        """Run every program, calling finished(index, D codes or the exception that stopped it):
        programs are grouped by form, each group launched in chunks."""
        groups: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(programs):
            try:
                groups[hopper_kernel(hopper_form(p))].append(i)
            except UnsupportedProgram as e:
                finished(i, e)
        for members in groups.values():
            for start in range(0, len(members), MAX_CTAS_PER_LAUNCH):
                chunk = members[start:start + MAX_CTAS_PER_LAUNCH]
                try:
                    d = self.run_batch(pack([programs[i] for i in chunk]))
                except UnsupportedProgram as e:
                    for i in chunk:
                        finished(i, e)
                    continue
                for i, di in zip(chunk, d):
                    finished(i, di)
