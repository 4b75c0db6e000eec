"""Numeric profiles measured, fitted and inferred: inner products through a vector source (silicon,
the model, a simulator), diffed bit for bit against the datapath model of `tcgen05_conformance.oracles.numerics`
(`tcgen05-conformance numerics ...`).

`measure` is the inner-product harness shared by Hopper and tcgen05, `gpu_checker` its GPU checker;
`infer` reads a datapath off a vector source (`sources`), `proof` is its silicon proof; `fit` sweeps
one parameter at a time; `catch_rates` measures the discriminating vector families.
`infer`'s parts: `hypotheses`, `directed_vectors`, `feature_tests`, `chosen_datapath`, `block_scaled`, `widening`, `recorded`, `agree`, `backends`.
"""

from __future__ import annotations

from tcgen05_conformance.numerics.measure import Combination
from tcgen05_conformance.numerics.infer import infer_profile, agreement
from tcgen05_conformance.numerics.sources import VectorSource, ModelSource, SimulatorSource

__all__ = ["Combination", "ModelSource", "SimulatorSource", "VectorSource", "agreement", "infer_profile"]
