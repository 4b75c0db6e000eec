"""A program as one complete PTX kernel.

tcgen05 (sm_100a / sm_103a), one CTA or a CTA pair (cluster of 2) for cta_group::2, 128 threads:
copy the program's shared-memory image in from global memory; warp 0 allocates TMEM; every warp
writes its 32-lane quarter of the initial TMEM image (tcgen05.st.32x32b); fences; thread 0 of the
issuing CTA issues the operations and tcgen05.commit to an mbarrier; everyone waits on it; every
warp reads back its quarter of the allocated columns (tcgen05.ld.32x32b) into global memory; warp
0 deallocates. Kernel parameters: the shared-memory images (per CTA, `smem_bytes` each), the
initial TMEM images and the result images (per CTA, 128 x tmem_columns words, lane-major).

Hopper (sm_90a): a batch of programs with one instruction form (`hopper_kernel`), one CTA each:
wgmma (one warpgroup) or mma.sp (one warp) with the program's shared-memory image copied in, its
descriptors and scale-d from a per-program control record, operand registers loaded per thread
from global memory and D stored per thread.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass

from tcgen05_conformance.core.encoding import sdesc as sdesc_codec
from tcgen05_conformance.core.encoding import taddr as taddr_codec
from tcgen05_conformance.core.instructions import (
    Instruction,
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Fence,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05RelinquishAllocPermit,
    Tcgen05Shift,
    Tcgen05St,
    Tcgen05Wait,
    WgmmaMma,
)
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa.targets import PTX_VERSION
from tcgen05_conformance.core.memo import memo
from tcgen05_conformance.core.program import Program, instruction_to_json
from tcgen05_conformance.core.ptx.render import (
    REGISTER_DECLARATIONS,
    draw_spelling,
    head,
    mma_sp_fragment_registers,
    spell,
)
from tcgen05_conformance.core.ptx.spelling import CANONICAL, Spelling

ISSUED_OPS = (Tcgen05Mma, Tcgen05Cp, Tcgen05Shift)  # single-thread asynchronous operations
LD_CHUNK = 32  # columns per tcgen05.ld / tcgen05.st (.32x32b.x32: 32 registers per thread)
THREADS = 128  # one warpgroup: its four warps reach the four 32-lane quarters of TMEM
QUARTER_ADDRESS = taddr_codec.encode(dm.LANES_PER_WARP_QUARTER, 0)  # warp w's quarter starts at w times this


class UnsupportedProgram(ValueError):
    """A program this kernel generator cannot express (named in the message)."""


def spelling_stream(key: str) -> random.Random:
    """The random stream a kernel's spellings are drawn from: a function of `key` (a case id, or
    a Hopper batch's instruction form) alone, apart from the draws that chose the program, so
    spelling variety changes no program a seed draws."""
    return random.Random(f"tcgen05-conformance spelling {key}")


RELOCATED = frozenset({"a_desc", "b_desc", "s_desc"})  # in registers: the kernel adds the image's address


def smem_bytes(p: Program) -> int:
    end = max((s.offset + len(s.data) for s in p.smem), default=0)
    return max(16, (end + 15) // 16 * 16)


def cta_group(p: Program) -> int:
    groups = {getattr(op, "cta_group", 1) for op in p.ops if isinstance(op, ISSUED_OPS)}
    if len(groups) > 1:
        raise UnsupportedProgram(
            "all tcgen05 instructions within a kernel must specify the same .cta_group "
            "(PTX ISA 9.7.16.10.9.1) [kernel.cta-group]"
        )
    return groups.pop() if groups else p.ctas


def ptx_header(target: str) -> str:
    return f".version {PTX_VERSION}\n.target {target}\n.address_size 64\n\n"


def global_pointers(params: tuple[str, ...], registers: tuple[str, ...]) -> str:
    """Load pointer parameters into registers as global-space addresses."""
    loads = [f"  ld.param.u64 {r}, [{p}];" for p, r in zip(params, registers)]
    return "\n".join(loads + [f"  cvta.to.global.u64 {r}, {r};" for r in registers])


def copy_to_shared(size: int | str, threads: int) -> str:
    """Copy `size` bytes (a multiple of 16; or the name of a register holding the count of
    16-byte units) from %rd_in to dynamic shared memory, 16 B a thread."""
    units = size if isinstance(size, str) else size // 16
    return f"""
  // shared-memory image: {units} x 16 bytes, 16 bytes per thread per step
  mov.u32 %r_i, %r_tid;
