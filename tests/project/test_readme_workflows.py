"""The GitHub Actions workflows of the CI section of docs/cli.md: every ``fx-lsp`` command their
steps run is one fx-lsp's own argument parser accepts, so that a flag renamed or dropped
cannot leave a workflow users copy failing."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
import yaml

from fx_lsp.cli.arguments import build_parser

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
#: A workflow expression (``${{ matrix.shard }}``, ``${{ github.base_ref }}``) as the runner
#: would have put it: a number fits every place the page uses one.
EXPRESSION = re.compile(r"\$\{\{[^}]*\}\}")


def ci_section() -> str:
    page = CLI_PAGE.read_text(encoding="utf-8")
    return page.split("\n## CI\n", 1)[1].split("\n## ", 1)[0]


def workflow_commands() -> list[str]:
    """The ``fx-lsp`` command lines of every step of every workflow in the CI section."""
    commands = []
    for block in re.findall(r"```yaml\n(.*?)```", ci_section(), re.S):
        workflow = yaml.safe_load(block)
        if not isinstance(workflow, dict) or "jobs" not in workflow:
            continue  # pre-commit's configuration, not a workflow
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                commands += [line.strip() for line in str(step.get("run", "")).splitlines()
                             if line.strip().startswith("fx-lsp ")]
    return commands


def test_the_ci_section_runs_the_commands_it_documents() -> None:
    runs = " ".join(workflow_commands())
    for command in ("fx-lsp check --shard", "fx-lsp merge", "--show-fixed-baseline",
                    "fx-lsp diff --output-format markdown", "--fail-on regression"):
        assert command in runs, command


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of the parser and of its subcommands, spelled out."""
    found = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                found |= option_strings(subparser)
    return found


@pytest.mark.parametrize("command", workflow_commands())
def test_a_workflow_command_parses(command: str) -> None:
    argv = shlex.split(EXPRESSION.sub("1", command))[1:]
    parser = build_parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            parser.parse_args(argv)
    except SystemExit:
        pytest.fail(f"{command}: {errors.getvalue().strip()}")
    # argparse takes a prefix of an option (--show-fixed): the page spells each out.
    spelled = {word.split("=")[0] for word in argv if word.startswith("--")}
    assert spelled <= option_strings(parser), command
