"""Kernels launched over many jobs at once: a device function of `tcgen05_conformance.device.check_kernels` (its
strided loops cover one job's work) becomes the kernel `<name>_jobs(base, jobs, count)`, which runs
job j with the arguments of row j of a table in device memory, `blockIdx.y` striding over the jobs.
A campaign's GPU worker so draws and checks a whole chunk's launch groups in one launch per
kernel, instead of one per group and kernel.

A table's pointer fields hold offsets from `base` (one allocation holding every array of a
launch: the producer lays it out before any address exists) or, with a null `base`, addresses; 0
is a null pointer. The C struct and the numpy dtype of a row are both generated from one list of
(name, C type), the function's parameters in order, so they cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

SCALARS = {"unsigned": np.uint32, "ns_u64": np.uint64}  # a pointer is a 64-bit offset or address


@dataclass(frozen=True)
class JobKernel:
    """A device function launched over a table of jobs: its name and parameters (name, C type)."""

    name: str
    parameters: tuple[tuple[str, str], ...]
    launch_bounds: tuple[int, int] | None = None  # (threads per block, blocks per SM the registers must allow)

    @cached_property
    def dtype(self) -> np.dtype:
        """A job's row, laid out as the C struct (natural alignment)."""
        return np.dtype([(name, np.uint64 if c.endswith("*") else SCALARS[c]) for name, c in self.parameters], align=True)

    @property
    def entry(self) -> str:
        return f"{self.name}_jobs"

    def source(self) -> str:
        """The job struct and the kernel that runs the jobs, in CUDA C++."""
        fields = "".join(f" {'ns_u64' if c.endswith('*') else c} {name};" for name, c in self.parameters)
        values = ", ".join(f"({c})(a.{name} ? (ns_u64)base + a.{name} : 0)" if c.endswith("*") else f"a.{name}"
                           for name, c in self.parameters)
        bounds = "__launch_bounds__({}, {}) ".format(*self.launch_bounds) if self.launch_bounds else ""
        return (f"struct {self.name}_job {{{fields} }};\n"
                f'extern "C" __global__ void {bounds}{self.entry}(const unsigned char* base, const {self.name}_job* jobs, '
                "unsigned count) {\n"
                "  for (unsigned j = blockIdx.y; j < count; j += gridDim.y) {\n"
                f"    const {self.name}_job& a = jobs[j];\n"
                f"    {self.name}({values});\n"
                "  }\n}\n")

    def table(self, jobs: Sequence[Sequence[int]]) -> np.ndarray:
        """The rows of `jobs`, each its arguments in order (pointers as offsets, addresses or 0)."""
        return np.array([tuple(int(x) for x in job) for job in jobs], self.dtype)


def parameters(signature: str) -> tuple[tuple[str, str], ...]:
    """(name, C type) of each parameter of a C parameter list, e.g. "const unsigned* a, unsigned n"."""
    out = []
    for parameter in " ".join(signature.split()).split(","):
        words = parameter.strip().replace("*", "* ").split()
        out.append((words[-1], " ".join(words[:-1]).replace(" *", "*")))
    return tuple(out)
