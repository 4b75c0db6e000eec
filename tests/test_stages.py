"""Where a run's time goes (`tcgen05_conformance.harness.stages`): the garbage collector's pauses are counted
while a `CollectorPauses` is open and not after, and `take` hands each second out once."""

from __future__ import annotations

import gc

from tcgen05_conformance.harness.stages import CollectorPauses


def _garbage_with_cycles(n: int = 200_000) -> None:
    """Objects only the cyclic collector can free: a full collection has them to walk."""
    for _ in range(n):
        a: list = []
        a.append(a)


def test_collections_are_counted_while_open_and_taken_once():
    with CollectorPauses() as pauses:
        _garbage_with_cycles()
        gc.collect()
        first = pauses.take()
        assert first > 0
        assert pauses.take() == 0.0  # taken already
    _garbage_with_cycles()
    gc.collect()  # closed: not counted
    assert pauses.take() == 0.0
    assert pauses._phase not in gc.callbacks
