"""Digests of everything a campaign producer makes of its chunks with data sets drawn on the GPU
(`tcgen05_conformance.campaign.run.prepare_stream`), to show that a change to the producers
leaves the programs drawn and the results judged byte for byte as they were: run it on the tree
before the change and on the tree after it, then compare the two files.

    python producer_digests.py write OUT.json
    python producer_digests.py compare BEFORE.json AFTER.json

For each configuration of CONFIGS (seed, data sets per instruction, cross-check interval, judging
profile, chunks), per chunk: its inputs, instruction count, programs not run and errors (case id
and reason); per launch group its kernel text and cubin, its instructions, tiles and stream
parameters, every table the GPU reads (the packed inputs and their layout), the checker's
parameters, the sample (positions, the model's D packed as the kernel stores it, the images and
registers the host rebuilt), the report's labels, and the case ids of its first, sampled and last
programs; and the chunk's launch plan (job tables, field by field; launches; arena offsets). Exit status of
compare: 0 when the two files agree, 1 when a chunk differs (named)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

import numpy as np

from tcgen05_conformance.campaign import run as campaign
from tcgen05_conformance.device.check_kernels import JOB_KERNELS
from tcgen05_conformance.device.kernel_cache import KernelCache, default_directory
from tcgen05_conformance.harness.stages import Stages

#: (seed, data sets, cross-check interval, profile, chunks): the CLI's defaults with --draw gpu;
#: small data sets and a short interval (many sampled programs per group, several per key); the
#: defaults with --draw host; and the exact profile, whose groups the checker cannot compute
#: (their errors).
CONFIGS = [(33, 256, 512, None, 6), (5, 8, 4, None, 12), (11, 32, 64, None, 8), (7, 16, 16, "exact", 6)]


def _hash(x) -> str:
    data = x.tobytes() if isinstance(x, np.ndarray) else x if isinstance(x, bytes) else repr(x).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def _group(group) -> list:
    source = group.source
    positions = sorted({0, len(source) - 1, *group.sample.tolist()})
    md = group.metadata
    return [_hash(group.text.encode()), _hash(group.cubin), repr(group.form), repr(source.ops),
            _hash(source.instruction_of), _hash(source.tiles), _hash(source.spec.params_a), _hash(source.spec.params_b),
            _hash(source.spec.exact_codes), source.target, source.profile, _hash(group.inputs), repr(group.layout),
            group.image_words, group.word_bits, _hash(group.parameters), list(group.shape), list(group.element_bytes),
            None if md is None else [_hash(md.cells), _hash(md.selected), md.field_bits, md.k],
            group.sample.tolist(), _hash(group.sample_words), _hash(group.sample_images),
            _hash(group.sample_registers), group.form_name, list(group.input_formats), group.accumulator,
            group.profile, [p.case_id for p in source.programs(positions)]]


def _batch(batch) -> list | None:
    """A launch plan, its job tables read field by field (a row's padding bytes are never written)."""
    if batch is None:
        return None
    kernels = {kernel.entry: kernel for kernel in JOB_KERNELS.values()}
    tables = []
    for launches in batch.launches.values():
        for entry, at, jobs, _ in launches:
            dtype = kernels[entry].dtype
            rows = batch.own[at - batch.own_at:][:jobs * dtype.itemsize].view(dtype)
            tables.append(_hash(repr(rows.tolist())))
    return [repr(batch.arrays), tables, batch.own_at, batch.results_at, batch.sent, batch.returned, batch.size,
            repr(batch.launches), repr(batch.tensor)]


def digests() -> dict:
    out = {}
    cache = KernelCache(os.environ.get("TCGEN05_CACHE") or default_directory())
    for seed, data_sets, every, profile, chunks in CONFIGS:
        settings = campaign.Settings(10**7, seed, data_sets, chunk=campaign.chunk_programs_for(campaign.GPU_DRAW, data_sets),
                                     profile=profile, numerics=campaign.CHECKER, cross_check_every=every,
                                     draw=campaign.GPU_DRAW, cache_dir=cache.directory)
        for chunk in range(chunks):
            prepared, details = campaign.prepare_stream(chunk, settings, cache, Stages())
            with tempfile.TemporaryDirectory() as folder:  # the spool's round trip, as a GPU worker reads it
                path = os.path.join(folder, "launches")
                campaign.write_pickle(path, prepared)
                prepared = campaign.read_pickle(path)
            out[f"{seed}/{data_sets}/{every}/{profile}/{chunk}"] = {
                "inputs": prepared["inputs"], "instructions": prepared["instructions"], "not_run": prepared["not_run"],
                "errors": [[e["case_id"], e["detail"]] for e in prepared["errors"]],
                "groups": [_group(g) for g in prepared["groups"]], "batch": _batch(prepared["batch"]),
                "details": [[repr(s.ops), _hash(s.tiles), observed] for s, observed in details]}
    return out


def compare(before: dict, after: dict) -> int:
    differing = [k for k in before if before[k] != after.get(k)] + [k for k in after if k not in before]
    groups = sum(len(v["groups"]) for v in before.values())
    sampled = sum(len(g[19]) for v in before.values() for g in v["groups"])
    print(f"{len(before)} chunks, {groups} launch groups, {sampled} sampled programs, {len(differing)} differing "
          f"chunks{': ' if differing else ''}{', '.join(differing[:5])}")
    return 1 if differing else 0


def main() -> int:
    if sys.argv[1:2] == ["write"] and len(sys.argv) == 3:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(digests(), f)
        return 0
    if sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        before, after = (json.load(open(path, encoding="utf-8")) for path in sys.argv[2:4])
        return compare(before, after)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
