"""PTX kernels that run many tensor-core inner products per launch (sm_90a), for measuring numeric
profiles on silicon.

`mma_sync_kernel`: each warp takes 16 x 8 tiles in turn: loads its A, B and C fragment registers
(word r of lane l of tile t at `(t * R + r) * 32 + l`, so loads coalesce), issues one
`mma.sync.aligned.m16n8k*` with C as the accumulator, and stores D in C's layout.
`wgmma_kernel`: each CTA (one warpgroup) takes 64 x N tiles in turn: copies the tile's shared-memory
image (A then B, laid out as the descriptors say) in, loads the accumulator registers with C
(word r of thread t at `(t * R + r) * 128 + thread`), issues one `wgmma.mma_async` with
scale-d = 1, waits for it, and stores D in the same order.
Register fragments are `tcgen05_conformance.core.isa.fragments`; the wgmma line is rendered by `tcgen05_conformance.core.ptx.render`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.instructions import WgmmaMma
from tcgen05_conformance.core.ptx.render import REGISTER_DECLARATIONS, render, wgmma_d_registers
from tcgen05_conformance.device.ptx.kernels import KERNEL_REGISTERS, copy_to_shared, global_pointers, ptx_header

# PTX register prefix and load/store type of an accumulator format (f16 travels as packed pairs).
ACCUMULATOR_REGISTERS = {"f32": ("%fc", "f32"), "f16": ("%rh", "b32"), "s32": ("%sc", "s32")}


@dataclass(frozen=True)
class MmaSyncInstruction:
    """mma.sync.aligned.m16n8k{k}.row.col{.satfinite}.{acc}.{atype}.{btype}.{acc} (PTX ISA 9.7.14.5.14)."""

    k: int
    atype: str
    btype: str
    acc: str
    satfinite: bool = False

    @property
    def accumulator_registers(self) -> int:
        return 2 if self.acc == "f16" else 4

    def render(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        prefix, _ = ACCUMULATOR_REGISTERS[self.acc]
        acc = "{" + ", ".join(f"{prefix}{r}" for r in range(self.accumulator_registers)) + "}"
        return (f"mma.sync.aligned.m16n8k{self.k}.row.col{sat}.{self.acc}.{self.atype}.{self.btype}.{self.acc} "
                f"{acc}, {{%ra0, %ra1, %ra2, %ra3}}, {{%rb0, %rb1}}, {acc};")


def _loads(space: str, prefix: str, typ: str, count: int, stride: int, base: str) -> list[str]:
    return [f"  ld.{space}.{typ} {prefix}{r}, [{base}+{r * stride}];" for r in range(count)]


def _stores(prefix: str, typ: str, count: int, stride: int, base: str) -> list[str]:
    return [f"  st.global.{typ} [{base}+{r * stride}], {prefix}{r};" for r in range(count)]


def _tile_pointer(dst: str, base: str, words_per_tile: int, index: str) -> list[str]:
    """dst = base + 4 (tile * words_per_tile + index): the thread's first word in a tile."""
    return [
        f"  mul.wide.u32 %rd_off, %r_tile, {words_per_tile * 4};",
        f"  add.u64 {dst}, {base}, %rd_off;",
        f"  mul.wide.u32 %rd_off, {index}, 4;",
        f"  add.u64 {dst}, {dst}, %rd_off;",
    ]


_BATCH_REGS = """\
  .reg .b32 %r_tile, %r_tiles, %r_step, %r_lane;
  .reg .b64 %rd_a, %rd_b, %rd_c, %rd_d, %rd_img, %rd_ptr;"""


