"""docs/commands.md, the command reference, is what `python -m tcgen05_conformance.cli.reference`
writes from the argument parsers: the committed page equals a fresh one, and the page names every
subcommand and every argument the parsers take, each in its own section."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from tcgen05_conformance.cli import parser
from tcgen05_conformance.cli.reference import REGENERATE, page

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ROOT / "docs" / "commands.md"


def test_docs_commands_md_is_the_page_the_parsers_give():
    assert COMMANDS.read_text(encoding="utf-8") == page(), f"docs/commands.md is out of step with the parsers: run {REGENERATE}"


def test_the_module_prints_the_page():
    done = subprocess.run([sys.executable, "-m", "tcgen05_conformance.cli.reference"], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout == page() and done.stderr == ""


def _walk(p: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """Every subcommand's words and parser, found here from argparse's own structures."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*words, name), child
                yield from _walk(child, (*words, name))


def test_the_page_has_a_section_per_subcommand_holding_each_of_its_arguments():
    text = page()
    sections = dict(re.findall(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL))
    found = list(_walk(parser()))
    assert len(found) > 30 and sorted(sections) == sorted(" ".join(words) for words, _ in found)
    for words, p in found:
        section = sections[" ".join(words)]
        assert f"usage: tcgen05-conformance {' '.join(words)}" in section
        for action in p._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                written = rf"^\| `[^`]*(?<![\w-]){re.escape(option)}(?![\w-])[^`]*` \|"  # in the first cell of a row
                assert re.search(written, section, re.MULTILINE), f"{' '.join(words)}: {option}"
            if isinstance(action, argparse._SubParsersAction):
                assert all(f"| `{' '.join((*words, name))}` |" in section for name in action.choices)
    assert "| `--version` |" in text
