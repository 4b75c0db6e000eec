"""The project's own fuzzing of its outside inputs (`tcgen05-conformance fuzz`): the readers of
program, profile and recording files (`inputs`), and the `sim:` protocol against faulty simulators
(`simulator`, acted out by `simulator_agent.sh`).
"""

from __future__ import annotations

from tcgen05_conformance.fuzz.inputs import count_outcomes

__all__ = ["count_outcomes"]
