"""ptxas's verdict wherever lint gives one (issue 30, item 1): operands checked against their
declarations (kind, width, type), undeclared names, guards, vector shapes and element types,
required and unknown qualifiers, immediate ranges. Where lint cannot vouch for an instruction
it says `unparsed` with the reason, never `legal`. Each line below was put to ptxas (nvJitLink
13.5); the ptxas message is quoted beside it, and the assembler-backed test asks ptxas again."""

from __future__ import annotations

import random

import pytest

from tcgen05_conformance.core.ptx.render import REGISTER_DECLARATIONS
from tcgen05_conformance.lint.hostile_agreement import assemble_in_children, lint_verdict, passed, run
from tcgen05_conformance.lint.mutations import CLASSES, mutate
from tests.conftest import needs_assembler

MMA = "tcgen05.mma.cta_group::1.kind::f16 [%r_d], %rd_adesc, %rd_bdesc, %r_idesc, %p_en;"
WGMMA = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%fc0, %fc1, %fc2, %fc3}, %rd_adesc, %rd_bdesc, %p_en, 1, 1, 0, 0;"
LD = "tcgen05.ld.sync.aligned.32x32b.x2.b32 {%v0, %v1}, [%r_t];"

# (target, line, why lint may not call it legal: ptxas's message)
REJECTED = [
    ("sm_100a", MMA.replace("%rd_adesc", "%r_t"), "Arguments mismatch: a descriptor in a 32-bit register"),
    ("sm_100a", MMA.replace("[%r_d]", "[%rd_adesc]"), "Illegal to use symbol of type .b64 as address operand"),
    ("sm_100a", MMA.replace("[%r_d]", "[%fc0]"), "Use a 32-bit integer or bit register only"),
    ("sm_100a", MMA.replace("%r_idesc", "%r_nowhere"), "Unknown symbol '%r_nowhere'"),
    ("sm_100a", MMA.replace("%p_en", "%h_mask"), "Arguments mismatch: enable-input-d is a predicate"),
    ("sm_100a", "@%r_d " + MMA, "Predicate expression expected"),
    ("sm_100a", "@%undeclared " + MMA, "Predicate expression expected; Unknown symbol"),
    ("sm_100a", "tcgen05.ld.sync.aligned.16x256b.x2.b32 {%v0, %v1, %v0, %v3, %v4, %v5, %v6, %v7}, [%r_t];",
     "intrinsic PREAD offset mismatch (fatal)"),
    ("sm_100a", LD.replace("{%v0, %v1}", "{%v0, 0}"), "Result register required"),
    ("sm_100a", LD.replace(".sync", ""), ".sync modifier required"),
    ("sm_100a", LD.replace(".aligned", ""), ".aligned modifier required"),
    ("sm_100a", "tcgen05.dealloc.cta_group::1.sync.aligned %r_t, 32;", "Unexpected instruction types (no .b32)"),
    ("sm_100a", "tcgen05.dealloc.cta_group::1.sync.aligned.b12 %r_t, 32;", "Unknown modifier '.b12'"),
    ("sm_100a", LD.replace(".b32", ".pack::17b.b32"), "Unknown modifier '.pack::17b'"),
    ("sm_100a", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [mbar], "
                "0x1ffff;", "value '131071' out of range"),
    ("sm_100a", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [mbar], "
                "%r_t;", "must be 16-bit size"),
    ("sm_100a", "tcgen05.fence::before_thread_sync;;", "Parsing error near ';'"),
    ("sm_100a", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [mbar], -1;",
     "out of range, expected to be in range [0..65535]"),
    ("sm_103a", "tcgen05.ld.red.sync.aligned.32x32b.x2.max.s32 {%v0, %v1}, %v0, [%r_t];",
     "intrinsic PREAD offset mismatch (fatal): redval among the destinations"),
    ("sm_90a", WGMMA.replace("{%fc0, %fc1, %fc2, %fc3}", "{%fc0, %fc1, %fc2}"), "Argument vector size mismatch"),
    ("sm_90a", WGMMA.replace("{%fc0, %fc1, %fc2, %fc3}", "{%fc0, %fc1, %sc2, %fc3}"),
     "Vector with elements of different types are not allowed"),
    ("sm_90a", WGMMA.replace(", 0, 0;", ";"), "Arguments mismatch: .f16 needs its imm-trans operands"),
    ("sm_90a", WGMMA.replace("%p_en", "2"), "Arguments mismatch: scale-d is 0 or 1"),
    ("sm_90a", "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%fc0, %fc1, %fc2}, "
               "{%ra0, %ra1}, {%rb0, %rb1}, {%fc0, %fc1, %fc2, %fc3}, %r_e, 0;", "Illegal vector size: 3"),
]

# Spellings ptxas accepts, which lint once named assembler rules for (issue 30)
ACCEPTED = [
    ("sm_90a", WGMMA.replace("%p_en, 1, 1", "%p_en, 0xffffffffffffffff, 1")),  # imm-scale-a: ptxas reads a 64-bit -1
    ("sm_100a", MMA.replace("%p_en;", "%p_en, 3;")),  # scale-input-d, not a zero-column mask
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::f16 [%r_d], %rd_adesc, %rd_bdesc, %r_idesc, %p_en, %rd_zc;"),
]


def _entry(line: str, k: int = 0) -> str:
    return f".visible .entry q{k}()\n{{\n{REGISTER_DECLARATIONS}\n  {line}\n  ret;\n}}"


@pytest.mark.parametrize("target, line, ptxas_says", REJECTED)
def test_what_ptxas_rejects_is_never_legal(target, line, ptxas_says):
    record = lint_verdict(_entry(line), target)
    assert record["verdict"] in ("unparsed", "illegal", "skipped"), (record, ptxas_says)
    if record["verdict"] != "illegal":
        assert record["why"]


@pytest.mark.parametrize("target, line", ACCEPTED)
def test_what_ptxas_accepts_gets_no_assembler_rule(target, line):
    record = lint_verdict(_entry(line), target)
    assert record["verdict"] == "legal", record


def test_a_dense_mma_is_skipped_not_judged():
    line = ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%fc0, %fc1, %fc2, %fc3}, {%ra0, %ra1, %ra2, %ra3}, "
            "{%rb0, %rb1}, {%fc0, %fc1, %fc2, %fc3};")
    assert lint_verdict(_entry(line), "sm_90a")["verdict"] == "skipped"


@needs_assembler
def test_ptxas_agrees_with_the_tables_above():
    """The facts above, asked of ptxas again (each module in a child process)."""
    for target in ("sm_100a", "sm_103a", "sm_90a"):
        rejected = [line for t, line, _ in REJECTED if t == target]
        accepted = [line for t, line in ACCEPTED if t == target]
        outcomes = assemble_in_children([_entry(line, k) for k, line in enumerate(rejected + accepted)], target)
        assert [ok is True for ok, _ in outcomes] == [False] * len(rejected) + [True] * len(accepted)


def test_every_token_class_mutates_one_token():
    rng = random.Random(0)
    for token_class in CLASSES:
        mutants = [(line, m) for line in (MMA, WGMMA, LD) for m in (mutate(line, token_class, rng) for _ in range(20)) if m]
        assert mutants, token_class
        assert all(m.line != line and m.token_class == token_class for line, m in mutants)


@needs_assembler
def test_a_small_hostile_corpus_agrees_with_ptxas():
    report = run("sm_100a", 140, 7)
    assert report["counts"]["mutants"] == 140 and passed(report), report["wrong"][:3]
