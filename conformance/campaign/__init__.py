"""Silicon campaigns: large differential runs of Hopper programs on every sm_90 GPU of a host, the
work spread over its cores (`tcgen05-conformance campaign`, `cache fill`).

`run` drives a campaign (`campaign`; its docstring says how one runs), from `settings` (the settings and
chunk plan), `producer` (chunks drawn, prepared and spooled), `launchers` (what runs the launches), `worker`
(the GPU worker process), `main_process` (`Run`: hands chunks to the workers, restarts them) and `report`;
`judging` holds its calls into the judge; `checker` computes the expected D with the integer checker;
`stream` draws the operand data sets on the GPU; `kernels` fills the kernel cache.
"""

from __future__ import annotations

from tcgen05_conformance.campaign.run import Run, Settings, campaign
from tcgen05_conformance.campaign.kernels import fill

__all__ = ["Run", "Settings", "campaign", "fill"]
