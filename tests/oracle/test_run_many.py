"""Evaluating programs together (`tcgen05_conformance.oracles.execute.run_many`, the campaign's batched reference)
gives each program the state, or the exception, that running it alone gives: the model computes
every inner product on its own row, so batching may change the cost, never a result."""

from __future__ import annotations

import numpy as np

from tcgen05_conformance.harness.runner import generate_programs
from tcgen05_conformance.generators.programs import INPUTS, hopper_programs
from tcgen05_conformance.generators.sampling import draw_examples
from tcgen05_conformance.oracles.execute import run, run_many


def _alone(p, profile):
    try:
        return run(p, profile)
    except ValueError as e:  # UndefinedBehaviour and NotModelled are ValueErrors too
        return e


def test_run_many_equals_running_each_program_alone():
    programs = generate_programs(24, 2)  # tcgen05 MMAs of every kind
    programs += [p for inputs, seed in zip(INPUTS, (5, 6)) for p in draw_examples(hopper_programs(inputs=inputs), 30, seed)]
    for profile in ("sm_90a", None):
        together = run_many(programs, profile)
        kinds = set()
        for p, got in zip(programs, together):
            want = _alone(p, profile)
            assert type(got) is type(want), p.case_id
            if isinstance(want, Exception):
                assert str(got) == str(want)
                kinds.add(type(want).__name__)
            else:
                assert got.digest() == want.digest(), p.case_id
                assert (got.hopper_d is None) == (want.hopper_d is None)
                kinds.add("hopper" if want.hopper_d is not None else "tcgen05")
        assert {"hopper", "tcgen05", "NotModelled"} <= kinds, kinds


def test_a_batch_spans_formats_and_sizes():
    """Programs of many formats and shapes in one call: each D equals its own evaluation."""
    programs = draw_examples(hopper_programs(inputs="discriminating", forms="modelled"), 40, 9)
    together = run_many(programs, "sm_90a")
    assert len({(p.ops[0].atype, getattr(p.ops[0], "n", 8)) for p in programs}) > 10
    for p, got in zip(programs, together):
        assert np.array_equal(got.hopper_d, run(p, "sm_90a").hopper_d)
