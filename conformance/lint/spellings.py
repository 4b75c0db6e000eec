"""Ask the assembler which spellings of each tensor-core instruction it accepts: every order of
the qualifiers of a representative form (all orders up to 7 qualifiers, a seeded sample beyond),
and alternatives for each operand (register widths, immediates in every PTX integer notation,
`[reg+imm]` and other address forms, negated predicates, immediates inside vectors).

The findings are recorded in `reports/ptx-spellings/spellings.json` and carried, as data, into
`tcgen05_conformance.core.ptx.spelling` (the tables the renderer draws from and the parser reads by);
`tests/test_ptx_spelling.py` asks ptxas again about a sample of them.

    tcgen05-conformance spellings --out reports/ptx-spellings/spellings.json
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import random
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable

from tcgen05_conformance.device.assembler import assemble_entries, assembler_version

BLACKWELL = ("sm_100a", "sm_103a")
HOPPER = ("sm_90a",)
ALL_PERMUTATIONS_UP_TO = 7  # 7! = 5040 orders; longer forms are sampled
SAMPLED_ORDERS = 3000

DECLARATIONS = """\
  .reg .pred %p, %q;
  .reg .b16 %h;
  .reg .b32 %r, %r1, %r2, %r3, %rt, %ri, %rm, %ra, %rsa, %rsb, %rred;
  .reg .b32 %v<128>;
  .reg .f32 %f<128>;
  .reg .s32 %s<128>;
  .reg .b32 %x<4>, %y<4>, %hh<64>;
  .reg .b64 %rd, %rda, %rdb, %rdz, %rds;"""
PREAMBLE = ".shared .align 16 .b32 slot;\n.shared .align 8 .b64 bar;\n"


@dataclass(frozen=True)
class OrderProbe:
    """A representative form: the opcode, its qualifiers in the ISA's syntax order, the operands."""

    name: str
    opcode: str
    qualifiers: tuple[str, ...]
    operands: str
    archs: tuple[str, ...]

    def line(self, order: tuple[str, ...]) -> str:
        return f"{'.'.join((self.opcode, *order))} {self.operands};"


ORDER_PROBES = (
    OrderProbe("mma.ws.sp", "tcgen05.mma", ("ws", "sp", "cta_group::1", "kind::f16", "collector::b0::fill"),
               "[%rt], %rda, %rdb, [%rm], %ri, %p", BLACKWELL),
    OrderProbe("mma.block_scale", "tcgen05.mma",
               ("sp", "cta_group::2", "kind::mxf8f6f4", "block_scale", "scale_vec::1X"),
               "[%rt], %rda, %rdb, [%rm], %ri, [%rsa], [%rsb], %p", BLACKWELL),
    OrderProbe("mma.ashift", "tcgen05.mma", ("cta_group::1", "kind::tf32", "ashift", "collector::a::discard"),
               "[%rt], [%ra], %rdb, %ri, %p", BLACKWELL),
    OrderProbe("mma.block16", "tcgen05.mma", ("cta_group::1", "kind::mxf4nvf4", "block_scale", "block16"),
               "[%rt], %rda, %rdb, %ri, [%rsa], [%rsb], %p", BLACKWELL),
    OrderProbe("alloc", "tcgen05.alloc", ("cta_group::1", "sync", "aligned", "shared::cta", "b32"),
               "[slot], 32", BLACKWELL),
    OrderProbe("dealloc", "tcgen05.dealloc", ("cta_group::2", "sync", "aligned", "b32"), "%rt, 64", BLACKWELL),
    OrderProbe("relinquish", "tcgen05.relinquish_alloc_permit", ("cta_group::1", "sync", "aligned"), "", BLACKWELL),
    OrderProbe("ld", "tcgen05.ld", ("sync", "aligned", "16x32bx2", "x2", "pack::16b", "b32"),
               "{%v0, %v1}, [%rt], 16", BLACKWELL),
    OrderProbe("ld.red", "tcgen05.ld", ("red", "sync", "aligned", "32x32b", "x2", "max", "abs", "NaN", "f32"),
               "{%v0, %v1}, %rred, [%rt]", ("sm_103a",)),
    OrderProbe("ld.red.s32", "tcgen05.ld", ("red", "sync", "aligned", "16x32bx2", "x4", "min", "s32"),
               "{%v0, %v1, %v2, %v3}, %rred, [%rt], 8", ("sm_103a",)),
    OrderProbe("st", "tcgen05.st", ("sync", "aligned", "16x64b", "x2", "unpack::16b", "b32"),
               "[%rt], {%v0, %v1}", BLACKWELL),
    OrderProbe("wait", "tcgen05.wait::st", ("sync", "aligned"), "", BLACKWELL),
    OrderProbe("cp", "tcgen05.cp", ("cta_group::1", "64x128b", "warpx2::02_13", "b8x16", "b6x16_p32"),
               "[%rt], %rds", BLACKWELL),
    OrderProbe("shift", "tcgen05.shift", ("cta_group::2", "down"), "[%rt]", BLACKWELL),
    OrderProbe("commit", "tcgen05.commit",
               ("cta_group::1", "mbarrier::arrive::one", "shared::cluster", "multicast::cluster", "b64"),
               "[%rd], %h", BLACKWELL),
    OrderProbe("wgmma", "wgmma.mma_async", ("sync", "aligned", "m64n8k32", "f32", "e4m3", "e5m2"),
               "{%f0, %f1, %f2, %f3}, %rda, %rdb, %p, 1, 1", HOPPER),
    OrderProbe("wgmma.sp.satfinite", "wgmma.mma_async", ("sp", "sync", "aligned", "m64n8k64", "satfinite", "s32", "s8", "u8"),
               "{%s0, %s1, %s2, %s3}, %rda, %rdb, %r, 0, %p", HOPPER),
    OrderProbe("mma.sp", "mma", ("sp::ordered_metadata", "sync", "aligned", "m16n8k32", "row", "col", "f32", "bf16", "bf16", "f32"),
               "{%f0, %f1, %f2, %f3}, {%x0, %x1, %x2, %x3}, {%y0, %y1, %y2, %y3}, {%f0, %f1, %f2, %f3}, %r, 0", HOPPER),
    OrderProbe("mma.sp.satfinite", "mma", ("sp", "sync", "aligned", "m16n8k64", "row", "col", "satfinite", "s32", "s8", "u8", "s32"),
               "{%s0, %s1, %s2, %s3}, {%x0, %x1, %x2, %x3}, {%y0, %y1, %y2, %y3}, {%s0, %s1, %s2, %s3}, %r, 0", HOPPER),
)


