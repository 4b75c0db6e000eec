"""The command line's conventions (docs/cli.md): help on every argument, the spellings before 1.0
kept as deprecated aliases, last lines that say why the exit status is not 0, report files readable
by all, and shell completion generated from the parsers."""

import argparse
import json
import os
import subprocess

import pytest

from tcgen05_conformance.cli import main, parser
from tcgen05_conformance.cli.common import DeprecatedSpelling
from tcgen05_conformance.cli.completion import bash, command_tree, fish, zsh
from tcgen05_conformance.harness.report import ReportDir


def _parsers(p: argparse.ArgumentParser, path: str = ""):
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}".strip())


def test_every_argument_and_subcommand_of_every_parser_has_help():
    missing = []
    for path, p in _parsers(parser()):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                missing += [f"{path} {c.dest}".strip() for c in a._choices_actions if not c.help]
            elif not isinstance(a, DeprecatedSpelling) and not a.help:
                missing.append(f"{path or PROG_TOP}: {'/'.join(a.option_strings) or a.dest}")
    assert missing == []


PROG_TOP = "tcgen05-conformance"


# (the spelling before 1.0, the convention's): each pair must parse to the same arguments
SPELLINGS = [
    (["run", "--examples", "7"], ["run", "--count", "7"]),
    (["run", "--report-dir", "some/dir"], ["run", "--out", "some/dir"]),
    (["export", "--examples", "7", "--out", "d"], ["export", "--count", "7", "--out", "d"]),
    (["legality", "--examples", "7"], ["legality", "--count", "7"]),
    (["lint-agreement", "--arch", "sm_100a", "--examples", "7"], ["lint-agreement", "--arch", "sm_100a", "--count", "7"]),
    (["mutants", "--examples", "7"], ["mutants", "--count", "7"]),
    (["fuzz", "--examples", "7"], ["fuzz", "--count", "7"]),
    (["campaign", "--programs", "7"], ["campaign", "--count", "7"]),
    (["campaign", "--cases", "d"], ["campaign", "--out-cases", "d"]),
    (["campaign", "--json", "r.json"], ["campaign", "--out", "r.json"]),
    (["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--vectors", "7"],
     ["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--count", "7"]),
    (["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--json", "r.json"],
     ["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--out", "r.json"]),
    (["numerics", "catch-rates", "--n", "7"], ["numerics", "catch-rates", "--count", "7"]),
    (["numerics", "measure", "--json", "r.json"], ["numerics", "measure", "--out", "r.json"]),
    (["numerics", "measure", "--samples", "s.npz"], ["numerics", "measure", "--out-samples", "s.npz"]),
    (["numerics", "measure", "--markdown", "t.md"], ["numerics", "measure", "--out-markdown", "t.md"]),
    (["numerics", "sweep", "--parameter", "k_step", "--values", "8", "--json", "r.json"],
     ["numerics", "sweep", "--parameter", "k_step", "--values", "8", "--out", "r.json"]),
    (["probe", "--backend", "oracle", "--report-dir", "d"], ["probe", "--backend", "oracle", "--out", "d"]),
    (["probe", "--backend", "oracle", "--write-ledger", "l.md"], ["probe", "--backend", "oracle", "--out-ledger", "l.md"]),
]


