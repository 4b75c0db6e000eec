"""`MatrixProduct.rows` gathers the operands of any set of inner products as the definition of D
says: row i of A, row j of B (for a structured-sparse A, B's elements at row i's logical
columns) and C[i, j]; checked against an element-by-element loop, for dense and sparse products,
all inner products and scattered subsets."""

from __future__ import annotations

import numpy as np
import pytest

from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct


def _product(rng: np.random.Generator, m: int, n: int, k: int, sparse: bool) -> MatrixProduct:
    b_k = 2 * k if sparse else k
    columns = np.sort(rng.choice(b_k, (m, k)), axis=1).astype(np.uint8) if sparse else None
    return MatrixProduct(rng.integers(0, 1 << 16, (m, k), dtype=np.uint32), rng.integers(0, 1 << 16, (n, b_k), dtype=np.uint32),
                         rng.integers(0, 1 << 32, (m, n), dtype=np.uint32), "f16", "f16", "f32", "sm_90a",
                         columns=columns)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("subset", ["all", "scattered"])
def test_rows_gather_the_definitions_operands(sparse: bool, subset: str) -> None:
    rng = np.random.default_rng(7 + sparse)
    p = _product(rng, 16, 24, 8, sparse)
    chosen = np.ones(p.c.shape, bool) if subset == "all" else rng.random(p.c.shape) < 0.3
    rows, cols = np.nonzero(chosen)
    a, b, c = p.rows(rows, cols)
    for r, (i, j) in enumerate(zip(rows.tolist(), cols.tolist())):
        assert a[r].tolist() == p.a[i].tolist()
        b_columns = p.columns[i] if sparse else range(p.b.shape[1])
        assert b[r].tolist() == [int(p.b[j, col]) for col in b_columns]
        assert int(c[r]) == int(p.c[i, j])