COPY_IN:
  setp.ge.u32 %p_done, %r_i, {units};
  @%p_done bra COPY_IN_DONE;
  mul.wide.u32 %rd_off, %r_i, 16;
  add.u64 %rd_src, %rd_in, %rd_off;
  ld.global.v4.b32 {{%v0, %v1, %v2, %v3}}, [%rd_src];
  cvt.u32.u64 %r_off, %rd_off;
  add.u32 %r_dst, %r_smem, %r_off;
  st.shared.v4.b32 [%r_dst], {{%v0, %v1, %v2, %v3}};
  add.u32 %r_i, %r_i, {threads};
  bra COPY_IN;
COPY_IN_DONE:
"""


KERNEL_REGISTERS = """\
  .reg .pred %p_done, %p_leader, %p_ready, %p_warp0, %p_issuer;
  .reg .b32 %r_tid, %r_warp, %r_i, %r_off, %r_dst, %r_smem, %r_base, %r_quarter, %r_cta, %r_col;
  .reg .b64 %rd_in, %rd_tmem_in, %rd_out, %rd_off, %rd_src, %rd_row;"""


def _tmem_rows(direction: str, columns: int, rng: random.Random) -> str:
    """Each warp moves its 32-lane quarter between TMEM and global, LD_CHUNK columns at a time
    (tcgen05.ld / st / wait with their qualifiers in orders drawn from `rng`)."""
    regs = "{" + ", ".join(f"%v{k}" for k in range(LD_CHUNK)) + "}"
    lines = [
        "  // this thread's TMEM lane (32 x warp + lane) and its row of the global image",
        "  mul.wide.u32 %rd_row, %r_tid, " + str(columns * 4) + ";",
        f"  add.u64 %rd_row, %rd_row, {'%rd_tmem_in' if direction == 'st' else '%rd_out'};",
    ]
    for chunk in range(0, columns, LD_CHUNK):
        lines.append(f"  add.u32 %r_col, %r_quarter, {chunk};")
        quads = [(k, "{" + ", ".join(f"%v{k + j}" for j in range(4)) + "}") for k in range(0, LD_CHUNK, 4)]
        if direction == "st":
            for k, quad in quads:
                lines.append(f"  ld.global.v4.b32 {quad}, [%rd_row+{(chunk + k) * 4}];")
            lines.append(f"  {_reordered(Tcgen05St('32x32b', LD_CHUNK), rng)} [%r_col], {regs};")
        else:
            lines.append(f"  {_reordered(Tcgen05Ld('32x32b', LD_CHUNK), rng)} {regs}, [%r_col];")
            lines.append(f"  {_reordered(Tcgen05Wait('ld'), rng)};")
            for k, quad in quads:
                lines.append(f"  st.global.v4.b32 [%rd_row+{(chunk + k) * 4}], {quad};")
    if direction == "st":
        lines.append(f"  {_reordered(Tcgen05Wait('st'), rng)};")
    return "\n".join(lines) + "\n"


def _reordered(instr: Instruction, rng: random.Random) -> str:
    """Opcode and qualifiers of a kernel-managed instruction, in an accepted order drawn from `rng`."""
    return head(instr, draw_spelling(instr, rng))


def _spelled(instr: Instruction, rng: random.Random, keep_registers: frozenset[str] = frozenset()) -> list[str]:
    """The operand moves and the line of an instruction in a spelling drawn from `rng`, unguarded."""
    rendered = spell(instr, dataclasses.replace(draw_spelling(instr, rng, keep_registers), guard=None))
    return [f"  {line}" for line in rendered.moves + (rendered.line,)]


def _managed(group: int, columns: int, rng: random.Random) -> dict[str, str]:
    """The kernel's own allocation, relinquish, dealloc and commit lines, each in a form and
    spelling drawn from `rng`: the allocation's address generic (64-bit) or shared (32- or
    64-bit register, or the symbol), nCols an immediate or a register; the commit's mbarrier
    address shared::cluster in a 32- or 64-bit register or generic in a 64-bit one."""
    shared = rng.random() < 0.5
    alloc = Tcgen05Alloc(group, columns, "shared::cta" if shared else None, rng.choice((32, 64)) if shared else 64,
                         columns_register=rng.random() < 0.5)
    cluster = rng.random() < 0.5
    commit = Tcgen05Commit(group, multicast=group == 2, cta_mask=3, state_space="shared::cluster" if cluster else None,
                           address_bits=rng.choice((32, 64)) if cluster else 64)
    dealloc = Tcgen05Dealloc(group, columns, columns_register=alloc.columns_register)
    alloc_lines = _spelled(alloc, rng)
    dealloc_columns = "%r_ncols" if dealloc.columns_register else str(columns)
    return {
        "alloc": "\n".join(alloc_lines[:-1] + [f"  @%p_warp0 {alloc_lines[-1].strip()}"]),
        "relinquish": f"  @%p_warp0 {_reordered(Tcgen05RelinquishAllocPermit(group), rng)};",
        "commit": "\n".join(_spelled(commit, rng)),
        "dealloc": f"  @%p_warp0 {_reordered(dealloc, rng)} %r_base, {dealloc_columns};",
        "fence_before": f"  {_reordered(Tcgen05Fence('before_thread_sync'), rng)};",
        "fence_after": f"  {_reordered(Tcgen05Fence('after_thread_sync'), rng)};",
    }


DESCRIPTOR_FIELDS = {"%rd_adesc": "a_desc", "%rd_bdesc": "b_desc", "%rd_sdesc": "s_desc"}


def _relocated(op, spelling: Spelling = CANONICAL) -> list[str]:
    """Operand moves with every address made absolute: TMEM addresses are relative to the
    allocation base in %r_base, shared-memory descriptors' addresses to the image, whose shared
    address >> 4 is in %rd_smem4 (the start address field, bits 0-13, and an absolute LBO, bits
    16-29, PTX ISA 9.7.16.4.1 Table 40). The descriptors must be in registers (RELOCATED)."""
    rendered = spell(op, spelling)
    out = []
    for m in rendered.moves + rendered.setup:
        out.append(m)
        for reg in ("%r_d", "%r_a", "%r_meta", "%r_sfa", "%r_sfb", "%r_t"):
            if m.startswith(f"mov.b32 {reg},"):
                out.append(f"add.u32 {reg}, {reg}, %r_base;")
        for reg, field in DESCRIPTOR_FIELDS.items():
            if m.startswith(f"mov.b64 {reg},"):
                word = getattr(op, field)
                out.append(f"add.u64 {reg}, {reg}, %rd_smem4;")
                if word and sdesc_codec.decode(word).lbo_absolute:
                    out.append(f"add.u64 {reg}, {reg}, %rd_smem4_lbo;")
    return out


def tcgen05_kernel(p: Program) -> str:
    """The PTX module of a tcgen05 program."""
    bad = [op.OP for op in p.ops if not isinstance(op, ISSUED_OPS)]
    if bad:
        raise UnsupportedProgram(
            f"the tcgen05 kernel issues tcgen05.mma, .cp and .shift; it manages alloc, ld, st, "
            f"wait, fence and commit itself, so a program may not contain {bad[0]}"
        )
    group = cta_group(p)
    size = smem_bytes(p)
    cluster = "\n.reqnctapercluster 2, 1, 1" if group == 2 else ""
    rng = spelling_stream(p.case_id)
    body = []
    for op in p.ops:
        spelling = draw_spelling(op, rng, RELOCATED)
        body += [f"  {m}" for m in _relocated(op, spelling)] + [f"  {spell(op, spelling).line}"]
    managed = _managed(group, p.tmem_columns, rng)
    return ptx_header(p.target) + f""".extern .shared .align 1024 .b8 smem_image[];
