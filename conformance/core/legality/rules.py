"""Every legality rule: id, ISA reference, statement, who can check it, and on what.

`assembler`: visible in qualifiers, immediates or the target, so ptxas must reject a violation.
`oracle`: a property of runtime register values (descriptors, TMEM addresses) that no assembler
sees; the oracle and the generators enforce it. Notes record where ptxas and the ISA text differ.

`instruction` rules make an instruction illegal on its target (`legality.check`). `program` rules
are the undefined behaviour of legal instructions as they run, checked on a whole program
(`legality.undefined_behaviour`) since most need its context (its TMEM allocation, the shared
memory it initialises, its CTAs): the oracle refuses such programs (`UndefinedBehaviour`) and the
generators do not draw them.
"""

from __future__ import annotations

from dataclasses import dataclass

ASSEMBLER = "assembler"
ORACLE = "oracle"
INSTRUCTION = "instruction"
PROGRAM = "program"


@dataclass(frozen=True)
class Rule:
    id: str
    reference: str
    statement: str
    checked_by: str
    note: str = ""
    scope: str = INSTRUCTION


_T = "PTX ISA 9.7.16"
_RULES = (
    # --- targets ---------------------------------------------------------------------------
    Rule("target.family", "PTX ISA Target ISA Notes of 9.7.16, 9.7.15.5, 9.7.14.6.3",
         "the instruction family must be supported on the target (tcgen05: sm_100a/sm_103a; "
         "wgmma: sm_90a; mma.sp: sm_80 and later)", ASSEMBLER),
    Rule("target.kind-i8", f"{_T}.10.9.1 Target ISA Notes",
         ".kind::i8 is supported on sm_100a (and sm_101a/sm_110a), not on sm_103a", ASSEMBLER),
    Rule("target.ld-red", f"{_T}.8.3 Target ISA Notes",
         "tcgen05.ld.red is supported on sm_103a (sm_101a, sm_110a), not on sm_100a", ASSEMBLER),
    Rule("target.k96", f"{_T}.2.1.1",
         "K = 96 (idesc bit 31 of Table 44) is only supported on sm_103a", ORACLE),
    Rule("target.lbo-absolute", f"{_T}.4.1.1",
         "the absolute leading-dimension address mode (sdesc bit 52) is supported on sm_103a", ORACLE),
    Rule("syntax.qualifier", "PTX ISA 9.7.16 syntax blocks of each instruction",
         "every qualifier takes one of the values its syntax lists (.cta_group::1/::2, .redOp, "
         ".src_fmt, .wait::ld/st, .fence::before/after_thread_sync, the state space of alloc "
         "(.shared::cta or none) and commit (.shared::cluster or none) ...), and an address register "
         "is 32 or 64 bits wide", ASSEMBLER),
    # --- tcgen05.mma qualifiers --------------------------------------------------------------
    Rule("mma.ws.cta-group", f"{_T}.10.9.3 syntax", ".ws takes .cta_group::1 only", ASSEMBLER),
    Rule("mma.ws.kind", f"{_T}.10.9.3 syntax; Table 39",
         ".ws supports .kind::f16, tf32, f8f6f4 and i8 (no block-scaled kinds)", ASSEMBLER),
    Rule("mma.block-scale.required", f"{_T}.10.9.1 syntax 2",
         ".kind::mxf8f6f4, mxf4 and mxf4nvf4 require .block_scale", ASSEMBLER),
    Rule("mma.block-scale.kind", f"{_T}.10.9.1 syntax 1, 2",
         ".block_scale is only allowed with the block-scaled kinds", ASSEMBLER),
    Rule("mma.scale-vec.kind", f"{_T}.10.7.1, Tables 54 and 55",
         ".scale_vectorsize must be a Table 54 combination for the kind (1X: mxf8f6f4; 2X: mxf4, "
         "mxf4nvf4; 4X and block16: mxf4nvf4; block32: all three)", ASSEMBLER),
    Rule("mma.scale-vec.required", f"{_T}.10.9.1",
         "for .kind::mxf4nvf4 the .scale_vectorsize qualifier must be explicitly specified", ASSEMBLER),
    Rule("mma.scale-vec.k96", f"{_T}.10.7.1, Table 54; 9.7.16.10.9.1 aliases",
         "with K = 96 only .block16 / .block32 name a scale vector (3 or 6 factors per row)", ORACLE,
         "assumption A-K96-SCALEVEC: Table 54 says 2X/4X hold for 'all supported values of K'"),
    Rule("mma.collector.buffer", f"{_T}.10.9.1 / .3 syntax",
         "the collector buffer is ::a without .ws and ::b0-::b3 with .ws", ASSEMBLER),
    Rule("mma.ashift.a-tmem", f"{_T}.10.9.1 syntax 3",
         ".ashift requires matrix A in Tensor Memory", ASSEMBLER),
    Rule("mma.ashift.ws", f"{_T}.10.9.3 syntax", ".ashift is not available with .ws", ASSEMBLER),
    Rule("mma.ashift.collector", f"{_T}.10.9.1",
         "it is illegal to specify .collector::a::use or ::fill along with .ashift", ASSEMBLER),
    Rule("mma.ashift.kind", f"{_T}.10.9.1 syntax 3, 4, 6",
         ".ashift exists only for .kind::f16, tf32, f8f6f4 and i8 (not the block-scaled forms)", ASSEMBLER),
    Rule("mma.ashift.m", f"{_T}.10.9.1",
         ".ashift is only allowed with M = 128 or M = 256", ORACLE),
    Rule("mma.disable-output-lane.size", f"{_T}.10.9.1",
         "disable-output-lane has 4 words with .cta_group::1 and 8 with .cta_group::2", ASSEMBLER),
    Rule("mma.disable-output-lane.form", f"{_T}.10.9.1-3 syntax",
         "disable-output-lane exists only without .ws and without .block_scale", ASSEMBLER),
    Rule("mma.scale-input-d.kind", f"{_T}.10.9.1",
         "scale-input-d is only valid for .kind::tf32 and .kind::f16", ASSEMBLER),
    Rule("mma.scale-input-d.i8", f"{_T}.10.9.1",
         "scale-input-d is not valid for .kind::i8", ORACLE,
         "ptxas (CUDA 13) accepts scale-input-d with .kind::i8 although the ISA forbids it"),
    Rule("mma.scale-input-d.range", f"{_T}.10.9.1", "scale-input-d is in [0, 15]", ASSEMBLER),
    Rule("mma.scale-input-d.form", f"{_T}.10.9.1 syntax 2, 4",
         "scale-input-d does not exist in the .block_scale forms", ASSEMBLER),
    Rule("mma.scale-input-d.ws", f"{_T}.10.9.3-4 syntax",
         "scale-input-d does not exist in the .ws forms", ORACLE,
         "no PTX text writes it: on .ws an immediate after enable-input-d is the zero-column mask "
         "descriptor, which ptxas accepts as any 64-bit immediate (reports/ptx-spellings/spellings.json); "
         "only a program JSON can hold this instruction"),
    Rule("mma.zero-column-mask.form", f"{_T}.10.9.3 syntax",
         "the zero-column mask descriptor operand exists only with .ws", ASSEMBLER),
    # --- tcgen05.mma instruction descriptor ----------------------------------------------------
    Rule("idesc.reserved", f"{_T}.4.2, Tables 42-44", "reserved idesc bits must be 0", ORACLE),
    Rule("idesc.sparse-flag", f"{_T}.4.2, Tables 42-44",
         "idesc bit 2 (sparsity) must be 1 exactly for .sp", ORACLE),
    Rule("idesc.shape-m", f"{_T}.2.1, Table 39", "M must be a Table 39 value for the class", ORACLE),
    Rule("idesc.shape-n", f"{_T}.2.1, Table 39", "N must be a Table 39 value for the class", ORACLE),
    Rule("idesc.shape-k96", f"{_T}.2.1, Table 39, Table 44",
         "K = 96 exists only for dense .kind::mxf4/mxf4nvf4 with .cta_group::1 M = 128 or .cta_group::2 M = 128, 256 "
         "(assumption A-K96-SHAPES)", ORACLE),
    Rule("idesc.dtype", f"{_T}.2.1, Table 39; Table 42",
         "the D type must be legal for the kind", ORACLE),
    Rule("idesc.abtype", f"{_T}.2.1, Table 39; Tables 42-44",
         "A and B types must be legal for the kind and the D type", ORACLE),
    Rule("idesc.abtype-mixed", f"{_T}.2.1, Table 39",
         "A and B must have the same type for .kind::f16, tf32, mxf4 and mxf4nvf4", ORACLE,
         "assumption A-MIXED-F16 for f16 x bf16"),
    Rule("idesc.saturate", f"{_T}.4.2, Table 42", "saturate is only for .kind::i8", ORACLE),
    Rule("idesc.negate", f"{_T}.10.1, Table 49", "negate is not supported for .kind::i8", ORACLE),
    Rule("idesc.transpose-kind", f"{_T}.10.1, Table 49",
         "transpose is not supported for .kind::mxf4 and mxf4nvf4", ORACLE),
    Rule("idesc.transpose-size", f"{_T}.10.3, Table 52",
         "only 8-, 16- and 32-bit elements may be MN-major (transposed)", ORACLE),
    Rule("idesc.transpose-swizzle", f"{_T}.10.1, Table 52",
         "transposed tf32 needs 128B swizzling with 32B atomicity; other transposed types must "
         "not use it", ORACLE),
    Rule("idesc.transpose-b-8bit-n", f"{_T}.10.1, Table 50",
         "8-bit transpose B needs N in 16..256 step 16 (cta_group::1) or 32..256 step 32 (::2)", ORACLE),
    Rule("idesc.sparse-selector", f"{_T}.10.8.4",
         "the sparsity selector must be 0 for .kind::i8 and f8f6f4 (and dense MMAs)", ORACLE),
    Rule("idesc.max-shift", f"{_T}.4.2, Table 42",
         "the B-reuse maximum shift (bits 30-31) is only meaningful with .ws", ORACLE,
         "assumption A-MAXSHIFT: non-.ws descriptors must hold 0 there"),
    Rule("idesc.scale-type", f"{_T}.10.7.1, Table 55",
         "the scale factor type must be legal for the kind and scale vector size", ORACLE),
    Rule("idesc.sf-id", f"{_T}.10.7.2, 9.7.16.10.7.3",
         "scale factor A/B IDs must select a sub-column legal for the scale vector size", ORACLE),
    # --- TMEM operands of tcgen05.mma -----------------------------------------------------------
    Rule("tmem.lane-alignment", f"{_T}.10.5",
         "the lane of D (and A, metadata) in TMEM must be 0, or 0/16 for layouts C and F", ORACLE),
    Rule("tmem.same-alignment", f"{_T}.10.5, 9.7.16.10.8.5",
         "layouts C and F use the same lane alignment for A, D and the metadata", ORACLE),
    Rule("tmem.columns", f"{_T}.1", "the D region must lie within the 512 TMEM columns", ORACLE),
    # --- shared-memory descriptors ---------------------------------------------------------------
    Rule("sdesc.fixed", f"{_T}.4.1, Table 40",
         "bits 46-48 hold 0b001 and bits 53-60 hold 0 (reserved bits 0)", ORACLE),
    Rule("sdesc.swizzle", f"{_T}.4.1, Table 40", "swizzle codes 3, 5 and 7 are invalid", ORACLE),
    Rule("sdesc.lbo-absolute", f"{_T}.3.1.2.1",
         "the absolute leading-dimension mode needs 128B swizzle with 16B atomicity, K-major, "
         "and base offset 0", ORACLE),
    Rule("sdesc.sm90-reserved", "PTX ISA 9.7.15.5.1; CUTLASS GmmaDescriptor",
         "reserved bits of the sm_90 descriptor are 0", ORACLE),
    # --- zero-column mask --------------------------------------------------------------------------
    Rule("zcmask.reserved", f"{_T}.4.3, Table 45", "reserved bits 36-38 and 62-63 are 0", ORACLE),
    Rule("zcmask.shift", f"{_T}.4.3, Table 45",
         "the column shift is at most 16 for M = 32 and 32 otherwise", ORACLE),
    # --- alloc / ld / st / cp / shift / commit -------------------------------------------------------
    Rule("alloc.columns", f"{_T}.7.1",
         "nCols is a power of 2 in [32, 512]", ASSEMBLER),
    Rule("alloc.columns-register", f"{_T}.7.1",
         "nCols given in a register is a power of 2 in [32, 512]", ORACLE,
         "the assembler checks an immediate nCols only; a register's value is known at run time"),
    Rule("ldst.num", f"{_T}.8.3-4, Tables 47 and 48",
         ".num must have a register count in Table 47/48 for the shape", ASSEMBLER),
    Rule("ldst.split-offset", f"{_T}.8.3-4 syntax",
         "immHalfSplitoff is given exactly for .16x32bx2", ASSEMBLER),
    Rule("ld.red.shape", f"{_T}.8.3", ".red takes shape .32x32b or .16x32bx2", ASSEMBLER),
    Rule("ld.red.num", f"{_T}.8.3", "with .red, .num must be at least .x2", ASSEMBLER),
    Rule("ld.red.abs-nan", f"{_T}.8.3 syntax", ".abs and .NaN only with .f32", ASSEMBLER),
    Rule("ld.red.pack", f"{_T}.8.3 syntax", ".pack::16b is not available with .red", ASSEMBLER),
    Rule("cp.multicast", f"{_T}.9.2",
         ".64x128b requires .warpx2::02_13 or ::01_23, .32x128b requires .warpx4, other shapes "
         "take no multicast", ASSEMBLER),
    Rule("shift.lane-alignment", f"{_T}.9.3", "the lane of taddr must be aligned to 32", ORACLE),
    Rule("kernel.cta-group", f"{_T}.7.1, 9.7.16.9.2, 9.7.16.10.9.1",
         "all tcgen05 instructions within a kernel specify the same .cta_group", ASSEMBLER),
    # --- wgmma -------------------------------------------------------------------------------------
    Rule("wgmma.shape", "PTX ISA 9.7.15.5.2", "N and K must be legal for the input types", ASSEMBLER),
    Rule("wgmma.types", "PTX ISA 9.7.15.5.2", "D/A/B types must be a legal combination", ASSEMBLER),
    Rule("wgmma.transpose", "PTX ISA 9.7.15.5.2",
         "imm-trans operands exist only for .f16/.bf16 (and not imm-trans-a with A in registers)", ASSEMBLER),
    Rule("wgmma.negate", "PTX ISA 9.7.15.5.2",
         "imm-scale-a/b are +1 or -1, and absent for integer types", ASSEMBLER),
    Rule("wgmma.satfinite", "PTX ISA 9.7.15.5.2", ".satfinite only with integer types", ASSEMBLER),
    Rule("wgmma.sparse-selector", "PTX ISA 9.7.15.5.3",
         "the sparsity selector of wgmma .sp is 0 or 1 for 16/32-bit types and 0 for 8-bit types",
         ASSEMBLER, "values as enforced by ptxas; the selector section is not in shared/spec"),
    # --- mma.sp ----------------------------------------------------------------------------------
    Rule("mma-sp.shape", "PTX ISA 9.7.14.6.3 syntax", "K must be legal for the input types", ASSEMBLER),
    Rule("mma-sp.types", "PTX ISA 9.7.14.6.3",
         "D/A/B/C types must be a legal combination, .dtype equal to .ctype", ASSEMBLER),
    Rule("mma-sp.f8-target", "PTX ISA 9.7.14.6.3 Target ISA Notes",
         ".e4m3/.e5m2 require sm_89 or higher", ASSEMBLER),
    Rule("mma-sp.kind-target", "PTX ISA 9.7.14.6.3 Target ISA Notes",
         ".kind / .block_scale forms require sm_120a", ASSEMBLER),
    Rule("mma-sp.selector", "PTX ISA 9.7.14.6.3",
         "the sparsity selector is a constant in 0..3, narrowed per type and K", ASSEMBLER,
         "per-shape values as enforced by ptxas (tcgen05_conformance.core.isa.hopper.MMA_SP_SELECTORS)"),
    Rule("mma-sp.satfinite", "PTX ISA 9.7.14.6.3 syntax", ".satfinite only with integer types", ASSEMBLER),
    Rule("mma-sp.selector-silicon", "PTX ISA 9.7.14.6.3; measured on the H100",
         "m16n8k32 .f32.f16.f16.f32 takes selector 0 or 1: ptxas accepts 2 and 3, the H100 raises an "
         "illegal instruction", ORACLE, "tcgen05_conformance.core.isa.hopper.MMA_SP_SELECTORS_ON_SILICON"),
    # --- undefined behaviour of legal instructions in a program (legality.undefined_behaviour) ---------
    Rule("program.cta-pair", f"{_T}.5.1-2",
         "a .cta_group::2 tcgen05.mma, .cp or .shift acts on the CTA pair (its CTA and the peer CTA), "
         "so the program runs two CTAs", ORACLE, scope=PROGRAM),
    Rule("program.tmem-allocation", f"{_T}.1.2, 9.7.16.7.1",
         "every TMEM cell a tcgen05.ld, .st, .cp or .shift touches lies in the program's allocation: "
         "one of its allocated columns, one of the 128 lanes", ORACLE,
         "unallocated Tensor Memory has no contents the ISA defines", PROGRAM),
    Rule("program.ldst-warp-lanes", f"{_T}.8.1",
         "a tcgen05.ld / .st touches only the 32 lanes its warp may access, those of the quarter "
         "holding the taddr lane", ORACLE, scope=PROGRAM),
    Rule("program.st-split-overlap", f"{_T}.8.4, 9.7.16.2.3.1.5",
         "the two halves of a .16x32bx2 tcgen05.st (the second immHalfSplitoff columns after taddr) "
         "write distinct TMEM cells", ORACLE,
         "assumption A-ST-SPLIT-OVERLAP: the ISA does not say which thread's register a cell written "
         "by both halves holds", PROGRAM),
    Rule("program.cp-source-descriptor", f"{_T}.9.2, 9.7.16.4.1, Table 40",
         "the source descriptor of a tcgen05.cp holds the fixed bits of Table 40 and a valid swizzle "
         "code", ORACLE, scope=PROGRAM),
    Rule("program.cp-source-initialised", f"{_T}.9.2",
         "every shared-memory byte a tcgen05.cp reads (in each CTA it copies for) lies in shared memory "
         "and is initialised by the program", ORACLE,
         "shared memory outside the program's segments holds no defined value: the kernels copy in "
         "only the segments", PROGRAM),
)
RULES: dict[str, Rule] = {r.id: r for r in _RULES}
