"""The information codes in the editor, through the real server: FX104 on a class traced with
guessed arguments, FX103 on one that was not traced (with ``showNotTraced``), each silenced by
a suppression comment or the project's ``ignore`` like any other code."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from lsp_support import new_project, session

MODEL = """from torch import nn


class NeedsArgs(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)


class NeedsConfig(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.hidden, config.hidden)

    def forward(self, x):
        return self.proj(x)
"""


def line_of(text: str, snippet: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if snippet in line)


def codes(diagnostics: list[types.Diagnostic]) -> set[str]:
    return {str(d.code) for d in diagnostics}


@pytest.mark.slow
async def test_fx104_shows_on_guessed_arguments_until_a_comment_silences_it(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    path = workspace / "net.py"
    path.write_text(MODEL)
    async with session(workspace) as client:
        uri = client.open(path)
        found = await client.diagnostics_for(uri, version=1)
        (note,) = [d for d in found if d.code == "FX104"]
        assert note.severity == types.DiagnosticSeverity.Information
        assert note.range.start.line == line_of(MODEL, "class NeedsArgs")
        assert note.message.startswith("NeedsArgs was traced with guessed arguments: width=")
        assert note.code_description.href.endswith("/codes/FX104/")
        assert "FX103" not in codes(found)  # showNotTraced is off

        silenced = MODEL.replace("class NeedsArgs(nn.Module):",
                                 "class NeedsArgs(nn.Module):  # fx-lsp: ignore[FX104]")
        version = client.replace_text(uri, silenced)
        path.write_text(silenced)
        client.save(uri)
        after = await client.diagnostics_for(uri, version=version)
        # Silenced, and the comment silences something: it is not an unused suppression.
        assert not codes(after) & {"FX104", "FX900"}


@pytest.mark.slow
async def test_the_project_ignores_fx104_and_show_not_traced_shows_fx103(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    (workspace / "pyproject.toml").write_text(
        "[project]\nname = 'w'\n[tool.fx-lsp]\nignore = [\"FX104\"]\n")
    path = workspace / "net.py"
    path.write_text(MODEL)
    async with session(workspace, options={"fxLsp": {"showNotTraced": True}}) as client:
        found = await client.diagnostics_for(client.open(path), version=1)
        assert "FX104" not in codes(found)
        (not_traced,) = [d for d in found if d.code == "FX103"]
        assert not_traced.severity == types.DiagnosticSeverity.Information
        assert not_traced.range.start.line == line_of(MODEL, "class NeedsConfig")
        assert not_traced.message.startswith("NeedsConfig was not traced: ")
