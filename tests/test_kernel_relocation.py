"""Program descriptors address the program's shared-memory image; the kernels relocate them to
the image's shared address (`smem_image` need not start at 0: static shared variables and the
reserved shared memory come first), start address and absolute LBO alike."""

from __future__ import annotations

import re

from tcgen05_conformance.core.encoding import sdesc
from tcgen05_conformance.core.program import load
from tcgen05_conformance.harness.runner import generate_programs
from tcgen05_conformance.device.ptx.kernels import ISSUED_OPS, hopper_kernel, tcgen05_kernel
from tcgen05_conformance.generators.programs import hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples


def _descriptor_moves(text: str) -> list[tuple[str, list[str]]]:
    lines = [line.strip() for line in text.splitlines()]
    return [(m.group(1), lines[k + 1:k + 3]) for k, line in enumerate(lines)
            if (m := re.match(r"mov\.b64 (%rd_[abs]desc), ([^;]+);", line))]  # any integer notation


def test_every_tcgen05_descriptor_is_relocated():
    # a run draws one program of each family first, then the Table 39 classes: the programs this kernel issues
    programs = [p for p in generate_programs(40, 4) if all(isinstance(op, ISSUED_OPS) for op in p.ops)]
    moves = [move for p in programs for move in _descriptor_moves(tcgen05_kernel(p))]
    assert len(moves) >= 30
    for reg, following in moves:
        assert following[0] == f"add.u64 {reg}, {reg}, %rd_smem4;", following


def test_an_absolute_lbo_is_relocated_too():
    p = load("probes/A-LBO-ABSOLUTE-SPLIT.json")
    text = tcgen05_kernel(p)
    absolute = [reg for reg, following in _descriptor_moves(text) if f"add.u64 {reg}, {reg}, %rd_smem4_lbo;" in following]
    op = p.ops[0]
    expected = [reg for reg, word in (("%rd_adesc", op.a_desc), ("%rd_bdesc", op.b_desc)) if sdesc.decode(word).lbo_absolute]
    assert expected and absolute == expected


def test_hopper_kernels_relocate_their_runtime_descriptors():
    text = hopper_kernel(draw_examples(hopper_programs(forms="modelled"), 1, 0)[0])
    assert "add.u64 %rd_adesc, %rd_adesc, %rd_off;" in text and "add.u64 %rd_bdesc, %rd_bdesc, %rd_off;" in text
    assert text.index("shr.u32 %r_off, %r_smem, 4;") < text.index("add.u64 %rd_adesc, %rd_adesc, %rd_off;")
