"""The command reference, docs/commands.md, written from the argument parsers themselves so that it
cannot drift from them:

    python -m tcgen05_conformance.cli.reference > docs/commands.md

Each subcommand gets its description, its usage, a table of its arguments with their help, and its
exit statuses; `tests/test_command_reference.py` regenerates the page and compares."""

from __future__ import annotations

import argparse
import sys

from tcgen05_conformance.cli import parser
from tcgen05_conformance.cli.common import PROG

USAGE_WIDTH = 100  # the usage lines' width, fixed so that the page does not depend on the terminal
REGENERATE = "python -m tcgen05_conformance.cli.reference > docs/commands.md"


def _subcommands(p: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser], dict[str, str]]:
    """A parser's subparsers by name, and each one's one-line help."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices), {a.dest: a.help or "" for a in action._choices_actions}
    return {}, {}


def _leaves(p: argparse.ArgumentParser, words: tuple[str, ...] = (), summary: str = "") -> list[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """Every subcommand under `p`, depth first in the parsers' order, as (words, one-line help, parser)."""
    children, helps = _subcommands(p)
    found = [(words, summary, p)] if words else []
    for name, child in children.items():
        found += _leaves(child, (*words, name), helps.get(name, ""))
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    """A help text as a paragraph of the page: one line, its first letter a capital."""
    text = _cell(text)
    return text[:1].upper() + text[1:]


def _usage(p: argparse.ArgumentParser) -> str:
    formatter = p.formatter_class(prog=p.prog, width=USAGE_WIDTH)
    formatter.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _argument(p: argparse.ArgumentParser, action: argparse.Action) -> tuple[str, str]:
    """(how the argument is written, its help with %(default)s and the like filled in)."""
    formatter = p.formatter_class(prog=p.prog, width=USAGE_WIDTH)
    if action.option_strings:
        value = "" if action.nargs == 0 else " " + formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
        written = ", ".join(f"{option}{value}" for option in action.option_strings)
    else:
        written = formatter._format_args(action, formatter._get_default_metavar_for_positional(action))
    return written, formatter._expand_help(action) if action.help else ""


def _section(words: tuple[str, ...], summary: str, p: argparse.ArgumentParser) -> list[str]:
    lines = [f"## {' '.join(words)}", "", _sentence(p.description or summary), "", "```text", _usage(p), "```", ""]
    children, helps = _subcommands(p)
    if children:
        lines += ["| subcommand | what it does |", "| --- | --- |"]
        lines += [f"| `{' '.join((*words, name))}` | {_cell(helps.get(name, ''))} |" for name in children]
        return lines + [""]
    rows = [_argument(p, a) for a in p._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if rows:
        lines += ["| argument | what it is |", "| --- | --- |", *(f"| `{_cell(w)}` | {_cell(h)} |" for w, h in rows), ""]
    if p.epilog:
        lines += [_sentence(p.epilog) + ".", ""]
    return lines


def page() -> str:
    """docs/commands.md: every subcommand of `tcgen05-conformance`, from its parser."""
    top = parser()
    leaves = _leaves(top)
    lines = ["# Command reference", "",
             f"Every subcommand of `{PROG}`, its arguments and its exit statuses. This page is generated from",
             f"the command's argument parsers (`{REGENERATE}`), and a test fails when",
             "the two differ; `--help` after any subcommand prints the same. The README lists the commands",
             "most users need.", "",
             "| subcommand | what it does |", "| --- | --- |"]
    lines += [f"| [{' '.join(words)}](#{'-'.join(words)}) | {_cell(summary)} |" for words, summary, _ in leaves]
    lines += ["", f"`{PROG}` itself takes:", "", "| argument | what it is |", "| --- | --- |"]
    lines += [f"| `{_cell(w)}` | {_cell(h)} |" for w, h in
              (_argument(top, a) for a in top._actions if a.option_strings and not isinstance(a, argparse._HelpAction))]
    lines += ["", _sentence(top.epilog) + ".", ""]
    for words, summary, p in leaves:
        lines += _section(words, summary, p)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
