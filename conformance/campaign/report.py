"""The report of a campaign: what ran, where the time went, throughput and failures (`report`), and its
stages as a text table (`stage_table`)."""

from __future__ import annotations

from tcgen05_conformance.campaign.main_process import Run
from tcgen05_conformance.campaign.settings import CHECKER, FAILURES_KEPT, FORMS, GPU_STAGES, TARGET
from tcgen05_conformance.campaign.stream import GPU_IDLE, IDLE_GAPS_MS, idle_gap_key
from tcgen05_conformance.harness.stages import Stages
from tcgen05_conformance.generators.programs import INPUTS


def rounded(seconds: float | None) -> float | None:
    return round(seconds, 3) if seconds is not None else None


def report(run: Run, seconds: float, evicted: int, keep_cache: bool) -> dict:
    o, s = run.outcome, run.settings
    programs = o.counts["programs"]
    total_ips = sum(o.per_accumulator.values())
    busy = [sum(w.gpu_seconds[k] for k in GPU_STAGES) for w in run.workers]
    gpus = [{"index": w.index, "device": w.device, "name": w.name, "programs": w.programs, "launches": w.launches,
             "busy_seconds": round(b, 3), **{f"{k}_seconds": round(w.gpu_seconds[k], 3) for k in GPU_STAGES},
             "idle_between_batches_seconds": round(w.gpu_seconds[GPU_IDLE], 3),
             "idle_between_batches_by_gap_seconds": {label: round(w.gpu_seconds[idle_gap_key(label)], 3)
                                                     for _, label in IDLE_GAPS_MS},
             "programs_per_s_busy": round(w.programs / b, 1) if b else None,
             "restarts": w.restarts, "incidents": w.incidents, "given_up": w.gone} for w, b in zip(run.workers, busy)]
    gpu_rate = sum(w.programs / b for w, b in zip(run.workers, busy) if b)
    gpu_ips = total_ips / programs * gpu_rate if programs else 0.0
    stages = Stages()
    stages.merge(run.producer_stages)
    gpu_stages = Stages()
    gpu_stages.merge(o.stages)
    for k in GPU_STAGES:
        gpu_stages.add(k, o.gpu_seconds[k])
    failures = sorted(o.failures, key=lambda f: f["case_id"])
    return {
        "gpu": ", ".join(sorted({w.name for w in run.workers if w.name})),
        "gpus": gpus,
        "arch": TARGET,
        "reference": s.reference,
        "profile": ", ".join(sorted(o.profiles)),
        "profiles": dict(sorted(o.profiles.items())),
        "seed": s.seed,
        "shard": f"{s.shard[0]}/{s.shard[1]}",
        "settings": {"chunk": s.chunk, "data_sets": s.data_sets, "batch_reference": s.batch_reference,
                     "numerics": s.numerics, "cross_check_every": s.cross_check_every if s.numerics == CHECKER else None,
                     "draw": s.draw,
                     "kernel_cache": s.cache_dir if keep_cache else None, "jobs": run.jobs, "launcher": run.launcher,
                     "timeout_s": run.timeout_s},
        "programs": programs,
        "instructions": run.instructions,
        "programs_by_inputs": {i: o.counts[f"programs ({i})"] for i in INPUTS},
        "programs_by_form": {f: o.counts[f"form {f}"] for f in FORMS},
        "programs_by_form_and_formats": {f: dict(sorted((formats, n) for (form, formats), n in o.per_form_and_formats.items()
                                                        if form == f)) for f in FORMS},
        "launches": o.launches,
        "kernel_cache": {"hits": run.cache["hits"], "assembled": run.cache["assembled"],
                         "assemble_seconds": round(run.cache["assemble_seconds"], 3), "evicted": evicted},
        "inner_products": dict(sorted(o.inner_products.items())),
        "inner_products_by_accumulator": dict(sorted(o.per_accumulator.items())),
        "inner_products_total": total_ips,
        "cross_checked": {"programs": o.counts["cross-checked programs"],
                          "inner_products": o.counts["cross-checked inner products"]},
        "mismatches": o.counts["mismatched programs"],
        "mismatched_words": o.counts["mismatched words"],
        "errors": o.counts["errors"],
        "not_run": run.not_run,
        "seconds": round(seconds, 3),
        "startup_seconds": rounded(run.first_dispatch),
        "startup": {"first_chunk_prepared_s": rounded(run.first_prepared), "first_worker_ready_s": rounded(run.first_ready),
                    "first_dispatch_s": rounded(run.first_dispatch),
                    "first_worker": {name: round(s, 3) for name, s in run.first_worker.items()}},
        "gpu_seconds": round(sum(busy), 3),
        "stages": {"producers": stages.as_dict(programs), "gpu_workers": gpu_stages.as_dict(programs),
                   "main": run.main_stages.as_dict(programs)},
        "throughput": {
            "programs_per_s_end_to_end": round(programs / seconds, 1),
            "programs_per_s_after_startup": (round(programs / (seconds - run.first_dispatch), 1)
                                             if run.first_dispatch is not None and seconds > run.first_dispatch else None),
            "inner_products_per_s_end_to_end": round(total_ips / seconds),
            "programs_per_s_gpu": round(gpu_rate, 1) if gpu_rate else None,
            "inner_products_per_s_gpu": round(gpu_ips) if gpu_rate else None,
            # the issue's measure: how near the GPUs' own rate the run came (1 with no GPU ever waiting)
            "end_to_end_over_gpu": round(programs / seconds / gpu_rate, 4) if gpu_rate else None,
        },
        "failures": [{k: v for k, v in f.items() if k != "program"} for f in failures[:FAILURES_KEPT]],
    }


def stage_table(report: dict) -> str:
    """The report's stages as an aligned text table (where, stage, seconds, CPU seconds, ms per program)."""
    rows = [(where, name, v["seconds"], v["cpu_seconds"], v["ms_per_program"])
            for where, stages in report["stages"].items() for name, v in stages.items()]
    lines = [f"{'where':<12} {'stage':<12} {'seconds':>10} {'cpu s':>10} {'ms/program':>11}"]
    lines += [f"{w:<12} {n:<12} {s:>10.3f} {c:>10.3f} {m:>11.4f}" for w, n, s, c, m in rows]
    return "\n".join(lines)
