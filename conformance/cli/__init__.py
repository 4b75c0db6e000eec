"""The `tcgen05-conformance` command (also `python -m tcgen05_conformance`).

One module per subcommand (or family of subcommands) in this package, each with `add(subparsers)`,
which builds its parser, and a handler per subcommand; `main` parses, dispatches and turns errors
into one line and an exit status: 0 when every check that ran passed, 1 when one failed, 2 on bad
usage or input, 3 on an internal error (a bug: the traceback goes to a file the line names), 5 when
nothing could run here (a GPU command without its GPU or cuda-core).
Handlers import the tools they run when they run, so `--help` stays fast.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback

from tcgen05_conformance.cli import (
    bench, cache, campaign, completion, decode, fuzz, legality, mutants, numerics, peers, probe, ptx, report, runs, suite,
    vectors,
)
from tcgen05_conformance.cli.common import (
    EXIT_INTERNAL,
    EXIT_NOTHING_RAN,
    EXIT_USAGE,
    GPU_EXIT_STATUSES,
    PROG,
    NothingRan,
    Parser,
    UsageError,
)
from tcgen05_conformance.core.inputs import printable

SUBCOMMANDS = (runs, suite, report, legality, decode, ptx, vectors, numerics, probe, campaign, cache, bench, mutants, fuzz,
               peers, completion)


def version_line() -> str:
    """What `--version` prints: the package's version, the PTX ISA revision whose text its facts
    come from, and the version of the suite's frozen case list."""
    from tcgen05_conformance import SUITE_VERSION, __version__
    from tcgen05_conformance.core.isa.targets import PTX_VERSION

    return f"{PROG} {__version__} (PTX ISA {PTX_VERSION}, suite {SUITE_VERSION})"


def parser() -> Parser:
    top = Parser(
        prog=PROG,
        description="Conformance tests for NVIDIA tcgen05 (sm_100a/sm_103a), wgmma and mma.sp tensor-core instructions.",
        epilog=GPU_EXIT_STATUSES.replace("nothing could run here", "a GPU command (campaign, numerics measure) could not run here"),
    )
    top.add_argument("--version", action="version", version=version_line(),
                     help="print the package version, the PTX ISA version its facts come from and the suite version, then exit")
    # The subcommands that run the command line themselves (fuzz --lint, --harness) or read its parsers
    # (completion) are handed both here, so that none of them imports the package above it.
    top.set_defaults(run_cli=main, build_parser=parser)
    sub = top.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    from tcgen05_conformance.core.encoding.bitfields import EncodingError
    from tcgen05_conformance.core.program import ProgramError

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    args.argv = argv  # the command line reports record (what was asked, whoever called)
    try:
        return args.func(args)
    except (UsageError, ProgramError, EncodingError, ValueError) as e:
        print(f"{PROG}: error: {printable(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except NothingRan as e:
        print(f"{PROG}: nothing ran: {printable(str(e))}", file=sys.stderr)
        return EXIT_NOTHING_RAN
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug: one line here, the traceback in a file
        print(f"{PROG}: internal error: {printable(type(e).__name__)}: {printable(str(e))[:200]} "
              f"({_save_traceback(e, argv)}; please report it)", file=sys.stderr)
        return EXIT_INTERNAL


def _save_traceback(e: Exception, argv: list[str]) -> str:
    """Where the traceback of `e` was written (a new file in the temporary folder), or why not."""
    from tcgen05_conformance import __version__

    try:
        fd, path = tempfile.mkstemp(prefix=f"{PROG}-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{PROG} {__version__} {' '.join(argv)}\n")
            traceback.print_exception(e, file=f)
    except OSError as err:
        return f"the traceback could not be saved: {printable(str(err))}"
    return f"traceback in {printable(path)}"