def mma_sync_kernel(instr: MmaSyncInstruction) -> str:
    """The PTX module of `mma_sync_batch(a, b, c, d, tiles)` for one instruction."""
    prefix, typ = ACCUMULATOR_REGISTERS[instr.acc]
    nc = instr.accumulator_registers
    body = [
        "  mov.u32 %r_tid, %tid.x;",
        "  and.b32 %r_lane, %r_tid, 31;",
        "  mov.u32 %r_tile, %ctaid.x;",
        "  mov.u32 %r_i, %ntid.x;",
        "  mul.lo.u32 %r_tile, %r_tile, %r_i;",
        "  add.u32 %r_tile, %r_tile, %r_tid;",
        "  shr.u32 %r_tile, %r_tile, 5;  // global warp index",
        "  mov.u32 %r_step, %nctaid.x;",
        "  mul.lo.u32 %r_step, %r_step, %r_i;",
        "  shr.u32 %r_step, %r_step, 5;  // warps in the grid",
        "TILE:",
        "  setp.ge.u32 %p_done, %r_tile, %r_tiles;",
        "  @%p_done bra DONE;",
        *_tile_pointer("%rd_ptr", "%rd_a", 4 * 32, "%r_lane"),
        *_loads("global", "%ra", "b32", 4, 128, "%rd_ptr"),
        *_tile_pointer("%rd_ptr", "%rd_b", 2 * 32, "%r_lane"),
        *_loads("global", "%rb", "b32", 2, 128, "%rd_ptr"),
        *_tile_pointer("%rd_ptr", "%rd_c", nc * 32, "%r_lane"),
        *_loads("global", prefix, typ, nc, 128, "%rd_ptr"),
        f"  {instr.render()}",
        *_tile_pointer("%rd_ptr", "%rd_d", nc * 32, "%r_lane"),
        *_stores(prefix, typ, nc, 128, "%rd_ptr"),
        "  add.u32 %r_tile, %r_tile, %r_step;",
        "  bra TILE;",
        "DONE:",
        "  ret;",
    ]
    params = ", ".join(f".param .u64 p_{x}" for x in "abcd")
    return ptx_header("sm_90a") + f""".visible .entry mma_sync_batch({params}, .param .u32 p_tiles)
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
{_BATCH_REGS}
{global_pointers(("p_a", "p_b", "p_c", "p_d"), ("%rd_a", "%rd_b", "%rd_c", "%rd_d"))}
  ld.param.u32 %r_tiles, [p_tiles];
{chr(10).join(body)}
}}
"""


def wgmma_kernel(op: WgmmaMma, image_bytes: int) -> str:
    """The PTX module of `wgmma_batch(images, c, d, tiles, a_desc, b_desc)`: `op` with both operands
    in shared memory; the descriptors' start addresses are offsets into the tile's image of
    `image_bytes` bytes (a multiple of 16), relocated to the image's shared-memory address."""
    if op.a_in_registers or op.sparse or image_bytes % 16:
        raise ValueError("wgmma_kernel runs dense wgmma with both operands in shared memory, images in 16-byte units")
    prefix, typ = ACCUMULATOR_REGISTERS[op.dtype]
    nc = len(wgmma_d_registers(op).split(","))
    body = [
        "  mov.u32 %r_tid, %tid.x;",
        "  mov.u32 %r_tile, %ctaid.x;",
        "  mov.u32 %r_step, %nctaid.x;",
        "  mov.u32 %r_smem, smem_image;",
        "  shr.u32 %r_off, %r_smem, 4;",
        "  cvt.u64.u32 %rd_off, %r_off;",
        "  add.u64 %rd_adesc, %rd_adesc, %rd_off;  // start address field (bits 0-13) = address >> 4",
        "  add.u64 %rd_bdesc, %rd_bdesc, %rd_off;",
        "  setp.ne.b32 %p_en, 1, 0;  // scale-d = 1: D = A B + C",
        "TILE:",
        "  setp.ge.u32 %p_done, %r_tile, %r_tiles;",
        "  @%p_done bra DONE;",
        f"  mul.wide.u32 %rd_off, %r_tile, {image_bytes};",
        "  add.u64 %rd_in, %rd_img, %rd_off;",
        copy_to_shared(image_bytes, 128),
        *_tile_pointer("%rd_ptr", "%rd_c", nc * 128, "%r_tid"),
        *_loads("global", prefix, typ, nc, 512, "%rd_ptr"),
        "  fence.proxy.async.shared::cta;  // generic-proxy writes visible to the wgmma operand reads",
        "  bar.sync 0;",
        "  wgmma.fence.sync.aligned;",
        f"  {render(op)}",
        "  wgmma.commit_group.sync.aligned;",
        "  wgmma.wait_group.sync.aligned 0;",
        *_tile_pointer("%rd_ptr", "%rd_d", nc * 128, "%r_tid"),
        *_stores(prefix, typ, nc, 512, "%rd_ptr"),
        "  bar.sync 0;  // every warp's operand reads are done before the next image overwrites them",
        "  add.u32 %r_tile, %r_tile, %r_step;",
        "  bra TILE;",
        "DONE:",
        "  ret;",
    ]
    return ptx_header("sm_90a") + f""".extern .shared .align 1024 .b8 smem_image[];

.visible .entry wgmma_batch(.param .u64 p_img, .param .u64 p_c, .param .u64 p_d, .param .u32 p_tiles, .param .u64 p_adesc, .param .u64 p_bdesc)
.maxntid 128, 1, 1
{{
{REGISTER_DECLARATIONS}
{KERNEL_REGISTERS}
{_BATCH_REGS}
{global_pointers(("p_img", "p_c", "p_d"), ("%rd_img", "%rd_c", "%rd_d"))}
  ld.param.u32 %r_tiles, [p_tiles];
  ld.param.u64 %rd_adesc, [p_adesc];
  ld.param.u64 %rd_bdesc, [p_bdesc];
{chr(10).join(body)}
}}
"""