@dataclass(frozen=True)
class OperandProbe:
    """One operand of a form, `{}` in `template`, tried in each candidate spelling."""

    name: str
    template: str
    candidates: dict[str, str]
    archs: tuple[str, ...]


MMA = "tcgen05.mma.cta_group::1.kind::f16 "
MMA_WS = "tcgen05.mma.ws.cta_group::1.kind::f16 "
WGMMA = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
WGMMA_SP = "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 "
NUMBERS = {"hex": "0x08200490", "HEX": "0X08200490", "decimal": "136316048", "octal": "01010002220",
           "binary": "0b1000001000000000010010010000", "unsigned suffix": "0x08200490U", "negative": "-1",
           "32-bit register": "%ri", "64-bit register": "%rd", "16-bit register": "%h", "predicate": "%p"}
TMEM_ADDRESS = {"[reg]": "[%rt]", "[reg+imm]": "[%rt+16]", "[reg+hex]": "[%rt+0x10]", "[reg + imm] spaced": "[ %rt + 16 ]",
                "[reg+-imm]": "[%rt+-16]", "[reg-imm]": "[%rt-16]", "[imm]": "[16]", "[64-bit reg]": "[%rd]",
                "reg without brackets": "%rt"}
DESCRIPTOR = {"64-bit register": "%rda", "immediate": "0x4000404000010040", "32-bit register": "%ri"}
PREDICATE = {"predicate": "%p", "negated predicate": "!%p", "immediate 1": "1", "immediate 0": "0",
             "32-bit register": "%ri"}
SHARED_ADDRESS = {"[symbol]": "[{symbol}]", "[symbol+imm]": "[{symbol}+8]", "[32-bit reg]": "[%r1]",
                  "[64-bit reg]": "[%rd]", "[32-bit reg+imm]": "[%r1+8]", "[64-bit reg+imm]": "[%rd+8]", "[imm]": "[256]"}