.shared .align 16 .b32 taddr_slot;
.shared .align 8 .b64 mbar;

.visible .entry program(.param .u64 p_smem, .param .u64 p_tmem_in, .param .u64 p_out)
.maxntid {THREADS}, 1, 1{cluster}
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
  mov.u32 %r_tid, %tid.x;
  shr.u32 %r_warp, %r_tid, 5;
  mov.u32 %r_cta, %cluster_ctarank;
  .reg .b64 %rd_smem4, %rd_smem4_lbo;
  mov.u32 %r_smem, smem_image;
  shr.u32 %r_off, %r_smem, 4;
  cvt.u64.u32 %rd_smem4, %r_off;  // descriptors hold addresses relative to the image: relocated
  shl.b64 %rd_smem4_lbo, %rd_smem4, 16;
{global_pointers(("p_smem", "p_tmem_in", "p_out"), ("%rd_in", "%rd_tmem_in", "%rd_out"))}
  // this CTA's slices of the global images
  mul.wide.u32 %rd_off, %r_cta, {size};
  add.u64 %rd_in, %rd_in, %rd_off;
  mul.wide.u32 %rd_off, %r_cta, {dm.TMEM_LANES * p.tmem_columns * 4};
  add.u64 %rd_tmem_in, %rd_tmem_in, %rd_off;
  add.u64 %rd_out, %rd_out, %rd_off;
{copy_to_shared(size, THREADS)}
  fence.proxy.async.shared::cta;
  setp.eq.u32 %p_warp0, %r_warp, 0;
  setp.eq.u32 %p_leader, %r_tid, 0;
  @%p_leader mbarrier.init.shared::cta.b64 [mbar], 1;
  @%p_leader fence.mbarrier_init.release.cluster;
{managed["alloc"]}
{managed["relinquish"]}
{managed["fence_before"]}
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
{managed["fence_after"]}
  ld.shared.b32 %r_base, [taddr_slot];
  and.b32 %r_quarter, %r_warp, 3;
  mul.lo.u32 %r_quarter, %r_quarter, {QUARTER_ADDRESS:#x};
  add.u32 %r_quarter, %r_quarter, %r_base;
{_tmem_rows("st", p.tmem_columns, rng)}
{managed["fence_before"]}
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
{managed["fence_after"]}
  // thread 0 of CTA 0 issues (a kernel launched without a cluster is a cluster of one)
  setp.eq.u32 %p_issuer, %r_cta, 0;
  and.pred %p_issuer, %p_issuer, %p_leader;
  @!%p_issuer bra ISSUED;
{chr(10).join(body)}
{managed["commit"]}
ISSUED:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p_ready, [mbar], 0;
  @!%p_ready bra WAIT;
{managed["fence_after"]}
{_tmem_rows("ld", p.tmem_columns, rng)}
{managed["fence_before"]}
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
{managed["dealloc"]}
  ret;
}}
"""


HOPPER_CONTROL_BYTES = 32  # per program: A descriptor (u64), B descriptor (u64), scale-d (u32), padding


@dataclass(frozen=True)
class HopperForm:
    """What a batched Hopper kernel is specialised on: the instruction (descriptors, scale-d and
    metadata are runtime values) and the registers each thread loads and stores."""

    target: str
    op: WgmmaMma | MmaSp
    threads: int
    inputs: tuple[tuple[str, int], ...]  # (register prefix, count) loaded per thread, in order
    outputs: tuple[tuple[str, int], ...]  # (register prefix, count) stored per thread

    @property
    def words_in(self) -> int:
        """32-bit words each thread loads: its input registers, then the sparsity metadata."""
        return sum(n for _, n in self.inputs) + 1

    @property
    def words_out(self) -> int:
        return sum(n for _, n in self.outputs)


def hopper_form(p: Program) -> HopperForm:
    """The batched-kernel form of a Hopper program (exactly one wgmma.mma_async or mma.sp)."""
    if len(p.ops) != 1 or not isinstance(p.ops[0], (WgmmaMma, MmaSp)):
        raise UnsupportedProgram("a Hopper program holds exactly one wgmma.mma_async or mma.sp")
    return _hopper_form(p.target, p.ops[0])


# Every data set of an instruction has its form (a campaign chunk holds 200 / data sets instructions).
@memo(maxsize=256)
def _hopper_form(target: str, op: WgmmaMma | MmaSp) -> HopperForm:
    if isinstance(op, WgmmaMma):
        d_count = max(1, op.n // 4) if op.dtype == "f16" else max(1, op.n // 2)
        acc = ("%rh" if op.dtype == "f16" else "%sc" if op.dtype == "s32" else "%fc", d_count)
        inputs = ((("%ra", 4),) if op.a_in_registers else ()) + (acc,)
        op = dataclasses.replace(op, a_desc=0, b_desc=0, scale_d=True)
        return HopperForm(target, op, THREADS, inputs, (acc,))
    a, b, cd = mma_sp_fragment_registers(op)
    acc = ({"f16": "%rh", "s32": "%sc"}.get(op.ctype, "%fc"), cd)
    return HopperForm(target, dataclasses.replace(op, metadata=0), 32, (("%ra", a), ("%rb", b), acc), (acc,))


HOPPER_REGISTERS = frozenset({"a_desc", "b_desc", "scale_d"})  # loaded from the control record


def hopper_line(form: HopperForm) -> tuple[str, ...]:
    """The form's instruction in a spelling drawn from the form itself (the programs of a batch
    share one kernel), with its guard's setup; its operands are the registers the kernel loads."""
    key = json.dumps(instruction_to_json(form.op), sort_keys=True)
    rendered = spell(form.op, draw_spelling(form.op, spelling_stream(key), HOPPER_REGISTERS))
    return rendered.setup + (rendered.line,)


