"""Operations the program loader accepts field by field but whose combination the ISA defines no
behaviour for: the oracle refuses each as undefined behaviour, naming why (issue 15: fuzzing the
loader reached a KeyError or TypeError in the oracle for each of these)."""

import pytest

from tcgen05_conformance.core.encoding import idesc
from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Cp, Tcgen05Ld, Tcgen05Mma, Tcgen05St, WgmmaMma
from tcgen05_conformance.core.program import Program, SmemSegment
from tcgen05_conformance.harness.backends.oracle import OracleBackend
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.oracles.state import UndefinedBehaviour

F16_M128_N64 = idesc.encode("f16", idesc.InstrDescriptor(m=128, n=64, atype="f16", btype="f16"))
F16_M256_N64 = idesc.encode("f16", idesc.InstrDescriptor(m=256, n=64, atype="f16", btype="f16"))
ATYPE_BITS = 7  # Table 42: atype in bits 7-9


@pytest.mark.parametrize("program, reason", [
    # 9.7.16.9.2: .128x256b takes no .multicast, .32x128b takes .warpx4.
    (Program("sm_100a", (Tcgen05Cp("128x256b", multicast="warpx4"),)), "tcgen05.cp.128x256b with .multicast::warpx4"),
    (Program("sm_100a", (Tcgen05Cp("32x128b"),)), "tcgen05.cp.32x128b with no .multicast"),
    # .16x32bx2 takes immHalfSplitoff (9.7.16.8.3-4).
    (Program("sm_100a", (Tcgen05Ld("16x32bx2", 1),)), "tcgen05.ld.16x32bx2 without its immHalfSplitoff"),
    (Program("sm_100a", (Tcgen05St("16x32bx2", 1),)), "tcgen05.st.16x32bx2 without its immHalfSplitoff"),
    # Table 45's mask breakup covers M = 32, 64, 128 (the .ws shapes); M = 256 has none.
    (Program("sm_100a", (Tcgen05Mma("f16", cta_group=2, idesc=F16_M256_N64, zero_column_mask=1 << 39),), ctas=2),
     "a zero-column mask with M = 256"),
    # Table 40: swizzle codes 3, 5 and 7 (bits 61-63) are invalid.
    (Program("sm_100a", (Tcgen05Mma("f16", idesc=F16_M128_N64, b_desc=7 << 61),)), "swizzle code 7 is invalid"),
    # Table 42: .kind::f16 atype codes are 0 (f16) and 1 (bf16).
    (Program("sm_100a", (Tcgen05Mma("f16", idesc=F16_M128_N64 | 5 << ATYPE_BITS),)), "atype code 5, which name no type"),
])
def test_an_operation_with_no_defined_behaviour_is_refused_naming_why(program, reason):
    with pytest.raises(UndefinedBehaviour, match=reason):
        run(program)
    assert OracleBackend().observe_one(program).error.startswith("undefined behaviour: ")  # what run and replay report


@pytest.mark.parametrize("op, reason", [
    # 9.7.15.5.2: f16 inputs accumulate into f16 or f32, never s32; f16 has K = 16 (32 sparse).
    (WgmmaMma(n=64, k=16, dtype="s32", atype="f16", btype="f16"), r"\[wgmma.types\] .s32.f16.f16"),
    (WgmmaMma(n=64, k=64, dtype="f32", atype="f16", btype="f16"), r"\[wgmma.shape\] m64n64k64 with .f16"),
    # 9.7.14.6.3: mma.sp with f16 inputs has K = 16 or 32; its D and C types are equal.
    (MmaSp(k=64, dtype="f32", atype="f16", btype="f16", ctype="f32"), r"\[mma-sp.shape\] m16n8k64 with .f16"),
    (MmaSp(k=32, dtype="s32", atype="f16", btype="f16", ctype="s32"), r"\[mma-sp.types\] .s32.f16.f16.s32"),
])
def test_a_hopper_mma_of_types_or_shape_the_isa_does_not_define_is_refused(op, reason):
    with pytest.raises(UndefinedBehaviour, match=f"{op.OP} has no defined behaviour: {reason}"):
        run(Program("sm_90a", (op,)))


def test_float_inputs_into_an_s32_accumulator_are_an_error_not_a_key_error():
    # Table 42 dtype code 2 (s32) under .kind::f16: the numeric model has no such accumulation.
    d = idesc.encode("f16", idesc.InstrDescriptor(m=128, n=64, atype="f16", btype="f16", dtype="s32"))
    smem = (SmemSegment(0, bytes(227 * 1024)),)
    p = Program("sm_100a", (Tcgen05Mma("f16", idesc=d, a_desc=1 << 46, b_desc=1 << 46 | 64),), smem=smem)
    assert OracleBackend().observe_one(p).error == "floating-point inputs accumulate into f32 or f16, not s32"
