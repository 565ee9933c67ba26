"""The command line's options, generated: each command's table of options, from the argument
parser itself (``fx_lsp.cli.arguments.build_parser``), put in docs/cli.md as the site is built
where the page says ``<!-- options of fx-lsp check -->``. So no option is documented by hand,
and a new one, or a changed help text, is on the page at the next build."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # the checkout documented, whichever fx-lsp is installed
    sys.path.insert(0, str(REPO_ROOT))

from fx_lsp.cli.arguments import build_parser  # noqa: E402

#: Where a command's table goes in a page: ``<!-- options of fx-lsp check -->``.
MARKER = re.compile(r"^<!-- options of (fx-lsp(?: [\w-]+)*) -->$", re.MULTILINE)


def commands(parser: argparse.ArgumentParser | None = None,
             name: str = "fx-lsp") -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its command line (``fx-lsp check``), the program's first."""
    parser = parser or build_parser()
    found = {name: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                found |= commands(subparser, f"{name} {command}")
    return found


def _invocation(action: argparse.Action) -> str:
    """How an option or argument is written: ``PATH...``, ``--output-file PATH``,
    ``--output-format {json,sarif}``, ``--format``, each spelling in a code span."""
    if action.choices is not None and action.metavar is None:
        value = "{" + ",".join(action.choices) + "}"
    else:
        value = str(action.metavar or action.dest.upper())
    if not action.option_strings:
        return f"`{value}...`" if action.nargs in ("+", "*") else f"`{value}`"
    takes_value = action.nargs != 0
    spelled = [f"`{action.option_strings[0]} {value}`" if takes_value
               else f"`{action.option_strings[0]}`"]
    return ", ".join(spelled + [f"`{option}`" for option in action.option_strings[1:]])


def options_table(command: str) -> str:
    """The command's options and arguments, one row each, with their help text."""
    parser = commands()[command]
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if not action.help:
            raise ValueError(f"{command}: {action.option_strings or action.dest} has no help")
        meaning = " ".join(action.help.split()).replace("|", "\\|")
        rows.append(f"| {_invocation(action)} | {meaning} |")
    return "\n".join(["| option | meaning |", "|---|---|", *rows]) + "\n"


def with_options(page: str) -> str:
    """``page`` with each ``<!-- options of ... -->`` line replaced by that command's table."""
    known = commands()

    def table(marker: re.Match[str]) -> str:
        if marker.group(1) not in known:
            raise ValueError(f"{marker.group(0)}: no such command (known: {', '.join(known)})")
        return options_table(marker.group(1)).rstrip("\n")

    return MARKER.sub(table, page)