@pytest.mark.parametrize("old, new", SPELLINGS, ids=[" ".join(old) for old, _ in SPELLINGS])
def test_a_spelling_before_1_0_still_works_and_says_it_is_deprecated(old, new, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert vars(parser().parse_args(old)) == vars(parser().parse_args(new))
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1  # the old spelling's line; the new one says nothing
    old_spelling = next(a for a in old if a.startswith("--") and a not in new or a == "--json")
    assert err[0].startswith("tcgen05-conformance: warning: ") and old_spelling in err[0] and "deprecated" in err[0]
    assert next(a for a in new if a.startswith("--") and a not in old) in err[0]


@pytest.mark.parametrize("argv", [["campaign", "--json"], ["numerics", "measure", "--json"],
                                  ["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--json"],
                                  ["numerics", "sweep", "--parameter", "k_step", "--values", "8", "--json"]])
def test_json_alone_is_the_switch_that_prints_json(argv, capsys):
    args = parser().parse_args(argv)
    assert args.json is True and args.out is None
    assert capsys.readouterr().err == ""


def test_json_prints_the_report_on_stdout_and_out_writes_it_to_a_file(tmp_path, capsys):
    argv = ["numerics", "agree", "--backend", "oracle", "--profile", "exact", "--count", "2", "--formats", "f16"]
    assert main([*argv, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # the report alone, no table
    assert printed["profile"] == "exact" and printed["mismatches"] == 0
    report = tmp_path / "agree.json"
    assert main([*argv, "--out", str(report)]) == 0
    assert "| pair " in capsys.readouterr().out and json.loads(report.read_text())["discriminating"] == printed["discriminating"]


def test_a_command_whose_report_is_its_product_refuses_to_start_without_out(capsys):
    assert main(["numerics", "measure", "--json"]) == 2
    assert "--out FILE" in capsys.readouterr().err


def test_run_require_coverage_ends_saying_why_it_exits_4(tmp_path, capsys):
    oracle_as_a_plugin = "tcgen05_conformance.harness.backends.oracle:OracleBackend"  # a backend under test that passes
    assert main(["run", "--backend", oracle_as_a_plugin, "--count", "3", "--out", str(tmp_path), "--require-coverage"]) == 4
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("No case failed")
    assert lines[-1].startswith("exit status 4: --require-coverage") and "value coverpoints were missed" in lines[-1]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_report_files_are_written_readable_as_the_umask_allows(umask, mode, tmp_path):
    old = os.umask(umask)
    try:
        folder = ReportDir(str(tmp_path))
        path = folder.write("summary.json", "{}\n")
        case = folder.write("cases/0123.json", "{}\n")
        folder.close()
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == mode and os.stat(case).st_mode & 0o777 == mode


def _complete(script: str, lines: list[tuple[list[str], str]]) -> list[str]:
    """What bash completes for each (words, the word being typed), one line of replies each."""
    checks = "".join(f"COMP_WORDS=({' '.join(repr(w) for w in [*words, typed])}); COMP_CWORD={len(words)}; "
                     "COMPREPLY=(); _tcgen05_conformance; echo \"${COMPREPLY[*]}\"\n" for words, typed in lines)
    done = subprocess.run(["bash", "--norc", "--noprofile"], input=script + checks, capture_output=True, text=True,
                          check=True)
    assert done.stderr == ""
    return done.stdout.splitlines()


def test_bash_completion_completes_every_subcommand_and_option_of_every_parser():
    commands = command_tree(parser())
    asks = []
    for c in commands:
        words = ["tcgen05-conformance", *c.path.split()]
        asks += [(words, "-"), (words, "")]
    replies = iter(_complete(bash(commands), asks))
    for c in commands:
        options, words = next(replies).split(), next(replies).split()
        assert sorted(options) == sorted(s for spellings, _, _ in c.options for s in spellings), c.path
        assert sorted(words) == sorted([*c.subcommands, *c.positional_values]), c.path
    top = commands[0]
    assert {"run", "replay", "export", "completion"} <= set(top.subcommands)
    run = next(c for c in commands if c.path == "run")
    assert "--require-coverage" in [s for spellings, _, _ in run.options for s in spellings]
    assert not any(s in ("--examples", "--report-dir") for spellings, _, _ in run.options for s in spellings)


def test_bash_completion_of_prefixes_and_option_values():
    script = bash(command_tree(parser()))
    assert _complete(script, [
        (["tcgen05-conformance"], "rep"),
        (["tcgen05-conformance", "run", "--seed", "3"], "--req"),
        (["tcgen05-conformance", "report", "merge"], "--o"),
        (["tcgen05-conformance", "decode", "idesc", "0x1", "--kind"], "mx"),
        (["tcgen05-conformance", "completion"], "f"),
    ]) == ["replay report", "--require-coverage", "--out", "mxf8f6f4 mxf4 mxf4nvf4", "fish"]


def test_the_completion_command_prints_the_script_of_each_shell(capsys):
    commands = command_tree(parser())
    for shell, script in (("bash", bash), ("zsh", zsh), ("fish", fish)):
        assert main(["completion", shell]) == 0
        assert capsys.readouterr().out == script(commands)
    assert zsh(commands).startswith("#compdef tcgen05-conformance\n") and "bashcompinit" in zsh(commands)
    lines = fish(commands).splitlines()
    for name in commands[0].subcommands:
        assert any(f" -a {name} -d " in line and "__fish_use_subcommand" in line for line in lines), name
    assert any("__fish_seen_subcommand_from report; and __fish_seen_subcommand_from merge" in line and "-l out" in line
               for line in lines)
