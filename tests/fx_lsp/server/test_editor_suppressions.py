"""Suppressions, select/ignore and unused suppressions in the editor, through the real server:
what ``fx-lsp check`` reports is what the editor shows (a ``# noqa`` at the end of a backslash
continuation included), and both quick fixes edit the line."""

from __future__ import annotations

import pathlib

import pytest
from editor_edits import apply_workspace_edit, code_actions_for
from lsprotocol import types

from lsp_support import FxClient, new_project, session

MODEL = """from torch import nn


def helper(x):
    return len(x)


class Block(nn.Module):
    def forward(self, x):
        assert x.ndim == 2, \\
            "a matrix"  # noqa: FX001
        if x.sum() > 0:
            x = x + 1
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        y = self.block(x)
        z = x[0]  # noqa: FX002
        return y * helper(x)  # fx-lsp: ignore[FX002]


class Skipped(nn.Module):  # fx-lsp: skip
    def forward(self, x):
        return len(x)
"""


def line_of(text: str, snippet: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if snippet in line)


async def diagnostics(client: FxClient, uri: str, after: int = 0) -> list[types.Diagnostic]:
    return await client.diagnostics_for(uri, after=after)


async def apply(client: FxClient, uri: str, diagnostic: types.Diagnostic,
                title: str) -> list[types.Diagnostic]:
    """Apply the quick fix ``title`` of ``diagnostic``; the diagnostics after the re-trace."""
    (action,) = [a for a in await code_actions_for(client, uri, diagnostic) if a.title == title]
    mark = len(client.published)
    await apply_workspace_edit(client, action.edit)
    return await diagnostics(client, uri, after=mark)


@pytest.mark.slow
async def test_suppressed_unused_and_shared_failures_in_the_editor(tmp_path: pathlib.Path
                                                                   ) -> None:
    workspace = new_project(tmp_path)
    path = workspace / "net.py"
    path.write_text(MODEL)
    async with session(workspace) as client:
        uri = client.open(path)
        found = await diagnostics(client, uri)
        by_line = {(d.range.start.line, str(d.code)): d for d in found}
        # len() in helper is only reached through the ignored call: silenced.
        assert (line_of(MODEL, "return len(x)"), "FX002") not in by_line
        # Block's branch, reached from Net too: one diagnostic naming both.
        control = by_line[(line_of(MODEL, "x.sum() > 0"), "FX001")]
        assert control.message.endswith("(in Block; also reached from Net)")
        unused = by_line[(line_of(MODEL, "noqa: FX002"), "FX900")]
        assert list(unused.tags) == [types.DiagnosticTag.Unnecessary]
        assert unused.severity == types.DiagnosticSeverity.Warning
        assert not any(line == line_of(MODEL, "class Skipped") for line, _ in by_line)
        # Silenced by the noqa at the end of its continuation, which is not unused.
        assert not any(line == line_of(MODEL, "assert x.ndim") for line, _ in by_line)

        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line_of(MODEL, "class Skipped"), character=8)))
        assert hover is not None and "fx-lsp: skip" in hover.contents.value

        after = await apply(client, uri, unused, "Remove unused suppression")
        assert "z = x[0]\n" in path.read_text()
        assert not any(str(d.code) == "FX900" for d in after)

        control = next(d for d in after if str(d.code) == "FX001")
        after = await apply(client, uri, control, "Ignore FX001 on this line")
        assert "if x.sum() > 0:  # fx-lsp: ignore[FX001]\n" in path.read_text()
        assert not any(str(d.code) == "FX001" for d in after)


@pytest.mark.asyncio(loop_scope="session")
async def test_select_ignore_and_per_file_ignores_apply_in_the_editor(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    workspace = new_project(tmp_path)
    (workspace / "pyproject.toml").write_text(
        "[project]\nname = 'w'\n[tool.fx-lsp]\nselect = [\"FX0\"]\nignore = [\"FX001\"]\n"
        "per-file-ignores = {\"tests/*\" = [\"FX002\"]}\n")
    text = MODEL.replace("  # fx-lsp: ignore[FX002]", "")
    (workspace / "net.py").write_text(text)
    (workspace / "tests").mkdir()
    (workspace / "tests" / "net_copy.py").write_text(text)
    client = shared_client
    codes = {str(d.code) for d in await diagnostics(client, client.open(workspace / "net.py"))}
    assert codes == {"FX002"}  # FX001 ignored; FX900 (unused noqa) not selected
    copy = client.open(workspace / "tests" / "net_copy.py")
    assert await diagnostics(client, copy) == []
