"""`import`: a straight-line tcgen05 sequence in a PTX file, every operand a constant, as a
program JSON that `replay` runs.

The kernel (`tcgen05_conformance.device.ptx.kernels.tcgen05_kernel`) allocates Tensor Memory, fences, commits and
waits itself, so those instructions (alloc, dealloc, relinquish_alloc_permit, fence, wait,
commit) are checked and left out; the program keeps tcgen05.mma, .cp, .shift, .ld and .st in
order. Its TMEM columns are the alloc's nCols (512 without one); TMEM addresses are taken as
relative to the allocation (a constant address in a kernel is one an allocation returning
column 0 gives); Tensor Memory and all of shared memory start zeroed (the oracle refuses to
read shared memory a program does not initialise). A sequence longer than a program may be
(`MAX_OPS`), or undefined as imported (a sparse MMA whose metadata the kernel would have written
first), is refused with the reason: `import` writes only programs `replay` accepts.
"""

from __future__ import annotations

import re

from tcgen05_conformance.core.instructions import (
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Dealloc,
    Tcgen05Fence,
    Tcgen05RelinquishAllocPermit,
    Tcgen05Wait,
    family,
)
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import check, undefined_behaviour
from tcgen05_conformance.core.program import MAX_OPS, SMEM_BYTES, Program, SmemSegment
from tcgen05_conformance.core.ptx.parse import read_ptx, statements
from tcgen05_conformance.lint.verdicts import module_target

KERNEL_MANAGED = (Tcgen05Alloc, Tcgen05Dealloc, Tcgen05RelinquishAllocPermit, Tcgen05Fence, Tcgen05Wait, Tcgen05Commit)


class PtxImportError(ValueError):
    """PTX that is not a straight-line tcgen05 sequence of constants: the message says where and why."""


def import_ptx(text: str, name: str, arch: str | None = None, label: str | None = None) -> Program:
    """The program of a PTX module holding one straight-line tcgen05 sequence."""
    target = arch or module_target(text)
    if target not in TARGETS:
        raise PtxImportError(f"{name}: no .target the model knows ({', '.join(TARGETS)}); give --arch")
    branches = [s for s in statements(text) if s.kind == "label" or re.match(r"(@!?\S+\s+)?bra\b", s.text)]
    if branches:
        raise PtxImportError(f"{name}:{branches[0].line}: {branches[0].text!r}: not a straight-line sequence")
    parsed = read_ptx(text)
    if not parsed:
        raise PtxImportError(f"{name}: no tcgen05 instruction")
    ops, columns = [], 512
    for p in parsed:
        where = f"{name}:{p.line}"
        if p.instruction is None:
            raise PtxImportError(f"{where}: not understood: {p.problem}")
        if family(p.instruction) != "tcgen05":
            raise PtxImportError(f"{where}: {p.instruction.OP}: import reads tcgen05 sequences")
        if p.unknown:
            raise PtxImportError(f"{where}: {', '.join(sorted(p.unknown))} not constant in the text")
        if p.guard is not None and p.guard_value is not True:
            raise PtxImportError(f"{where}: guarded by {p.guard}, not a constant true predicate")
        violations = check(p.instruction, target)
        if violations:
            raise PtxImportError(f"{where}: illegal on {target}: {violations[0]}")
        if isinstance(p.instruction, Tcgen05Alloc):
            columns = p.instruction.columns
        if not isinstance(p.instruction, KERNEL_MANAGED):
            ops.append(p.instruction)
    if not ops:
        raise PtxImportError(f"{name}: no tcgen05.mma, .cp, .shift, .ld or .st to run")
    if len(ops) > MAX_OPS:
        raise PtxImportError(f"{name}: {len(ops)} operations to run; a program issues at most {MAX_OPS}, and Tensor Memory "
                             "does not carry from one program to the next, so the sequence cannot be split: import a "
                             "shorter one")
    ctas = max(getattr(op, "cta_group", 1) for op in ops)
    zeros = bytes(SMEM_BYTES)
    program = Program(target=target, ops=tuple(ops), ctas=ctas, tmem_columns=columns,
                      smem=tuple(SmemSegment(0, zeros, cta) for cta in range(ctas)),
                      label=label if label is not None else f"imported from {name}")
    _refuse_undefined(program, name)
    return program


def _refuse_undefined(program: Program, name: str) -> None:
    """PtxImportError when the program, as imported, is undefined (a sparse MMA reading the
    zeroed Tensor Memory as its metadata, say): `replay` would refuse it, and the kernel's own
    initialisation, which would make it defined, is not in the sequence's text."""
    from tcgen05_conformance.core.state import NotModelled, UndefinedBehaviour
    from tcgen05_conformance.oracles.execute import run

    found = undefined_behaviour(program)
    why = str(found[0]) if found else None
    if why is None:
        try:
            run(program)
        except UndefinedBehaviour as e:
            why = str(e)
        except NotModelled:
            return
    if why is not None:
        raise PtxImportError(f"{name}: undefined as imported ({why}); Tensor Memory and shared memory start zeroed here, "
                             "and what the kernel writes into them before the sequence is not in its text")
