"""The README is for users: at most 150 lines; its first screen says what has and has not run the
project (Blackwell: never); its quick-start test command is the one CI runs; and every page of
docs/ it links to exists, every page of docs/ being linked from it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_at_most_150_lines():
    assert len(README.splitlines()) <= 150


def test_the_first_screen_says_who_it_is_for_and_that_no_blackwell_gpu_has_run_it():
    first_screen = "\n".join(README.splitlines()[:40])
    assert "Who it is for" in first_screen and "`tcgen05-conformance lint`" in first_screen and "`tox -e device`" in first_screen
    assert re.search(r"Blackwell GPUs \(B200, B300\) \| \*\*never\*\*", first_screen)
    assert re.search(r"Hopper silicon \(H100, H200\) \| yes", first_screen)
    assert re.search(r"The assembler \(ptxas, in-process\) for sm_100a, sm_103a, sm_90a \| yes", first_screen)


def test_the_quick_start_is_two_commands_the_second_the_test_command_ci_runs():
    block = re.search(r"## Quick start\n.*?```sh\n(.*?)```", README, re.DOTALL).group(1).splitlines()
    assert len(block) == 2
    assert block[0].startswith("python3 -m venv .venv && .venv/bin/pip install") and block[0].endswith(".venv/bin/tcgen05-conformance run")
    assert block[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_readme_links_every_page_of_docs_and_only_pages_that_exist():
    named = set(re.findall(r"`(docs/[\w.-]+\.md)`", README))
    assert named == {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    paths = re.findall(r"`((?:reports|docs)/[\w./-]+)`", README)
    assert len(paths) > len(named) and [path for path in paths if not (ROOT / path).exists()] == []
