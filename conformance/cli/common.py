"""What every subcommand shares: exit statuses, the one-line error, argument types that refuse bad
values while parsing (before any work), and the command line and machine a report records.

Kept light: importing it must not load numpy, the oracle or the device code, so `--help` is fast.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
from typing import Any, Callable, NoReturn

from tcgen05_conformance.core.inputs import MAX_EXAMPLES, MAX_SEED, MAX_TIMEOUT_S, printable

PROG = "tcgen05-conformance"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOTHING_RAN = 0, 1, 2, 3, 5
EXIT_COVERAGE_MISSED = 4  # run and report merge --require-coverage: every case passed, but a reachable value coverpoint was missed
EXIT_STATUSES = (f"exit status: {EXIT_OK} when every check that ran passed, {EXIT_FAILED} when one failed, "
                 f"{EXIT_USAGE} on bad usage or input (one line on stderr), {EXIT_INTERNAL} on an internal error, "
                 "a bug (one line on stderr naming the file that holds the traceback)")
GPU_EXIT_STATUSES = (f"{EXIT_STATUSES}, {EXIT_NOTHING_RAN} when nothing could run here: no cuda-core, no usable GPU "
                     "or not an sm_90 GPU (one line saying which)")
JOBS_LIMIT = 4096  # worker processes or batches at once
GPU_LIMIT = 4096  # --gpus N


class UsageError(Exception):
    """Bad user input: reported on one line with exit status 2."""


class NothingRan(Exception):
    """The command cannot run on this machine (no GPU, no cuda-core): one line, exit status 5, so that
    CI cannot mistake it for a pass."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit status 2), as every other error,
    and whose --help ends with the exit statuses (unless a subcommand gives its own)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("epilog", EXIT_STATUSES)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {printable(' '.join(message.split()))}\n")


DEPRECATION = "the old spelling goes in the release after 1.0 (docs/cli.md)"


class DeprecatedSpelling(argparse.Action):
    """An option's spelling before the conventions of docs/cli.md, kept for one release: it does what
    the new spelling does, and says so in one line on stderr."""

    def __init__(self, option_strings: list[str], dest: str, replacement: argparse.Action, **kwargs: Any):
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{PROG}: warning: {option_string} is deprecated, use {self.replacement.option_strings[0]}; {DEPRECATION}",
              file=sys.stderr)
        self.replacement(parser, namespace, values, option_string)