OPERAND_PROBES = (
    OperandProbe("mma idesc", MMA + "[%rt], %rda, %rdb, {}, %p;", NUMBERS, BLACKWELL),
    OperandProbe("mma d-tmem", MMA + "{}, %rda, %rdb, %ri, %p;", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("mma a-tmem", MMA + "[%rt], {}, %rdb, %ri, %p;", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("mma sp-meta-tmem", "tcgen05.mma.sp.cta_group::1.kind::f16 [%rt], %rda, %rdb, {}, %ri, %p;",
                 TMEM_ADDRESS, BLACKWELL),
    OperandProbe("mma scale-A-tmem", "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale [%rt], %rda, %rdb, %ri, {}, [%rsb], %p;",
                 TMEM_ADDRESS, BLACKWELL),
    OperandProbe("mma a-desc", MMA + "[%rt], {}, %rdb, %ri, %p;", DESCRIPTOR, BLACKWELL),
    OperandProbe("mma b-desc", MMA + "[%rt], %rda, {}, %ri, %p;", DESCRIPTOR, BLACKWELL),
    OperandProbe("mma enable-input-d", MMA + "[%rt], %rda, %rdb, %ri, {};", PREDICATE, BLACKWELL),
    OperandProbe("mma disable-output-lane", MMA + "[%rt], %rda, %rdb, %ri, {}, %p;",
                 {"registers": "{%v0, %v1, %v2, %v3}", "registers and immediates": "{%v0, 0, %v2, 0xffffffff}",
                  "one register": "{0, 0, 0, %v3}", "immediates only": "{0, 0, 0, 0}",
                  "repeated register": "{%v0, %v0, %v0, %v0}"}, BLACKWELL),
    OperandProbe("mma scale-input-d", MMA + "[%rt], %rda, %rdb, %ri, %p, {};",
                 {"decimal": "3", "hex": "0x3", "octal": "03", "unsigned suffix": "3U", "32-bit register": "%r"}, BLACKWELL),
    OperandProbe("mma.ws zero-column-mask", MMA_WS + "[%rt], %rda, %rdb, %ri, %p, {};",
                 {"64-bit register": "%rdz", "immediate": "0x0203000f02010100", "small immediate": "3",
                  "32-bit register": "%r"}, BLACKWELL),
    OperandProbe("alloc dst", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 {}, 32;",
                 {k: v.format(symbol="slot") for k, v in SHARED_ADDRESS.items()}, BLACKWELL),
    OperandProbe("alloc dst, generic", "tcgen05.alloc.cta_group::1.sync.aligned.b32 {}, 32;",
                 {k: v.format(symbol="slot") for k, v in SHARED_ADDRESS.items()}, BLACKWELL),
    OperandProbe("alloc state space", "tcgen05.alloc.cta_group::1.sync.aligned{}.b32 [%r1], 32;",
                 {"none (generic)": "", ".shared::cta": ".shared::cta", ".shared::cluster": ".shared::cluster",
                  ".shared": ".shared"}, BLACKWELL),
    OperandProbe("alloc nCols", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], {};",
                 {"decimal": "64", "hex": "0x40", "32-bit register": "%r", "64-bit register": "%rd", "16-bit register": "%h"},
                 BLACKWELL),
    OperandProbe("dealloc taddr", "tcgen05.dealloc.cta_group::1.sync.aligned.b32 {}, 32;",
                 {"32-bit register": "%rt", "immediate": "0", "[reg]": "[%rt]", "64-bit register": "%rd"}, BLACKWELL),
    OperandProbe("dealloc nCols", "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %rt, {};",
                 {"decimal": "32", "32-bit register": "%r", "64-bit register": "%rd"}, BLACKWELL),
    OperandProbe("commit mbar", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 {};",
                 {k: v.format(symbol="bar") for k, v in SHARED_ADDRESS.items()}, BLACKWELL),
    OperandProbe("commit mbar, generic", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 {};",
                 {k: v.format(symbol="bar") for k, v in SHARED_ADDRESS.items()}, BLACKWELL),
    OperandProbe("commit state space", "tcgen05.commit.cta_group::1.mbarrier::arrive::one{}.b64 [%rd];",
                 {"none (generic)": "", ".shared::cluster": ".shared::cluster", ".shared::cta": ".shared::cta",
                  ".shared": ".shared"}, BLACKWELL),
    OperandProbe("commit ctaMask", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%rd], {};",
                 {"16-bit register": "%h", "immediate": "3", "hex": "0xffff", "32-bit register": "%r"}, BLACKWELL),
    OperandProbe("ld taddr", "tcgen05.ld.sync.aligned.32x32b.x2.b32 {{%v0, %v1}}, {};", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("ld destination", "tcgen05.ld.sync.aligned.32x32b.x2.b32 {}, [%rt];",
                 {"b32 registers": "{%v0, %v1}", "f32 registers": "{%f0, %f1}", "s32 registers": "{%s0, %s1}",
                  "with an immediate": "{%v0, 0}"}, BLACKWELL),
    OperandProbe("ld immHalfSplitoff", "tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {{%v0, %v1}}, [%rt], {};",
                 {"decimal": "16", "hex": "0x10", "32-bit register": "%r"}, BLACKWELL),
    OperandProbe("ld.red redval", "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {{%v0, %v1}}, {}, [%rt];",
                 {"b32 register": "%rred", "f32 register": "%f2", "immediate": "0"}, ("sm_103a",)),
    OperandProbe("st source", "tcgen05.st.sync.aligned.32x32b.x2.b32 [%rt], {};",
                 {"b32 registers": "{%v0, %v1}", "with an immediate": "{%v0, 0}", "immediates only": "{1, 0}",
                  "f32 registers": "{%f0, %f1}"}, BLACKWELL),
    OperandProbe("st taddr", "tcgen05.st.sync.aligned.32x32b.x2.b32 {}, {{%v0, %v1}};", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("cp taddr", "tcgen05.cp.cta_group::1.128x256b {}, %rds;", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("cp s-desc", "tcgen05.cp.cta_group::1.128x256b [%rt], {};", DESCRIPTOR, BLACKWELL),
    OperandProbe("shift taddr", "tcgen05.shift.cta_group::1.down {};", TMEM_ADDRESS, BLACKWELL),
    OperandProbe("guard", "{} tcgen05.mma.cta_group::1.kind::f16 [%rt], %rda, %rdb, %ri, %p;",
                 {"none": "", "@p": "@%q", "@!p": "@!%q"}, BLACKWELL),
    OperandProbe("guard, commit", "{} tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%rd];",
                 {"@p": "@%q", "@!p": "@!%q"}, BLACKWELL),
    OperandProbe("guard, st", "{} tcgen05.st.sync.aligned.32x32b.x2.b32 [%rt], {{%v0, %v1}};",
                 {"@p": "@%q", "@!p": "@!%q"}, BLACKWELL),
    OperandProbe("guard, cp", "{} tcgen05.cp.cta_group::1.128x256b [%rt], %rds;", {"@p": "@%q", "@!p": "@!%q"}, BLACKWELL),
    OperandProbe("wgmma a-desc", WGMMA + "{{%f0, %f1, %f2, %f3}}, {}, %rdb, %p, 1, 1, 0, 0;",
                 DESCRIPTOR, HOPPER),
    OperandProbe("wgmma b-desc", WGMMA + "{{%f0, %f1, %f2, %f3}}, %rda, {}, %p, 1, 1, 0, 0;",
                 DESCRIPTOR, HOPPER),
    OperandProbe("wgmma scale-d", WGMMA + "{{%f0, %f1, %f2, %f3}}, %rda, %rdb, {}, 1, 1, 0, 0;",
                 PREDICATE, HOPPER),
    OperandProbe("wgmma imm-scale-a", WGMMA + "{{%f0, %f1, %f2, %f3}}, %rda, %rdb, %p, {}, 1, 0, 0;",
                 {"1": "1", "-1": "-1", "hex": "0x1", "32-bit register": "%r"}, HOPPER),
    OperandProbe("wgmma imm-trans-b", WGMMA + "{{%f0, %f1, %f2, %f3}}, %rda, %rdb, %p, 1, 1, 0, {};",
                 {"0": "0", "hex": "0x1", "32-bit register": "%r"}, HOPPER),
    OperandProbe("wgmma A registers", WGMMA + "{{%f0, %f1, %f2, %f3}}, {}, %rdb, %p, 1, 1, 0;",
                 {"registers": "{%x0, %x1, %x2, %x3}", "with an immediate": "{%x0, %x1, %x2, 0}"}, HOPPER),
    OperandProbe("wgmma.sp metadata", WGMMA_SP + "{{%f0, %f1, %f2, %f3}}, %rda, %rdb, {}, 0, %p, 1, 1, 0, 0;",
                 {"32-bit register": "%r", "one-register vector": "{%r}", "immediate": "0x1234"}, HOPPER),
    OperandProbe("wgmma.sp selector", WGMMA_SP + "{{%f0, %f1, %f2, %f3}}, %rda, %rdb, %r, {}, %p, 1, 1, 0, 0;",
                 {"decimal": "1", "hex": "0x1", "32-bit register": "%r"}, HOPPER),
    OperandProbe("wgmma D", WGMMA + "{}, %rda, %rdb, %p, 1, 1, 0, 0;",
                 {"f32 registers": "{%f0, %f1, %f2, %f3}", "b32 registers": "{%v0, %v1, %v2, %v3}"}, HOPPER),
    OperandProbe("mma.sp metadata", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                 "{{%f0, %f1, %f2, %f3}}, {{%x0, %x1, %x2, %x3}}, {{%y0, %y1, %y2, %y3}}, {{%f0, %f1, %f2, %f3}}, {}, 0;",
                 {"32-bit register": "%r", "one-register vector": "{%r}", "immediate": "0x1234"}, HOPPER),
    *(OperandProbe(f"mma.sp metadata, {types}", f"mma.sp.sync.aligned.m16n8k{k}.row.col.{types} "
                   f"{{{{{d}}}}}, {{{{{a}}}}}, {{{{{b}}}}}, {{{{{d}}}}}, {{}}, 0;",
                   {"32-bit register": "%r", "one-register vector": "{%r}"}, (*HOPPER, *BLACKWELL))
      for k, types, d, a, b in (
          (32, "f32.f16.f16.f32", "%f0, %f1, %f2, %f3", "%x0, %x1, %x2, %x3", "%y0, %y1, %y2, %y3"),
          (64, "s32.s8.s8.s32", "%s0, %s1, %s2, %s3", "%x0, %x1, %x2, %x3", "%y0, %y1, %y2, %y3"),
          (64, "f32.e4m3.e5m2.f32", "%f0, %f1, %f2, %f3", "%x0, %x1, %x2, %x3", "%y0, %y1, %y2, %y3"),
          (64, "s32.s4.s4.s32", "%s0, %s1, %s2, %s3", "%x0, %x1", "%y0, %y1"))),
    OperandProbe("mma.sp selector", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                 "{{%f0, %f1, %f2, %f3}}, {{%x0, %x1, %x2, %x3}}, {{%y0, %y1, %y2, %y3}}, {{%f0, %f1, %f2, %f3}}, %r, {};",
                 {"decimal": "1", "hex": "0x1", "32-bit register": "%r"}, HOPPER),
    OperandProbe("mma.sp A registers", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                 "{{%f0, %f1, %f2, %f3}}, {}, {{%y0, %y1, %y2, %y3}}, {{%f0, %f1, %f2, %f3}}, %r, 0;",
                 {"registers": "{%x0, %x1, %x2, %x3}", "with an immediate": "{%x0, %x1, %x2, 0}"}, HOPPER),
    OperandProbe("mma.sp C", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                 "{{%f0, %f1, %f2, %f3}}, {{%x0, %x1, %x2, %x3}}, {{%y0, %y1, %y2, %y3}}, {}, %r, 0;",
                 {"registers": "{%f0, %f1, %f2, %f3}", "with an immediate": "{0, %f1, %f2, %f3}"}, HOPPER),
)


CRASHED = None  # the assembler died on the line (a signal), rather than accepting or rejecting it


def _assemble_here(lines: list[str], arch: str) -> list[bool]:
    bodies = [f".visible .entry k{k}()\n{{\n{DECLARATIONS}\n  {line}\n  ret;\n}}" for k, line in enumerate(lines)]
    return [r.ok for r in assemble_entries(bodies, arch, PREAMBLE)]


def assemble_lines(lines: list[str], arch: str) -> list[bool | None]:
    """Whether ptxas accepts each line, alone in an entry: True, False, or CRASHED when the
    assembler kills its process on it (each module is assembled in a child process; a module
    that crashes is split until the crashing lines stand alone)."""
    if not lines:
        return []
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        try:
            return pool.submit(_assemble_here, lines, arch).result()
        except BrokenProcessPool:
            pass
    if len(lines) == 1:
        return [CRASHED]
    half = len(lines) // 2
    return assemble_lines(lines[:half], arch) + assemble_lines(lines[half:], arch)


def labelled(order: tuple[str, ...]) -> list[str]:
    """The qualifiers of one order, a repeated one numbered by its occurrence in that order
    (f32#1 is whichever f32 comes first), so that orders that read the same label the same."""
    seen: dict[str, int] = {}
    out = []
    for q in order:
        seen[q] = seen.get(q, 0) + 1
        out.append(q if order.count(q) == 1 else f"{q}#{seen[q]}")
    return out


def orders_of(probe: OrderProbe, seed: int) -> list[tuple[str, ...]]:
    """Distinct orders of the qualifiers: all of them up to ALL_PERMUTATIONS_UP_TO qualifiers,
    else the syntax order, every adjacent swap and a seeded sample."""
    q = probe.qualifiers
    if len(q) <= ALL_PERMUTATIONS_UP_TO:
        return sorted(set(itertools.permutations(q)))
    rng = random.Random(f"{seed}:{probe.name}")
    orders = {q}
    for i in range(len(q) - 1):
        orders.add(q[:i] + (q[i + 1], q[i]) + q[i + 2:])
    while len(orders) < SAMPLED_ORDERS:
        orders.add(tuple(rng.sample(q, len(q))))
    return sorted(orders)


def distinct_orders(qualifiers: tuple[str, ...]) -> int:
    """n! over the factorial of each repeated qualifier's count: orders that read differently."""
    total = math.factorial(len(qualifiers))
    for q in set(qualifiers):
        total //= math.factorial(qualifiers.count(q))
    return total


def _before(order: list[str], a: str, b: str) -> bool:
    return order.index(a) < order.index(b)


def precedences(orders: list[tuple[str, ...]], accepted: list) -> list[tuple[str, str]]:
    """Labelled qualifiers (a, b) with a before b in every accepted order and b before a in
    some rejected one."""
    ok = [labelled(o) for o, a in zip(orders, accepted) if a]
    bad = [labelled(o) for o, a in zip(orders, accepted) if a is False]
    names = labelled(orders[0])
    return [(a, b) for a, b in itertools.permutations(names, 2)
            if ok and all(_before(o, a, b) for o in ok) and any(_before(o, b, a) for o in bad)]


def explained(orders: list[tuple[str, ...]], accepted: list, pairs: list[tuple[str, str]]) -> int:
    """How many orders the precedences alone classify as ptxas did."""
    return sum(all(_before(labelled(o), a, b) for a, b in pairs) == ok for o, ok in zip(orders, accepted))


def run(seed: int, progress: Callable[[str], None] = lambda message: None) -> dict:
    started = time.perf_counter()
    orders_out, operands_out = [], []
    for probe in ORDER_PROBES:
        orders = orders_of(probe, seed)
        lines = [probe.line(o) for o in orders]
        for arch in probe.archs:
            accepted = assemble_lines(lines, arch)
            pairs = precedences(orders, accepted)
            readable = [list(p) for p in pairs]
            orders_out.append({
                "form": probe.name, "arch": arch, "opcode": probe.opcode, "syntax_order": labelled(probe.qualifiers),
                "orders_tried": len(orders), "of_all": distinct_orders(probe.qualifiers),
                "accepted": sum(a is True for a in accepted), "crashed": [line for line, a in zip(lines, accepted) if a is CRASHED],
                "precedences": readable, "explained_by_precedences": explained(orders, accepted, pairs),
                "rejected_examples": [line for line, a in zip(lines, accepted) if a is False][:3],
            })
            progress(f"{probe.name} on {arch}: {sum(a is True for a in accepted)}/{len(orders)} orders accepted, "
                     f"precedences {readable}, explained {orders_out[-1]['explained_by_precedences']}")
    for probe in OPERAND_PROBES:
        names = list(probe.candidates)
        for arch in probe.archs:
            accepted = assemble_lines([probe.template.format(probe.candidates[n]) for n in names], arch)
            verdict = {n: "accepted" if a else "crashed" if a is CRASHED else "rejected" for n, a in zip(names, accepted)}
            operands_out.append({"operand": probe.name, "arch": arch, "template": probe.template,
                                 **{k: [n for n, v in verdict.items() if v == k] for k in ("accepted", "rejected", "crashed")},
                                 "spellings": probe.candidates})
            progress(f"{probe.name} on {arch}: {verdict}")
    return {"assembler": f"nvJitLink {assembler_version()}",
            "seed": seed, "orders": orders_out, "operands": operands_out,
            "seconds": round(time.perf_counter() - started, 1)}
