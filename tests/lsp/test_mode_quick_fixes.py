"""The quick fixes of the export and compile modes through a real server with ``fxLsp.modes``
= fx, export, compile: an assert on a tensor (FX401) and a print that breaks the graph
(GB0059) get their rewrite, a failure in a helper gets no torch.fx fix under export, and
applying a rewrite makes the re-check drop that mode's diagnostic while fx's stay."""

from __future__ import annotations

import pathlib

from lsprotocol import types

from lsp_support import apply_workspace_edit, code_actions_for, session

MODEL = """import torch
from torch import nn


def gate(x):
    if x.sum() > 0:
        return x * 2
    return x


class Checked(nn.Module):
    def forward(self, x):
        assert (x > 0).all(), "positive"
        print("checked")
        return gate(x)
"""
CONFIG = '[tool.fx-lsp.modules."net:Checked"]\ninputs = {x = "float32[2, 8]"}\n'
MODES = ["fx", "export", "compile"]
ASSERT_FIX = "Replace assert with torch._assert_async (a check torch.export keeps)"
PRINT_FIX = "Run print() only outside torch.compile (if not torch.compiler.is_compiling())"


def at(diagnostics: list[types.Diagnostic], code: str, line: int) -> types.Diagnostic:
    """The diagnostic of ``code`` on 1-based ``line``."""
    (found,) = [d for d in diagnostics if str(d.code) == code and d.range.start.line == line - 1]
    return found


async def titles(client, uri: str, diagnostic: types.Diagnostic) -> list[str]:
    return [action.title for action in await code_actions_for(client, uri, diagnostic)]


async def test_export_and_compile_rewrites_in_the_editor(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    net = tmp_path / "net.py"
    net.write_text(MODEL)
    async with session(tmp_path, options={"modes": MODES}) as client:
        uri = client.open(net)
        before = await client.settled_diagnostics(uri, version=1)
        # That diagnostic's fixes only: not those of fx's FX001 on the same range.
        assert await titles(client, uri, at(before, "FX401", 13)) == [
            ASSERT_FIX, "Ignore FX401 on this line"]
        assert await titles(client, uri, at(before, "GB0059", 14)) == [
            PRINT_FIX, "Ignore GB0059 on this line"]
        # torch.fx.wrap on gate() is fx's fix: torch.export does not care.
        assert await titles(client, uri, at(before, "FX401", 6)) == [
            "Ignore FX401 on this line"]
        assert "Decorate gate() with @torch.fx.wrap (traced as one call)" in await titles(
            client, uri, at(before, "FX001", 6))

        (action,) = [a for a in await code_actions_for(client, uri, at(before, "FX401", 13))
                     if a.title == ASSERT_FIX]
        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after_assert = await client.settled_diagnostics(uri, after=mark)
        assert net.read_text().splitlines()[12] == \
            '        torch._assert_async((x > 0).all(), "positive")'
        assert not [d for d in after_assert if str(d.code) == "FX401"
                    and d.range.start.line == 12]

        (action,) = [a for a in await code_actions_for(client, uri,
                                                       at(after_assert, "GB0059", 14))
                     if a.title == PRINT_FIX]
        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after_print = await client.settled_diagnostics(uri, after=mark)
        assert net.read_text().splitlines()[13:15] == [
            "        if not torch.compiler.is_compiling():", '            print("checked")']
        codes = {str(d.code) for d in after_print}
        assert "GB0059" not in codes
        # What the rewrites do not touch stays: gate()'s branch in every mode.
        assert {"FX001", "FX401", "GB0170"} <= codes
