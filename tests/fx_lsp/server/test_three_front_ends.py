"""One workspace through the three front ends, each holding its own engine session: the command
line's JSON report (``fx-lsp check --format json``), the MCP server's ``check`` tool (a real
``fx-lsp mcp`` over stdio) and a real language server's published diagnostics (over stdio)
give the same verdicts: the same codes on the same lines, for the same classes."""

from __future__ import annotations

import json
import pathlib
import tempfile
from typing import Any

import pytest

from cli_support import fx_lsp
from lsp_support import session

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")

from mcp_sessions import mcp_session  # noqa: E402  (needs the mcp extra)

#: Two classes that fail in different ways and one that traces: each front end must tell them
#: apart the same way.
MODELS = """import torch
from torch import nn


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)


class Branches(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))
"""

Verdict = tuple[str, int, tuple[str, ...]]


def _reported(report: dict[str, Any]) -> set[Verdict]:
    """(code, line, classes) of each problem of a JSON report."""
    return {(problem["code"], problem["line"], tuple(problem["classes"]))
            for problem in report["diagnostics"]}


def _statuses(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(class, mode, status) of each class of a JSON report."""
    return {(module["class"], module["mode"], module["status"]) for module in report["modules"]}


def _classes_by_line(path: pathlib.Path) -> dict[int, str]:
    """Each line of the file -> the class whose body holds it."""
    owner, lines = "", {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if text.startswith("class "):
            owner = text.split()[1].split("(")[0]
        lines[number] = owner
    return lines


@pytest.mark.slow  # two servers of their own and a command line, each tracing the workspace
async def test_the_cli_the_mcp_server_and_the_language_server_agree(
        tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    models = workspace / "models.py"
    models.write_text(MODELS)

    printed = fx_lsp("check", "--format", "json", "--no-cache", "models.py", cwd=workspace)
    assert printed.returncode == 1, printed.stderr
    report = json.loads(printed.stdout)
    command_line = _reported(report)
    assert {code for code, _, _ in command_line} == {"FX001", "FX002"}, command_line
    assert ("Fine", "fx", "traceable") in _statuses(report)

    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors) as agent:
            checked = await agent.call_tool("check", {"paths": ["models.py"]})
    assert not checked.is_error, checked.content
    assert checked.structured_content is not None
    assert _reported(checked.structured_content) == command_line
    assert _statuses(checked.structured_content) == _statuses(report)

    owners = _classes_by_line(models)
    async with session(workspace) as client:
        uri = client.open(models)
        diagnostics = await client.settled_diagnostics(uri, version=1, timeout=120)
    # The editor adds a summary on the name of a class that fails outside its body (none
    # here); the problems are the report's.
    editor = {(str(d.code), d.range.start.line + 1, (owners[d.range.start.line + 1],))
              for d in diagnostics if not d.message.startswith(tuple(
                  f"{name} is not" for name in ("UsesLen", "Branches", "Fine")))}
    assert editor == command_line
