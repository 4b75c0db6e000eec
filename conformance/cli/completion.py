"""`completion bash|zsh|fish`: a shell completion script, generated from the parsers of every
subcommand (their subcommands, options and the values an option or argument chooses from), so that
it cannot drift from the command line. The script is static text: completing runs no Python."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from tcgen05_conformance.cli.common import EXIT_OK, PROG, DeprecatedSpelling

FUNCTION = "_tcgen05_conformance"  # the bash function's name (PROG is not a shell name)
DESCRIPTION_LIMIT = 70  # characters of an option's help that fish shows beside it


@dataclass
class Command:
    """One parser of the command line: its path of subcommand names ("" is the top), its
    subcommands with their help, its options (every spelling but the deprecated ones) with their
    help and the values they choose from, and the values of its positional arguments."""

    path: str
    subcommands: dict[str, str] = field(default_factory=dict)
    options: list[tuple[list[str], str, list[str]]] = field(default_factory=list)
    positional_values: list[str] = field(default_factory=list)


def command_tree(parser: argparse.ArgumentParser, path: str = "") -> list[Command]:
    """Every parser under `parser` (itself first), as Commands."""
    command, below = Command(path), []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                command.subcommands[name] = helps.get(name, "")
                below += command_tree(sub, f"{path} {name}".strip())
        elif isinstance(action, DeprecatedSpelling):
            continue
        elif action.option_strings:
            choices = [str(c) for c in action.choices] if action.choices and action.nargs != 0 else []
            command.options.append((list(action.option_strings), action.help or "", choices))
        elif action.choices:
            command.positional_values += [str(c) for c in action.choices]
    return [command, *below]


def _case(commands: list[Command], words: Callable[[Command], list[str]]) -> str:
    """A bash `case` on the command path, echoing `words(command)` for each command that has some."""
    arms = [f"        {shlex.quote(c.path)}) echo {shlex.quote(' '.join(words(c)))} ;;" for c in commands if words(c)]
    return "    case \"$1\" in\n" + "\n".join(arms) + "\n    esac"


def bash(commands: list[Command]) -> str:
    """The bash script: `source` it, or put it in ~/.local/share/bash-completion/completions/."""
    choices = [f"        {shlex.quote(c.path + '|' + spelling)}) echo {shlex.quote(' '.join(values))} ;;"
               for c in commands for spellings, _, values in c.options if values for spelling in spellings]
    return f"""# bash completion for {PROG}, generated from its parsers by `{PROG} completion bash`
{FUNCTION}_subcommands() {{
{_case(commands, lambda c: list(c.subcommands))}
}}
{FUNCTION}_words() {{
{_case(commands, lambda c: [*c.subcommands, *c.positional_values])}
}}
{FUNCTION}_options() {{
{_case(commands, lambda c: [s for spellings, _, _ in c.options for s in spellings])}
}}
{FUNCTION}_values() {{
    case "$1|$2" in
{chr(10).join(choices)}
    esac
}}
{FUNCTION}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" path="" word i values
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if [[ "$word" != -* && " $({FUNCTION}_subcommands "$path") " == *" $word "* ]]; then
            path="${{path:+$path }}$word"
        fi
    done
    values="$({FUNCTION}_values "$path" "$prev")"
    if [[ -n "$values" ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
    elif [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$({FUNCTION}_options "$path")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$({FUNCTION}_words "$path")" -- "$cur"))
    fi
}}
complete -o default -F {FUNCTION} {PROG}
"""


def zsh(commands: list[Command]) -> str:
    """The zsh script: the bash one through zsh's bashcompinit."""
    return f"#compdef {PROG}\nautoload -U +X bashcompinit && bashcompinit\n{bash(commands)}"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _described(text: str) -> str:
    first = text.split("; ")[0].split(": ")[0] if len(text) > DESCRIPTION_LIMIT else text
    return _fish_quote(first[:DESCRIPTION_LIMIT])


def fish(commands: list[Command]) -> str:
    """The fish script: `source` it, or put it in ~/.config/fish/completions/tcgen05-conformance.fish."""
    lines = [f"# fish completion for {PROG}, generated from its parsers by `{PROG} completion fish`"]
    for c in commands:
        names = c.path.split()
        seen = "; and ".join(f"__fish_seen_subcommand_from {name}" for name in names)
        here = seen or "__fish_use_subcommand"
        if c.subcommands:
            condition = (f"{seen}; and not __fish_seen_subcommand_from {' '.join(c.subcommands)}" if seen
                         else "__fish_use_subcommand")
            lines += [f"complete -c {PROG} -n {_fish_quote(condition)} -a {name} -d {_described(text)}"
                      for name, text in c.subcommands.items()]
        if c.positional_values:
            lines.append(f"complete -c {PROG} -n {_fish_quote(here)} -a {_fish_quote(' '.join(c.positional_values))}")
        for spellings, text, values in c.options:
            flags = " ".join(f"-l {s[2:]}" if s.startswith("--") else f"-s {s[1:]}" for s in spellings)
            takes = f" -xa {_fish_quote(' '.join(values))}" if values else ""
            lines.append(f"complete -c {PROG} -n {_fish_quote(here)} {flags}{takes} -d {_described(text)}")
    return "\n".join(lines) + "\n"


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}


def add(sub) -> None:
    com = sub.add_parser(
        "completion", help="print a shell completion script for bash, zsh or fish",
        description=f"Print a completion script for SHELL, generated from {PROG}'s parsers. bash: "
                    f"`source <({PROG} completion bash)` in ~/.bashrc, or save it as "
                    f"~/.local/share/bash-completion/completions/{PROG}; zsh: save it as _{PROG} in a folder of "
                    f"$fpath; fish: save it as ~/.config/fish/completions/{PROG}.fish.")
    com.add_argument("shell", choices=tuple(SHELLS), help="the shell the script is for")
    com.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    print(SHELLS[args.shell](command_tree(args.build_parser())), end="")
    return EXIT_OK
