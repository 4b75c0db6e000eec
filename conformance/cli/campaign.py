"""`campaign`: a large differential run of Hopper programs on every sm_90 GPU of the host, the work
spread over every core (`tcgen05_conformance.campaign.run`)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from tcgen05_conformance.cli.common import (
    EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, GPU_EXIT_STATUSES, JOBS_LIMIT, PROFILE_FILE_HELP, JsonSwitch, NothingRan, UsageError,
    backend_spec, command_line, count, deprecated_spelling, gpus, hopper_gpu_or_skip, machine, output_file, output_folder,
    profile_spec, require_out, seconds, seed, shard, visible_gpus, write_report,
)
from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE

PROGRAM_LIMIT = 10**9


# Operand data sets per drawn instruction, and with the checker the interval of the programs the
# model also evaluates, by where the data sets are drawn (--draw). Drawn on the GPU a data set
# costs the host nothing, while an instruction costs it about 4 ms (its Hypothesis draw) and a
# sampled program about 9 ms (the model): with 256 and 512 the host keeps up with an H100
# (reports/campaign-throughput, section 5a). Drawn on the host, every data set costs it.
# --draw gpu: 512 data sets and a model cross-check every 1024th program keep one GPU busy with 16 producer
# cores (reports/campaign-scaling/); the producers' instructions and model checks per second are as at 256 and 512
DATA_SETS = {"gpu": 512, "host": 32}
CROSS_CHECK_EVERY = {"gpu": 1024, "host": 64}


def add(sub) -> None:
    cam = sub.add_parser(
        "campaign", help="a large differential run of Hopper programs (wgmma, mma.sp) on every sm_90 GPU, spread over "
                         "every core (docs/device.md)",
        description="Draw Hopper programs (every form the oracle models, exact and discriminating inputs), have the "
                    "reference (default the oracle) observe their expected D under the Hopper profile (sm_90a; mma.sp "
                    "sm_90a.mma_sync) in producer processes, run them on the GPUs in batches (one worker process per "
                    "GPU) and judge D bit for bit as run does. Needs cuda-core and sm_90 GPUs (H100, H200), except with "
                    "--host-only.",
        epilog=GPU_EXIT_STATUSES)
    deprecated_spelling(cam, "--programs", cam.add_argument(
        "--count", dest="programs", type=count(1, PROGRAM_LIMIT, "program count"), default=100_000, metavar="N",
        help="programs to run, e.g. 180000 or 1.8e5 (default 1e5; before 1.0 --programs)"))
    cam.add_argument("--seed", type=seed, default=0, help="generation seed (default 0)")
    cam.add_argument("--jobs", type=count(1, JOBS_LIMIT, "worker count"), default=os.cpu_count() or 1, metavar="N",
                     help="producer processes drawing programs, computing expected states and assembling kernels "
                          "(default: every core)")
    cam.add_argument("--reference", type=backend_spec, default=DEFAULT_REFERENCE, metavar="NAME",
                     help=f"the backend whose D the GPU's must equal: any backend spec that observes states, as for run "
                          f"(default {DEFAULT_REFERENCE})")
    cam.add_argument("--profile", type=profile_spec, metavar="PROFILE",
                     help=f"numeric profile judging the programs, as for run: a Hopper profile name {PROFILE_FILE_HELP} "
                          "(default sm_90a; mma.sp sm_90a.mma_sync)")
    cam.add_argument("--gpus", type=gpus, default=None, metavar="N|all",
                     help="GPUs to use, one worker process each: the first N that CUDA_VISIBLE_DEVICES leaves visible, "
                          "or all of them (default all); with --host-only, N stand-in workers (default 1)")
    cam.add_argument("--data-sets", type=count(1, 4096, "data-set count"), metavar="N",
                     help="operand data sets per drawn instruction: each instruction (form, descriptors, layouts) runs "
                          f"as N programs with data of their own, in one launch (default {DATA_SETS['gpu']} with "
                          f"--draw gpu, {DATA_SETS['host']} with --draw host; 1: every program its own instruction)")
    cam.add_argument("--numerics", choices=("checker", "model"),
                     help="what computes the expected D's inner products: checker, the integer checker generated from "
                          "the judging profile (oracles/numerics/checker.h), on each GPU beside the tensor core (with "
                          "--host-only on the CPU, built by g++), from the operands the oracle reads, the Python model "
                          "evaluating every --cross-check-every-th program and the run stopping (exit 3) on any difference; "
                          "model, the reference computes every D on the host (default checker with the oracle as the "
                          "reference, and with --host-only g++ on the PATH; else model)")
    cam.add_argument("--draw", choices=("gpu", "host"),
                     help="where each data set's operands are drawn: gpu, on each GPU from the counter-based operand "
                          "stream (generators/stream_data_sets.py; the host draws instructions only, and rebuilds the "
                          "sampled and the failing programs exactly; with --host-only its numpy twin draws them), checked "
                          "by the integer checker; host, by the generators on the host (default gpu with --numerics "
                          "checker, else host)")
    cam.add_argument("--cross-check-every", type=count(1, 10**6, "cross-check interval"), metavar="N",
                     help="with --numerics checker, the Python model also evaluates every N-th program of each chunk, "
                          "the first included (with --draw gpu the host also rebuilds it, and its image and registers "
                          f"must equal the GPU's byte for byte) (default {CROSS_CHECK_EVERY['gpu']} with --draw gpu, "
                          f"{CROSS_CHECK_EVERY['host']} with --draw host)")
    cam.add_argument("--no-batch-oracle", action="store_true",
                     help="the reference observes each program on its own instead of a chunk's programs together (the "
                          "oracle then evaluates one program's inner products per call)")
    cam.add_argument("--no-cache", action="store_true",
                     help="assemble every kernel form afresh (once per run) instead of keeping cubins in the kernel "
                          "cache ($TCGEN05_CACHE or ~/.cache/tcgen05-conformance/kernels)")
    cam.add_argument("--host-only", action="store_true",
                     help="run every host stage and no launch (D is the reference's own): measures the host side "
                          "without a GPU")
    cam.add_argument("--timeout", type=seconds, default=300.0, metavar="S",
                     help="a launch still running after S seconds is a hang: its cases are charged as errors and the "
                          "GPU's worker is restarted (default 300)")
    cam.add_argument("--shard", type=shard, default=(1, 1), metavar="I/N",
                     help="run shard I of N: the chunks c with c mod N = I - 1 (the shards of a seed divide its "
                          "programs; default 1/1)")
    cam.add_argument("--out", type=output_file, metavar="FILE",
                     help="write the report here, required (GPUs, command, programs, inner products per format, "
                          "mismatches, time per stage, throughput; before 1.0 --json FILE)")
    cam.add_argument("--json", action=JsonSwitch, help="also print the report as JSON on stdout")
    deprecated_spelling(cam, "--cases", cam.add_argument(
        "--out-cases", dest="cases", type=output_folder, metavar="DIR",
        help="write each failing program here as <case id>.json, for replay (before 1.0 --cases)"))
    cam.set_defaults(func=cmd_campaign)


def devices_for(args: argparse.Namespace) -> list[str | None]:
    """One entry per GPU worker: CUDA_VISIBLE_DEVICES values, or None each with --host-only."""
    return [None] * (args.gpus or 1) if args.host_only else visible_gpus(args.gpus)


def numerics_for(args: argparse.Namespace) -> str:
    """--numerics, defaulted: the checker needs the oracle's operands, so another reference means
    the model (UsageError when --numerics checker asks for both); with --host-only the checker
    runs on the CPU, so without g++ the default is the model."""
    if args.reference != DEFAULT_REFERENCE:
        if args.numerics == "checker":
            raise UsageError(f"--numerics checker computes D from the oracle's operands: it needs --reference "
                             f"{DEFAULT_REFERENCE}, not {args.reference}")
        return "model"
    if args.numerics:
        return args.numerics
    return "model" if args.host_only and shutil.which("g++") is None else "checker"


def draw_for(args: argparse.Namespace, numerics: str) -> str:
    """--draw, defaulted: data sets drawn on the GPU need the checker (UsageError when --draw gpu
    asks for the model)."""
    if args.draw == "gpu" and numerics != "checker":
        raise UsageError("--draw gpu checks D with the integer checker: it needs --numerics checker (and the oracle as "
                         "the reference, and with --host-only g++)")
    return args.draw or ("gpu" if numerics == "checker" else "host")


def cmd_campaign(args: argparse.Namespace) -> int:
    require_out(args)
    numerics = numerics_for(args)  # bad usage is said before the GPU is looked for
    draw = draw_for(args, numerics)
    if not args.host_only:
        hopper_gpu_or_skip("campaign")
    devices = devices_for(args)
    from tcgen05_conformance.campaign import run as tool
    from tcgen05_conformance.device.kernel_cache import default_directory
    from tcgen05_conformance.oracles.numerics.checker import CrossCheckError

    data_sets = args.data_sets or DATA_SETS[draw]
    settings = tool.Settings(args.programs, args.seed, data_sets, not args.no_batch_oracle, default_directory(), args.shard,
                             chunk=tool.chunk_programs_for(draw, data_sets), reference=args.reference, profile=args.profile,
                             numerics=numerics, cross_check_every=args.cross_check_every or CROSS_CHECK_EVERY[draw],
                             draw=draw)
    launcher = tool.HOST_ONLY if args.host_only else tool.GPU_LAUNCHER
    try:
        report = tool.campaign(settings, args.jobs, devices, launcher, args.cases, args.timeout, keep_cache=not args.no_cache)
    except tool.NoWorkerCouldRun as e:
        raise NothingRan(str(e)) from None
    except CrossCheckError as e:
        print(f"campaign: the integer checker disagrees with the Python model, the run stopped: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    report["command"] = command_line(args)
    report["machine"] = machine()
    write_report(args, report)
    print(tool.stage_table(report), file=sys.stderr)
    t = report["throughput"]
    gpu_side = (f", {t['programs_per_s_gpu']} on the GPUs, {t['end_to_end_over_gpu']} of it" if t["programs_per_s_gpu"]
                else "; no GPU time")
    print(f"{report['programs']} programs, {report['inner_products_total']} inner products, {report['mismatches']} "
          f"mismatched, {report['errors']} errors, {report['seconds']} s ({t['programs_per_s_end_to_end']} programs/s end "
          f"to end{gpu_side}); report: {args.out}", file=sys.stderr)
    cache = report["kernel_cache"]
    if cache["assembled"] and not args.no_cache:
        print(f"campaign: {cache['assembled']:,} kernel forms were assembled during the run ({cache['assemble_seconds']:.0f} s "
              f"of the producers' time); `tcgen05-conformance cache fill` assembles every form ahead of a run",
              file=sys.stderr)
    return EXIT_OK if report["mismatches"] == 0 and report["errors"] == 0 else EXIT_FAILED
