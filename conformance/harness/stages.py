"""Where the time of a run goes: wall and CPU seconds per named stage, added up over the calls and
the processes of a run. Two clock reads a stage, so the timers stay on."""

from __future__ import annotations

import contextlib
import gc
import time
from collections import Counter
from typing import Iterator


class Stages:
    """Seconds per stage: `wall` (time.perf_counter) and `cpu` (this process's CPU time,
    time.process_time), each a Counter by stage name."""

    def __init__(self) -> None:
        self.wall: Counter = Counter()
        self.cpu: Counter = Counter()

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.process_time() - cpu

    def add(self, name: str, wall: float, cpu: float = 0.0) -> None:
        self.wall[name] += wall
        self.cpu[name] += cpu

    def merge(self, other: "Stages") -> None:
        self.wall.update(other.wall)
        self.cpu.update(other.cpu)

    def as_dict(self, programs: int) -> dict[str, dict[str, float]]:
        """Per stage, in first-seen order: seconds, CPU seconds and milliseconds of each per program."""
        per = max(programs, 1)
        return {name: {"seconds": round(self.wall[name], 3), "cpu_seconds": round(self.cpu[name], 3),
                       "ms_per_program": round(1e3 * self.wall[name] / per, 4),
                       "cpu_ms_per_program": round(1e3 * self.cpu[name] / per, 4)}
                for name in self.wall}


class CollectorPauses:
    """The seconds this process spends in the cyclic garbage collector's collections, counted through
    `gc.callbacks` from its making until `close` (or the end of its `with`) and handed out by `take`.
    A collection stops the process wherever it is, so these seconds lie within its other stages' too."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.started: float | None = None
        gc.callbacks.append(self._phase)

    def _phase(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        elif self.started is not None:
            self.seconds += time.perf_counter() - self.started
            self.started = None

    def take(self) -> float:
        """The seconds counted since the last take."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds

    def close(self) -> None:
        gc.callbacks.remove(self._phase)

    def __enter__(self) -> "CollectorPauses":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
