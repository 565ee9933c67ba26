"""Shapes in the editor through the real server: inlay hints at the end of the lines of
``forward``, shapes in hovers, an FX300 diagnostic, and the setting that turns hints off."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from lsp_support import FxClient, new_project, session

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)
        self.tail = nn.Linear(8, 2)

    def forward(self, x):
        y = self.conv(x)
        z = y.mean((2, 3))
        ids = z.argmax(-1)
        return self.tail(self.head(z)), ids
"""


def line_of(snippet: str) -> int:
    return next(i for i, line in enumerate(MODEL.splitlines()) if snippet in line)


async def hints(client: FxClient, uri: str) -> dict[int, types.InlayHint]:
    found = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0),
                          end=types.Position(line=len(MODEL.splitlines()), character=0))))
    return {hint.position.line: hint for hint in found or []}


@pytest.mark.asyncio(loop_scope="session")
async def test_inlay_hints_hover_and_a_shape_error(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    workspace = new_project(tmp_path)
    path = workspace / "net.py"
    path.write_text(MODEL)
    client = shared_client
    uri = client.open(path)
    diagnostics = await client.diagnostics_for(uri)
    (error,) = [d for d in diagnostics if str(d.code) == "FX300"]
    assert error.range.start.line == line_of("return self.tail")
    assert error.severity == types.DiagnosticSeverity.Warning  # inferred inputs
    assert "`self.tail` (Linear) on float32[2, 4] fails" in error.message

    found = await hints(client, uri)
    conv = found[line_of("y = self.conv(x)")]
    assert conv.label == "[2, 8, 32, 32]" and conv.kind == types.InlayHintKind.Type
    assert conv.position.character == len(MODEL.splitlines()[line_of("y = self.conv")])
    assert found[line_of("z = y.mean")].label == "[2, 8]"
    assert found[line_of("ids = z.argmax")].label == "int64[2]"  # not the inputs' dtype

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line_of("class Net"), character=7)))
    assert "Inputs `x: float32[2, 3, 32, 32]` (inferred" in hover.contents.value
    on_line = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line_of("z = y.mean"), character=9)))
    assert "| `float32[2, 8]` |" in on_line.contents.value


@pytest.mark.slow
async def test_the_setting_turns_inlay_hints_off(tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    path = workspace / "net.py"
    path.write_text(MODEL)
    async with session(workspace, options={"shapeHints": False}) as client:
        uri = client.open(path)
        await client.diagnostics_for(uri)
        assert await hints(client, uri) == {}
