"""`cache info|clear|fill`: the kernel cache the campaign keeps across runs (`tcgen05_conformance.device.kernel_cache`),
and every kernel a campaign can launch assembled into it ahead of a run (`tools.campaign_kernels`)."""

from __future__ import annotations

import argparse
import os
import sys

from tcgen05_conformance.cli.common import EXIT_FAILED, EXIT_OK, JOBS_LIMIT, count, print_json


def add(sub) -> None:
    cache = sub.add_parser("cache", help="the assembled-kernel cache kept across campaigns: info, clear or fill",
                           description="Cubins of the campaign's kernel forms, keyed by PTX text, architecture and "
                                       "assembler version, kept in $TCGEN05_CACHE or ~/.cache/tcgen05-conformance/kernels "
                                       "and trimmed to their limit (least recently used first) after each campaign.")
    actions = cache.add_subparsers(dest="action", required=True)
    info = actions.add_parser("info", help="the folder, its kernels and bytes, and the limit")
    info.add_argument("--json", action="store_true", help="print it as JSON")
    info.set_defaults(func=cmd_info)
    clear = actions.add_parser("clear", help="delete every kernel in the cache")
    clear.set_defaults(func=cmd_clear)
    fill = actions.add_parser("fill", help="assemble every kernel form a Hopper campaign can launch (about 9,500) "
                                           "that the cache lacks, so that no campaign waits for the assembler",
                              description="Needs nvJitLink (the compile extra), not a GPU: a folder filled on one "
                                          "machine serves any other with the same assembler version "
                                          "($TCGEN05_CACHE names it). Prints progress to stderr and a summary.")
    fill.add_argument("--jobs", type=count(1, JOBS_LIMIT, "worker count"), default=os.cpu_count() or 1, metavar="N",
                      help="assembler processes (default: every CPU)")
    fill.add_argument("--json", action="store_true", help="print the summary as JSON")
    fill.set_defaults(func=cmd_fill)


def _cache():
    from tcgen05_conformance.device.kernel_cache import KernelCache, default_directory

    return KernelCache(default_directory())


def cmd_info(args: argparse.Namespace) -> int:
    info = _cache().info()
    if args.json:
        print_json(info)
    else:
        print(f"{info['directory']}: {info['kernels']} kernels, {info['bytes']:,} bytes (limit {info['limit_bytes']:,})")
    return EXIT_OK


def cmd_clear(args: argparse.Namespace) -> int:
    cache = _cache()
    print(f"{cache.directory}: {cache.clear()} kernels deleted")
    return EXIT_OK


def cmd_fill(args: argparse.Namespace) -> int:
    from tcgen05_conformance.campaign.kernels import fill

    cache = _cache()
    done = fill(cache.directory, args.jobs, sys.stderr)
    if args.json:
        print_json(done)
    else:
        print(f"{cache.directory}: {done['forms']:,} kernel forms, {done['cached']:,} already cached, "
              f"{done['assembled']:,} assembled ({done['assemble_cpu_seconds']:.0f} s of assembler time), "
              f"{len(done['failed'])} failed, {done['seconds']:.0f} s")
        for line in done["failed"]:
            print(f"failed: {line}", file=sys.stderr)
    return EXIT_FAILED if done["failed"] else EXIT_OK
