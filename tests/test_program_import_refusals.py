"""`import` writes only programs `replay` accepts (issue 32, item 6): a sequence of more operations
than a program may issue (MAX_OPS, the program loader's bound) and a sparse MMA whose metadata
the kernel would have written first (zero metadata is undefined, PTX ISA 9.7.16.10.8) are refused
on one line with the reason, where import used to write programs replay refused or ran as
undefined."""

import functools

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa.mma import SHAPE_CLASSES
from tcgen05_conformance.core.program import MAX_OPS
from tcgen05_conformance.device.ptx.kernels import instruction_module
from tcgen05_conformance.harness.runner import generate_programs


@functools.lru_cache(maxsize=None)
def _one_mma(sparse: bool):
    """The first one-MMA program of run's (seed 0), dense or sparse (one per Table 39 class come first)."""
    return next(p for p in generate_programs(len(SHAPE_CLASSES), 0)
                if len(p.ops) == 1 and isinstance(p.ops[0], Tcgen05Mma) and p.ops[0].sparse == sparse)


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if "deprecated" not in line]


def test_a_sequence_longer_than_a_program_is_refused_with_the_reason(tmp_path, capsys):
    module = instruction_module(_one_mma(sparse=False))
    mma = next(line for line in module.splitlines() if line.strip().startswith("tcgen05.mma"))
    path = tmp_path / "long.ptx"
    path.write_text(module.replace(mma, "\n".join([mma] * (MAX_OPS + 1))))
    out = tmp_path / "long.json"
    assert main(["import", str(path), "--out", str(out)]) == 2
    [err] = _error_lines(capsys)
    assert f"{MAX_OPS + 1} operations to run; a program issues at most {MAX_OPS}" in err and not out.exists()


def test_a_sparse_mma_undefined_as_imported_is_refused_with_the_reason(tmp_path, capsys):
    path = tmp_path / "sparse.ptx"
    path.write_text(instruction_module(_one_mma(sparse=True)))
    out = tmp_path / "sparse.json"
    assert main(["import", str(path), "--out", str(out)]) == 2
    [err] = _error_lines(capsys)
    assert "undefined as imported" in err and "sparsity metadata 0b0000" in err and not out.exists()


def test_a_dense_mma_is_still_imported_and_replays_on_the_oracle(tmp_path, capsys):
    path = tmp_path / "dense.ptx"
    path.write_text(instruction_module(_one_mma(sparse=False)))
    out = tmp_path / "dense.json"
    assert main(["import", str(path), "--out", str(out)]) == 0
    assert main(["replay", str(out), "--backend", "oracle"]) == 0
