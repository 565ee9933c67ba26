"""Capture modes in the editor: with a toy mode registered (``FX_LSP_EXTRA_CAPTURES``, see
``tests/support/plain_capture.py``) and ``fxLsp.modes`` naming it, a real server's hover on a class
names each mode's verdict, its code lens likewise, and a failure of the toy mode is a
diagnostic whose source says the mode."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from lsp_support import new_project, session

MODELS = """\
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x.relu()


class Lengthy(nn.Module):
    def forward(self, x):
        return x * len(x)
"""


async def _hover(client, uri: str, line: int, character: int) -> str:
    result = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character)))
    assert result is not None
    return result.contents.value


@pytest.mark.slow
async def test_hover_shows_each_modes_verdict(tmp_path: pathlib.Path, toy_mode: None) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    lines = MODELS.splitlines()
    async with session(workspace, options={"modes": ["fx", "plain"]}) as client:
        uri = client.open(models)
        published = await client.settled_diagnostics(uri, version=1)

        net = lines.index("class Net(nn.Module):")
        on_net = await _hover(client, uri, net, 7)
        assert on_net.startswith("fx: traceable · plain: traceable\n\n"), on_net
        assert "**Net** is FX-traceable" in on_net
        lengthy = lines.index("class Lengthy(nn.Module):")
        on_lengthy = await _hover(client, uri, lengthy, 7)
        assert on_lengthy.startswith("fx: 1 failure · plain: 1 failure\n\n"), on_lengthy

        by_source = {(str(d.code), d.source) for d in published}
        assert ("FX002", "fx-lsp") in by_source
        assert ("FX199", "fx-lsp (plain)") in by_source

        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        titles = {lens.command.arguments[1]: lens.command.title for lens in lenses
                  if lens.command.command == "fxLsp.showGeneratedCode"}
        assert titles == {"Net": "fx: traceable · plain: traceable",
                          "Lengthy": "fx: 1 failure · plain: 1 failure"}


@pytest.mark.slow
async def test_only_fx_hovers_as_before(tmp_path: pathlib.Path, toy_mode: None) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace) as client:
        uri = client.open(models)
        published = await client.settled_diagnostics(uri, version=1)
        on_net = await _hover(client, uri, MODELS.splitlines().index("class Net(nn.Module):"), 7)
        assert on_net.startswith("**Net** is FX-traceable"), on_net
        assert {d.source for d in published} == {"fx-lsp"}
