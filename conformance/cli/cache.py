"""`cache info|clear`: the kernel cache the campaign keeps across runs (`device.kernel_cache`)."""

from __future__ import annotations

import argparse

from conformance.cli.common import EXIT_OK, print_json


def add(sub) -> None:
    cache = sub.add_parser("cache", help="the assembled-kernel cache kept across campaigns: info or clear",
                           description="Cubins of the campaign's kernel forms, keyed by PTX text, architecture and "
                                       "assembler version, kept in $TCGEN05_CACHE or ~/.cache/tcgen05-conformance/kernels "
                                       "and trimmed to their limit (least recently used first) after each campaign.")
    actions = cache.add_subparsers(dest="action", required=True)
    info = actions.add_parser("info", help="the folder, its kernels and bytes, and the limit")
    info.add_argument("--json", action="store_true", help="print it as JSON")
    info.set_defaults(func=cmd_info)
    clear = actions.add_parser("clear", help="delete every kernel in the cache")
    clear.set_defaults(func=cmd_clear)


def _cache():
    from device.kernel_cache import KernelCache, default_directory

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
