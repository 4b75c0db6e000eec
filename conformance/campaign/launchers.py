"""What runs a GPU worker's launches (`Launcher`): the GPU (`GpuLauncher`), the host alone
(`HostOnlyLauncher`), or a stand-in named by `package.module:factory` (`make_launcher`)."""

from __future__ import annotations

import importlib
from collections import Counter
from typing import Protocol

import numpy as np

from tcgen05_conformance.campaign.checker import GpuReference, HostReference, Operands, checker_module
from tcgen05_conformance.campaign.producer import Group
from tcgen05_conformance.campaign.settings import GPU_LAUNCHER, HOST_ONLY, TARGET
from tcgen05_conformance.campaign.stream import GpuStream, StreamBatch, StreamGroup, StreamResult, host_draw, stream_result
from tcgen05_conformance.device.kernel_cache import default_directory
from tcgen05_conformance.device.ptx.kernels import HopperForm


class Launcher(Protocol):
    """What runs a GPU worker's launches: `name` names the GPU; `seconds` adds up copy in,
    launch, read back and the checker's reference."""

    name: str
    seconds: Counter

    def load(self, text: str, cubin: bytes) -> None: ...

    def reference(self, group: Group) -> np.ndarray:
        """The words the group's kernel must store, computed by the checker from its operands."""

    def launch(self, group: Group) -> np.ndarray:
        """The words [B, threads, words_out] the kernel stores for the group's programs."""

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> object:
        """Queue groups of data sets drawn on the GPU, launched and checked there as `batch` plans
        (`campaign_stream`)."""

    def stream_collect(self, queued: object) -> list[StreamResult]:
        """What queued stream groups gave, a result per group."""


class GpuLauncher:
    """The worker's GPU (the one CUDA_VISIBLE_DEVICES leaves it), which must run sm_90a code."""

    def __init__(self, index: int):
        from tcgen05_conformance.device.target_gpu import hopper_gpu
        from tcgen05_conformance.device.hopper_batch import HopperRunner

        self.gpu = hopper_gpu("campaign")
        self.runner = HopperRunner(self.gpu, TARGET)
        self.name, self.seconds = self.gpu.name, self.runner.seconds
        module = checker_module(self.gpu, TARGET, default_directory())  # while the producers prepare the first chunks
        self.checker, self.streams = GpuReference(self.gpu, module, self.seconds), GpuStream(self.gpu, module, self.seconds)

    def load(self, text: str, cubin: bytes) -> None:
        if text not in self.runner.kernels:
            self.runner.load_cubin(text, cubin)

    def launch(self, group: Group) -> np.ndarray:
        return self.runner.launch_batch(group.batch)

    def reference(self, group: Group) -> np.ndarray:
        return self.checker(group.operands, group.batch.form)

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> object:
        return self.streams.submit(groups, batch, [self.runner.kernels[g.text] for g in groups])

    def stream_collect(self, queued: object) -> list[StreamResult]:
        return self.streams.collect(queued)


class HostOnlyLauncher:
    """No GPU: the words are those of the expected D, packed as the kernel stores them, so that
    every host stage runs (unpacking and comparing included) and the host side can be measured."""

    name = "none (host only: D is the reference's)"

    def __init__(self, index: int):
        self.seconds: Counter = Counter()
        self.checker: HostReference | None = None

    def load(self, text: str, cubin: bytes) -> None:
        pass

    def reference(self, group: Group) -> np.ndarray:
        if self.checker is None:  # compiled (g++) when first needed
            self.checker = HostReference()
        return self.checker(group.operands, group.batch.form)

    def launch(self, group: Group) -> np.ndarray:
        return group.expected

    def stream_submit(self, groups: list[StreamGroup], batch: StreamBatch) -> list[StreamResult]:
        """The whole launch of every group, on the CPU, at once."""
        results = []
        for group in groups:
            images, registers, ops = host_draw(group)
            expected = self.stream_reference(ops, group.form)
            results.append(stream_result(group, images, registers, expected, self.stream_launch(group, expected)))
        return results

    def stream_collect(self, queued: list[StreamResult]) -> list[StreamResult]:
        return queued

    def stream_reference(self, ops: Operands, form: HopperForm) -> np.ndarray:
        """The checker's words for a stream group's operands (on the CPU)."""
        if self.checker is None:  # compiled (g++) when first needed
            self.checker = HostReference()
        return self.checker(ops, form)

    def stream_launch(self, group: StreamGroup, expected: np.ndarray) -> np.ndarray:
        """The tensor core's words for a stream group: the checker's own."""
        return expected


def make_launcher(spec: str, index: int) -> Launcher:
    """The launcher `spec` names ("gpu", "host-only" or package.module:factory) for worker `index`."""
    if spec == GPU_LAUNCHER:
        return GpuLauncher(index)
    if spec == HOST_ONLY:
        return HostOnlyLauncher(index)
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)(index)
