"""The server's workspace trace gives a class that needs arguments the verdict of the
instance a traced root built, and hover and code lens say which instance that was."""

from __future__ import annotations

import pathlib
import textwrap

import pytest
from lsprotocol import types

from lsp_support import FxClient, session

LAYERS = """
    from torch import nn


    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.proj = nn.Linear(dim, dim * heads)

        def forward(self, x):
            return self.proj(x)
    """

VIT = """
    from torch import nn

    from pkg.layers import Block


    class ViT(nn.Module):
        def __init__(self, dim=8, depth=2, heads=2):
            super().__init__()
            self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])

        def forward(self, x):
            return self.blocks(x)
    """


def write_workspace(root: pathlib.Path) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")
    (root / "pkg").mkdir()
    for name, text in {"__init__.py": "", "layers.py": LAYERS, "vit.py": VIT}.items():
        (root / "pkg" / name).write_text(textwrap.dedent(text).lstrip("\n"))


@pytest.mark.slow
async def test_workspace_trace_shows_the_parent_built_verdict(tmp_path: pathlib.Path) -> None:
    write_workspace(tmp_path)
    async with session(tmp_path) as client:
        uri = client.open(tmp_path / "pkg" / "layers.py")
        await client.diagnostics_for(uri, version=1)
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fxLsp.server.traceWorkspace", arguments=[])
        )
        assert result["failed"] == 0
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        (lens, graph_lens) = lenses
        assert graph_lens.command.command == "fxLsp.showGraph"
        assert lens.command.title == "FX: traceable · 3 nodes · traced as built by ViT.blocks.0"
        hover = await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                              position=types.Position(line=3, character=7))
        )
        assert "**Block** is FX-traceable" in hover.contents.value
        assert "Traced as built by `ViT.blocks.0`." in hover.contents.value


@pytest.mark.asyncio(loop_scope="session")
async def test_a_document_traced_after_its_parent_shows_the_parent_built_verdict(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    write_workspace(tmp_path)
    client = shared_client
    vit = client.open(tmp_path / "pkg" / "vit.py")
    await client.diagnostics_for(vit, version=1)
    uri = client.open(tmp_path / "pkg" / "layers.py")
    await client.diagnostics_for(uri, version=1)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [lens.command.title for lens in lenses] == [
        "FX: traceable · 3 nodes · traced as built by ViT.blocks.0", "Show graph"]
