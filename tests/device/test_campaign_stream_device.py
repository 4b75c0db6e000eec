"""Stream data sets on the GPU (`campaign --draw gpu`, `GpuStream`): for two chunks (exact and
discriminating inputs) of every modelled form, each chunk's groups queued as one batch, with every
program sampled, the images and registers the GPU draws equal the host's rebuild byte for byte,
the checker's D equals the Python model's, and the tensor core's D equals the checker's."""

from __future__ import annotations

from collections import Counter

from tcgen05_conformance.campaign import run as tool
from tcgen05_conformance.campaign.checker import checker_module
from tcgen05_conformance.campaign.stream import GPU_IDLE, GpuStream, checker_differs, drawn_differently
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.device.kernel_cache import KernelCache


def test_stream_launches_draw_what_the_host_rebuilds_and_agree(hopper_gpu, tmp_path):
    settings = tool.Settings(programs=400, seed=11, data_sets=4, chunk=200, numerics=tool.CHECKER, draw=tool.GPU_DRAW,
                             cross_check_every=1, cache_dir=str(tmp_path))
    seconds: Counter = Counter()
    stream = GpuStream(hopper_gpu, checker_module(hopper_gpu, "sm_90a"), seconds)
    cache = KernelCache(settings.cache_dir)
    launched = sampled = 0
    for chunk in settings.chunks():
        prepared, _ = tool.prepare_stream(chunk, settings, cache, Stages())
        groups = prepared["groups"]
        kernels = [hopper_gpu.load_cubin(group.cubin).get_kernel("hopper_batch") for group in groups]
        results = stream.collect(stream.submit(groups, prepared["batch"], kernels))  # the chunk's groups in one batch
        for group, result in zip(groups, results, strict=True):
            label = f"chunk {chunk} ({group.form_name}, {group.input_formats}, {group.accumulator})"
            assert drawn_differently(group, result, label) is None
            assert checker_differs(group, result, label) is None
            assert not result.flagged.size, label
            launched += group.programs
            sampled += len(group.sample)
    assert launched == sampled == 400
    assert seconds["draw"] > 0 and seconds["reference"] > 0
    # the second chunk was prepared on the host after the first was collected: the GPU sat idle
    assert seconds[GPU_IDLE] > 0
