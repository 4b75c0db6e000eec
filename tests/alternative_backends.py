"""Backends that implement an alternative reading of one ledger assumption, for the probe command's
tests, loaded as `tests.alternative_backends:NAME`: each is the oracle except where its reading
differs, implemented here on its own terms (not through probes/readings.py)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from tcgen05_conformance.core.encoding import zcmask as zcmask_codec
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import Observation, observe_each
from tcgen05_conformance.harness.backends.oracle import OracleBackend

NEGATIVE_ZERO = 0x80000000


class _Variant(OracleBackend):
    def observe(self, programs: Sequence[Program], progress=None) -> list[Observation]:
        return observe_each(self.variant, programs, progress)

    def variant(self, p: Program) -> Observation:
        return self.observe_one(p)


class ZcmaskFieldReading(_Variant):
    """Table 45's field descriptions: the skip span counts the columns that use B and the use span the
    zeroed ones (the project follows the worked examples, which say the opposite)."""

    name = "zcmask-fields"

    def variant(self, p: Program) -> Observation:
        def swapped(op):
            if not isinstance(op, Tcgen05Mma) or not op.ws or not op.zero_column_mask:
                return op
            z = zcmask_codec.decode(op.zero_column_mask)
            return dataclasses.replace(op, zero_column_mask=zcmask_codec.encode(
                dataclasses.replace(z, skip_span=z.use_span, use_span=z.skip_span)))
        o = self.observe_one(dataclasses.replace(p, ops=tuple(swapped(op) for op in p.ops)))
        return dataclasses.replace(o, case_id=p.case_id)


class PositiveZeroStart(_Variant):
    """An MMA without accumulator starts its sum from +0: a D word of -0 written by such an MMA is +0."""

    name = "plus-zero"

    def variant(self, p: Program) -> Observation:
        o = self.observe_one(p)
        if o.state is not None and any(isinstance(op, Tcgen05Mma) and not op.enable_input_d for op in p.ops):
            o.state.tmem[o.state.tmem == NEGATIVE_ZERO] = 0
        return o


class FaultOnIllegal(_Variant):
    """A device that faults on every program the legality model refuses."""

    name = "fault-on-illegal"

    def variant(self, p: Program) -> Observation:
        if any(check(op, p.target) for op in p.ops):
            return Observation(p.case_id, error="CUDA error: an illegal instruction was encountered")
        return self.observe_one(p)
