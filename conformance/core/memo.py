"""Bounded caches for pure functions of hashable arguments that are asked for again and again
with the same arguments: a campaign draws every instruction with several operand data sets
(`tcgen05_conformance.generators.programs.hopper_data_sets`), and the generator, the oracle and the packer each
recompute the instruction's layouts (decoded descriptors, element addresses, register
fragments) for every one of them.

`memo(maxsize)` caches a function (`functools.lru_cache`) and registers the cache; `clear()`
empties them all. The values are computed from functions and tables that a mutant of the oracle
(`tcgen05_conformance.mutation.mutants`) replaces while it is applied, so it clears them on entry and exit.
Arrays a cached function returns are read-only (`frozen`): a caller writing into one would change
what every later caller is given.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable)

_CACHES: list = []


def memo(maxsize: int) -> Callable[[F], F]:
    """Cache a pure function of hashable arguments, at most `maxsize` results (least recently
    used first out), in a cache `clear()` empties. Arguments of different types are cached apart
    (`typed`: a numpy integer gives what it gave before, not what an equal int did)."""
    def decorate(function: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize, typed=True)(function)
        _CACHES.append(cached)
        return cached
    return decorate


def clear() -> None:
    """Empty every cache made by `memo`."""
    for cached in _CACHES:
        cached.cache_clear()


def frozen(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only (what a cached function may hand to every caller)."""
    array.setflags(write=False)
    return array