def hopper_kernel(form: HopperForm | Program) -> str:
    """The PTX module of `hopper_batch(smem, control, registers, out, smem_bytes)`: CTA i runs
    program i of a batch sharing one form. Its shared-memory image is `smem_bytes` bytes at
    smem + i * smem_bytes; its control record (HOPPER_CONTROL_BYTES at control + 32 i) holds the
    descriptors, whose start addresses are offsets into the image (relocated to the image's
    shared-memory address here), and scale-d; thread t of CTA i loads `words_in` words at
    registers + 4 (i * threads + t) * words_in and stores `words_out` at the same place in out."""
    return _hopper_kernel(form if isinstance(form, HopperForm) else hopper_form(form))


# The forms of a campaign chunk: every data set of an instruction asks for its kernel.
@memo(maxsize=256)
def _hopper_kernel(form: HopperForm) -> str:
    op, threads = form.op, form.threads
    if isinstance(op, WgmmaMma):
        fence = "  wgmma.fence.sync.aligned;"
        wait = "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;"
    else:
        fence = wait = ""
    loads, k = [], 0
    for prefix, count in form.inputs:
        for r in range(count):
            loads.append(f"  ld.global.b32 {prefix}{r}, [%rd_row+{4 * k}];")
            k += 1
    loads.append(f"  ld.global.b32 %r_e, [%rd_row+{4 * k}];")
    stores = [f"  st.global.b32 [%rd_out+{4 * k}], {prefix}{r};"
              for k, (prefix, r) in enumerate((p, r) for p, n in form.outputs for r in range(n))]
    return ptx_header(form.target) + f""".extern .shared .align 1024 .b8 smem_image[];

.visible .entry hopper_batch(.param .u64 p_smem, .param .u64 p_control, .param .u64 p_regs, .param .u64 p_out,
                             .param .u32 p_smem_bytes)
.maxntid {threads}, 1, 1
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
  .reg .b32 %r_size, %r_units, %r_scaled;
  .reg .b64 %rd_control;
  mov.u32 %r_tid, %tid.x;
  mov.u32 %r_cta, %ctaid.x;
  mov.u32 %r_smem, smem_image;
{global_pointers(("p_smem", "p_control", "p_regs", "p_out"), ("%rd_in", "%rd_control", "%rd_row", "%rd_out"))}
  ld.param.u32 %r_size, [p_smem_bytes];
  shr.u32 %r_units, %r_size, 4;
  // this program's image, control record and this thread's registers: {form.words_in} words in, {form.words_out} out
  mul.wide.u32 %rd_off, %r_cta, %r_size;
  add.u64 %rd_in, %rd_in, %rd_off;
  mul.wide.u32 %rd_off, %r_cta, {HOPPER_CONTROL_BYTES};
  add.u64 %rd_control, %rd_control, %rd_off;
  mad.lo.u32 %r_i, %r_cta, {threads}, %r_tid;
  mul.wide.u32 %rd_off, %r_i, {form.words_in * 4};
  add.u64 %rd_row, %rd_row, %rd_off;
  mul.wide.u32 %rd_off, %r_i, {form.words_out * 4};
  add.u64 %rd_out, %rd_out, %rd_off;
{copy_to_shared("%r_units", threads)}
  fence.proxy.async.shared::cta;  // generic-proxy writes visible to the asynchronous operand reads
  bar.sync 0;
  ld.global.b64 %rd_adesc, [%rd_control];
  ld.global.b64 %rd_bdesc, [%rd_control+8];
  ld.global.b32 %r_scaled, [%rd_control+16];
  setp.ne.b32 %p_en, %r_scaled, 0;
  shr.u32 %r_off, %r_smem, 4;  // descriptor start address field (bits 0-13) = address >> 4
  cvt.u64.u32 %rd_off, %r_off;
  add.u64 %rd_adesc, %rd_adesc, %rd_off;
  add.u64 %rd_bdesc, %rd_bdesc, %rd_off;
{chr(10).join(loads)}
{fence}
{chr(10).join(f"  {line}" for line in hopper_line(form))}
{wait}
{chr(10).join(stores)}
  ret;
}}
"""


