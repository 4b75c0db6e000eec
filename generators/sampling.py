"""Drawing a reproducible list of examples from a strategy outside a test: the seed alone
determines the list, so a run is replayable from its printed seed.

Hypothesis tries the simplest example (every choice at its minimum) first in each `@given`
run, whatever the seed; that draw is skipped (unless the strategy has no other), so every
example depends on the seed.

Hypothesis (6.131 on) also mixes into its draws constants read from the source of every local
module imported so far; `seed_only_draws` turns that off, so that a seed draws the same examples
whatever the command imported before."""

from __future__ import annotations

import contextlib
from typing import Callable, Hashable, Iterator, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

T = TypeVar("T")


def draw_examples(strategy: st.SearchStrategy[T], count: int, seed: int, distinct: Callable[[T], Hashable] | None = None,
                  taken: set | None = None, on_example: Callable[[int], None] | None = None) -> list[T]:
    """`count` examples of `strategy`, the same list for the same seed. With `distinct`, no two
    examples share a key (`distinct(example)`), nor any key of `taken` (the keys of the examples
    are added to it): Hypothesis draws a value again now and then, and each such draw is passed
    over and replaced by a later one (the examples kept are the first ones drawn with a new key, in
    order, so the list still follows from the seed alone). `on_example(n)` after the n-th."""
    examples: list[T] = []
    keys = set() if taken is None else taken
    round_ = 0

    def keep(value: T) -> None:
        if distinct is not None:
            key = distinct(value)
            if key in keys:
                return
            keys.add(key)
        examples.append(value)
        if on_example:
            on_example(len(examples))

    while len(examples) < count:
        drawn: list[T] = []

        @hypothesis_seed(seed * 1_000_003 + round_)
        @settings(
            max_examples=count - len(examples) + 1, database=None, deadline=None,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(value: T) -> None:
            drawn.append(value)
            if len(drawn) > 1 and len(examples) < count:
                keep(value)

        before = len(examples)
        collect()
        if len(drawn) == 1:  # the simplest example is the only one
            keep(drawn[0])
        round_ += 1
        if len(examples) == before and round_ > 10:
            raise RuntimeError(f"the strategy yields no more{' distinct' if distinct else ''} examples after {before}")
    return examples


@contextlib.contextmanager
def seed_only_draws() -> Iterator[None]:
    """Hypothesis (6.131 on) mixes into its draws constants read from the source of every local
    module imported so far (`providers._get_local_constants`, a private hook), so one seed gave
    other programs to `run` and to `export`, which import different modules before drawing. The
    hook is pinned to no constants while programs are drawn; a Hypothesis without it is left as is."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    if original is None:
        yield
        return
    none = Constants()
    providers._get_local_constants = lambda: none
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()