def deprecated_spelling(parser: argparse.ArgumentParser, old: str, new: argparse.Action) -> None:
    """Accept `old` as a hidden spelling of the option `new` (the action add_argument returned)."""
    parser.add_argument(old, action=DeprecatedSpelling, replacement=new, dest=new.dest, nargs=new.nargs, type=new.type,
                        choices=new.choices, metavar=new.metavar, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


class JsonSwitch(argparse.Action):
    """`--json`, the switch that prints a command's report as JSON on stdout, in a command where it
    took a FILE before the conventions of docs/cli.md: `--json FILE` still writes the report to
    FILE, as `--out FILE` does, saying in one line on stderr that this spelling is deprecated."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs="?", const=True, default=False, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values is True:
            namespace.json = True
            return
        try:
            namespace.out = output_file(values)
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentError(self, str(e)) from None
        print(f"{PROG}: warning: --json FILE is deprecated, use --out FILE (--json alone prints the report as JSON); "
              f"{DEPRECATION}", file=sys.stderr)


def backend_spec(text: str) -> str:
    """A backend spec (`oracle`, `sim:CMD`, `MODULE:FACTORY`, ...), refused while parsing when it
    names none (`tcgen05_conformance.harness.backends.registry`, imported only when one is given)."""
    from tcgen05_conformance.harness.backends.registry import spec_problem

    problem = spec_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


PROFILE_FILE_HELP = "or a profile file that `numerics infer --out` wrote (docs/numerics.md, \"Inferring a profile\")"


def profile_spec(text: str) -> str:
    """A numeric profile: a name (`exact`, `sm_90a`, an instruction variant such as
    `sm_90a.mma_sync`) or a profile file, loaded here so that a bad one is refused while parsing
    (the model is imported only for a file)."""
    from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES

    if text.split(".")[0] in PROFILE_NAMES and not text.endswith(".json"):
        from tcgen05_conformance.oracles.numerics.profiles import PROFILES

        if text in PROFILES:
            return text
        raise argparse.ArgumentTypeError(f"unknown profile {text!r}; profiles: {', '.join(PROFILES)}, "
                                         "or a profile JSON file")
    from tcgen05_conformance.oracles.numerics.profiles import get_profile

    try:
        get_profile(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def coverage_missed_line(values: dict) -> str:
    """The last line of a run (or merge) that every case passed but --require-coverage fails: why the
    exit status is not 0, since the line before it says that no case failed."""
    missed = len(values["missed"])
    return (f"exit status {EXIT_COVERAGE_MISSED}: --require-coverage, and {missed} reachable value "
            f"coverpoint{'s were' if missed != 1 else ' was'} missed")


def command_line(args: argparse.Namespace) -> str:
    """The command as given, as reports record it (quoted so that it can be run again)."""
    return shlex.join([PROG, *args.argv])


def machine() -> str:
    """The host a measurement ran on, in one line."""
    return f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})"


def print_json(data: object) -> None:
    print(json.dumps(data, indent=1))


def write_json(path: str, data: object) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def require_out(args: argparse.Namespace) -> None:
    """A command whose report is its product (hours of GPU time) refuses to start without --out FILE."""
    if not args.out:
        raise UsageError("give --out FILE, where the report goes (--json also prints it)")


def write_report(args: argparse.Namespace, report: dict) -> None:
    """The report to --out FILE when given, and as JSON on stdout with --json."""
    if args.out:
        write_json(args.out, report)
    if args.json:
        print_json(report)


# --- argument types: each raises argparse.ArgumentTypeError, which Parser reports in one line -------


def query(text: str):
    """A case selection query (`tcgen05_conformance.harness.selection`), refused while parsing when it cannot be read."""
    from tcgen05_conformance.harness.selection import QueryError, parse

    try:
        return parse(text)
    except QueryError as e:
        raise argparse.ArgumentTypeError(str(e)) from None



def count(minimum: int, limit: int, what: str = "count") -> Callable[[str], int]:
    """A whole number from `minimum` to `limit`, written as digits or in scientific notation (1e7)."""

    def parse(text: str) -> int:
        try:
            value = float(text) if any(ch in text for ch in ".eE") else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what} (a whole number such as 1000 or 1e6)") from None
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        if not minimum <= value <= limit:
            raise argparse.ArgumentTypeError(f"{text} is out of range: from {minimum:,} to {limit:,}")
        return int(value)

    return parse


def seed(text: str) -> int:
    """A generation seed, 0 <= S <= MAX_SEED (2^32 - 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (a whole number from 0 to 2^32 - 1)") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text} is out of range: seeds go from 0 to 2^32 - 1")
    return value


examples = count(1, MAX_EXAMPLES, "program count")


def seconds(text: str) -> float:
    """A time limit in seconds, more than 0 and at most MAX_TIMEOUT_S (a day)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_TIMEOUT_S:  # nan too
        raise argparse.ArgumentTypeError(f"{text} is out of range: more than 0 and at most {MAX_TIMEOUT_S:g} s")
    return value


def shard(text: str) -> tuple[int, int]:
    """A shard I/N of a run: 1 <= I <= N <= 10^6, e.g. 2/3."""
    index, slash, total = text.partition("/")
    try:
        value = (int(index), int(total)) if slash else None
    except ValueError:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard (I/N, e.g. 2/3)")
    if not 1 <= value[0] <= value[1] <= 10**6:
        raise argparse.ArgumentTypeError(f"{text}: a shard I/N needs 1 <= I <= N <= 1,000,000")
    return value


def gpus(text: str) -> int | None:
    """`--gpus N|all`: a GPU count, or "all" (None)."""
    return None if text == "all" else count(1, GPU_LIMIT, "GPU count")(text)


def output_file(text: str) -> str:
    """A file to write: its folder must exist and it must not be a folder itself."""
    folder = os.path.dirname(text) or "."
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: the folder {folder} is not writable")
    return text


def output_folder(text: str) -> str:
    """A folder to write into, created when needed: it must not be an existing file."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    return text


def visible_gpus(requested: int | None) -> list[str]:
    """The GPUs `--gpus` asks for, one CUDA_VISIBLE_DEVICES value each (a worker process pinned to
    one sees that GPU alone): the first `requested` of those `tcgen05_conformance.device.launch.visible_devices` lists,
    or all of them for None. UsageError when fewer are visible, NothingRan when no CUDA driver is."""
    from tcgen05_conformance.device.launch import GpuUnavailable, visible_devices

    try:
        visible = visible_devices()
    except GpuUnavailable as e:
        raise NothingRan(str(e)) from None
    if requested is not None and requested > len(visible):
        raise UsageError(f"--gpus {requested}: only {len(visible)} GPU{'s are' if len(visible) != 1 else ' is'} visible")
    return visible[:requested] if requested is not None else visible


def hopper_gpu_or_skip(command: str, target: str = "sm_90a"):
    """The GPU a device tool runs on (`tcgen05_conformance.device.target_gpu`: sm_90 unless `target` says
    otherwise), or NothingRan saying which of cuda-core, a GPU or a GPU of the target this machine lacks."""
    from tcgen05_conformance.device.target_gpu import hopper_gpu
    from tcgen05_conformance.device.launch import GpuUnavailable

    try:
        return hopper_gpu(command, target)
    except GpuUnavailable as e:
        raise NothingRan(str(e)) from None
