"""Instructions as frozen values: the qualifiers an assembler sees and the operand values
(descriptors, TMEM addresses, predicates) that only the hardware and the oracle see.

Each class's `OP` names its PTX opcode family and is the `"op"` tag of its JSON form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Tcgen05Mma:
    """tcgen05.mma{.ws}{.sp} (PTX ISA 9.7.16.10.9.1-4). `a_tmem` None: A is read from SMEM."""

    OP: ClassVar[str] = "tcgen05.mma"
    kind: str
    cta_group: int = 1
    ws: bool = False
    sparse: bool = False
    block_scale: bool = False
    scale_vec: str | None = None
    collector: str | None = None  # "a::fill", "b2::use", ...
    ashift: bool = False
    idesc: int = 0
    a_desc: int = 0
    b_desc: int = 0
    d_tmem: int = 0
    a_tmem: int | None = None
    sp_meta_tmem: int = 0
    scale_a_tmem: int = 0
    scale_b_tmem: int = 0
    enable_input_d: bool = True
    disable_output_lane: tuple[int, ...] | None = None
    scale_input_d: int | None = None
    zero_column_mask: int | None = None


@dataclass(frozen=True)
class Tcgen05Alloc:
    """tcgen05.alloc (9.7.16.7.1): `state_space` None is a generic address ("If no state space
    is specified then Generic Addressing is used"); `address_bits` the width of the register
    holding it; `columns_register`: nCols is a register (its value `columns` known only at run time)."""

    OP: ClassVar[str] = "tcgen05.alloc"
    cta_group: int = 1
    columns: int = 32
    state_space: str | None = "shared::cta"
    address_bits: int = 64
    columns_register: bool = False


@dataclass(frozen=True)
class Tcgen05Dealloc:
    OP: ClassVar[str] = "tcgen05.dealloc"
    cta_group: int = 1
    columns: int = 32
    taddr: int = 0
    columns_register: bool = False


@dataclass(frozen=True)
class Tcgen05RelinquishAllocPermit:
    OP: ClassVar[str] = "tcgen05.relinquish_alloc_permit"
    cta_group: int = 1


@dataclass(frozen=True)
class Tcgen05Ld:
    """tcgen05.ld, optionally with .red (9.7.16.8.3)."""

    OP: ClassVar[str] = "tcgen05.ld"
    shape: str
    num: int
    pack: bool = False
    red_op: str | None = None  # "min" / "max": the .red form
    red_type: str = "f32"
    red_abs: bool = False
    red_nan: bool = False
    taddr: int = 0
    split_offset: int | None = None  # immHalfSplitoff of .16x32bx2


@dataclass(frozen=True)
class Tcgen05St:
    OP: ClassVar[str] = "tcgen05.st"
    shape: str
    num: int
    unpack: bool = False
    taddr: int = 0
    split_offset: int | None = None
    values_seed: int = 0  # the stored registers: tcgen05_conformance.oracles.data_movement.st_registers


@dataclass(frozen=True)
class Tcgen05Wait:
    OP: ClassVar[str] = "tcgen05.wait"
    what: str = "st"  # "ld" or "st"


@dataclass(frozen=True)
class Tcgen05Fence:
    OP: ClassVar[str] = "tcgen05.fence"
    what: str = "after_thread_sync"


@dataclass(frozen=True)
class Tcgen05Cp:
    OP: ClassVar[str] = "tcgen05.cp"
    shape: str
    cta_group: int = 1
    multicast: str | None = None
    src_fmt: str | None = None  # decompression from .b6x16_p32 / .b4x16_p64 to .b8x16
    taddr: int = 0
    s_desc: int = 0


@dataclass(frozen=True)
class Tcgen05Shift:
    OP: ClassVar[str] = "tcgen05.shift"
    cta_group: int = 1
    taddr: int = 0


@dataclass(frozen=True)
class Tcgen05Commit:
    """tcgen05.commit (9.7.16.12.1): `state_space` None is a generic mbarrier address;
    `address_bits` the width of the register holding it."""

    OP: ClassVar[str] = "tcgen05.commit"
    cta_group: int = 1
    multicast: bool = False
    cta_mask: int = 1
    state_space: str | None = "shared::cluster"
    address_bits: int = 64


@dataclass(frozen=True)
class WgmmaMma:
    """wgmma.mma_async{.sp} (PTX ISA 9.7.15.5, sm_90a): M = 64, one warpgroup."""

    OP: ClassVar[str] = "wgmma.mma_async"
    n: int
    k: int
    dtype: str
    atype: str
    btype: str
    sparse: bool = False
    a_in_registers: bool = False
    satfinite: bool = False
    scale_d: bool = True
    imm_scale_a: int = 1
    imm_scale_b: int = 1
    imm_trans_a: int | None = None  # None: operand absent (types without transpose)
    imm_trans_b: int | None = None
    sparse_selector: int = 0
    a_desc: int = 0
    b_desc: int = 0


@dataclass(frozen=True)
class MmaSp:
    """mma.sp / mma.sp::ordered_metadata (PTX ISA 9.7.14.6.3), warp-level, M = 16, N = 8."""

    OP: ClassVar[str] = "mma.sp"
    k: int
    dtype: str
    atype: str
    btype: str
    ctype: str
    ordered_metadata: bool = True
    kind: str | None = None  # "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"
    block_scale: bool = False
    scale_vec: str | None = None
    stype: str | None = None
    satfinite: bool = False
    sparse_selector: int = 0
    metadata: int = 0


Instruction = (
    Tcgen05Mma | Tcgen05Alloc | Tcgen05Dealloc | Tcgen05RelinquishAllocPermit | Tcgen05Ld
    | Tcgen05St | Tcgen05Wait | Tcgen05Fence | Tcgen05Cp | Tcgen05Shift | Tcgen05Commit
    | WgmmaMma | MmaSp
)
INSTRUCTION_TYPES: dict[str, type] = {
    cls.OP: cls
    for cls in (
        Tcgen05Mma, Tcgen05Alloc, Tcgen05Dealloc, Tcgen05RelinquishAllocPermit, Tcgen05Ld,
        Tcgen05St, Tcgen05Wait, Tcgen05Fence, Tcgen05Cp, Tcgen05Shift, Tcgen05Commit,
        WgmmaMma, MmaSp,
    )
}


def family(instr: Instruction) -> str:
    """The instruction family a target must support: "tcgen05", "wgmma" or "mma.sp"."""
    return instr.OP.split(".")[0] if not instr.OP.startswith("mma.") else "mma.sp"