def kernel(p: Program) -> str:
    """The PTX module that runs program `p` on its target."""
    if any(isinstance(op, (WgmmaMma, MmaSp)) for op in p.ops):
        return hopper_kernel(p)
    return tcgen05_kernel(p)


MODULE_PREAMBLE = ".shared .align 16 .b32 taddr_slot;\n.shared .align 8 .b64 mbar;\n"  # what alloc and commit address


def entry_for(instr: Instruction, index: int, spelling: Spelling = CANONICAL) -> str:
    """A kernel holding one instruction, written in `spelling`, with its operand values loaded."""
    body = [f"  {line}" for line in spell(instr, spelling).lines]
    return f".visible .entry k{index}()\n{{\n{REGISTER_DECLARATIONS}\n" + "\n".join(body) + "\n  ret;\n}"


def instruction_spellings(p: Program) -> list[Spelling]:
    """A spelling for each instruction of the program, drawn from its case id."""
    rng = spelling_stream(p.case_id)
    return [draw_spelling(op, rng) for op in p.ops]


def instruction_module(p: Program) -> str:
    """The program's instructions as a module of one `.entry` each, in `instruction_spellings`:
    what the assembler checks of a program no kernel expresses."""
    entries = [entry_for(op, k, s) for k, (op, s) in enumerate(zip(p.ops, instruction_spellings(p)))]
    return ptx_header(p.target) + MODULE_PREAMBLE + "\n".join(entries) + "\n"


def ptx_text(p: Program) -> tuple[str, str]:
    """("kernel", the module that runs the program) or, for a program the kernel generator
    cannot express, ("instructions", `instruction_module`)."""
    try:
        return "kernel", kernel(p)
    except UnsupportedProgram:
        return "instructions", instruction_module(p)
