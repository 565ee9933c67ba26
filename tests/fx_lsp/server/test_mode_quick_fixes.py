"""The quick fixes of the export and compile modes through a real server with ``fxLsp.modes``
= fx, export, compile: an assert on a tensor (FX401) and a print that breaks the graph
(GB0059) get their rewrite, a failure in a helper gets no torch.fx fix under export (its
early return gets torch.cond), and applying a rewrite makes the re-check drop that mode's
diagnostic while fx's stay."""

from __future__ import annotations

import pathlib

import pytest
from editor_edits import apply_workspace_edit, code_actions_for
from lsprotocol import types

from lsp_support import session

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


def compiled_in(diagnostics: list[types.Diagnostic], first: int, last: int
                ) -> list[tuple[str, int]]:
    """The compile mode's (code, 1-based line) on lines ``first`` to ``last``."""
    return sorted((str(d.code), d.range.start.line + 1) for d in diagnostics
                  if d.source == "fx-lsp (compile)" and first <= d.range.start.line + 1 <= last)


async def titles(client, uri: str, diagnostic: types.Diagnostic) -> list[str]:
    return [action.title for action in await code_actions_for(client, uri, diagnostic)]


@pytest.mark.slow  # over 12 s in the loaded fast tier
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
        # torch.fx.wrap on gate() is fx's fix: torch.export does not care. Its early return
        # gets the torch.cond rewrite that --fix makes.
        assert await titles(client, uri, at(before, "FX401", 6)) == [
            "Rewrite the if and the return after it as torch.cond (the graph keeps both "
            "branches; it returns from lambdas)", "Ignore FX401 on this line"]
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


GUARDS = """import torch
from torch import nn


class Counted(nn.Module):
    def forward(self, x):
        n = (x > 0.5).sum().item()
        assert n > 2, "too few"
        return x * n


class Branching(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
"""
GUARDS_CONFIG = "".join(f'[tool.fx-lsp.modules."guards:{name}"]\ninputs = {{x = "float32[4, 8]"}}\n'
                        for name in ("Counted", "Branching"))
CHECK_FIX = "Insert torch._check(n > 2) before this line (what fx-lsp assumed)"
COND_FIX = ("Rewrite the if as torch.cond (the graph keeps both branches; it assigns y from "
            "lambdas)")


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_torch_check_and_torch_cond_in_the_editor(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text(GUARDS_CONFIG)
    guards = tmp_path / "guards.py"
    guards.write_text(GUARDS)
    async with session(tmp_path, options={"modes": ["export", "compile"]}) as client:
        uri = client.open(guards)
        before = await client.settled_diagnostics(uri, version=1)
        # An assert on Python numbers: the check torch.export suggests, not _assert_async.
        assert await titles(client, uri, at(before, "FX401", 8)) == [
            CHECK_FIX, "Ignore FX401 on this line"]
        # The branch on tensor data, under both modes: torch.cond.
        assert await titles(client, uri, at(before, "FX401", 14)) == [
            COND_FIX, "Ignore FX401 on this line"]
        assert await titles(client, uri, at(before, "GB0170", 14)) == [
            COND_FIX, "Ignore GB0170 on this line"]
        # The assert on the number is the data's to pass, under compile as on CPU.
        assert compiled_in(before, 5, 10) == [("GB0124", 7)]

        (action,) = [a for a in await code_actions_for(client, uri, at(before, "FX401", 8))
                     if a.title == CHECK_FIX]
        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after_check = await client.settled_diagnostics(uri, after=mark)
        assert guards.read_text().splitlines()[6:9] == [
            "        n = (x > 0.5).sum().item()", "        torch._check(n > 2)",
            '        assert n > 2, "too few"']
        assert not [d for d in after_check if str(d.code) == "FX401"
                    and d.range.start.line == 8]
        # Under compile, Counted keeps what real torch.compile reports on CPU: the .item()
        # break alone, nothing on the check or the assert (on meta the number is one the
        # check accepts).
        assert compiled_in(after_check, 5, 10) == [("GB0124", 7)]

        (action,) = [a for a in await code_actions_for(client, uri,
                                                       at(after_check, "GB0170", 15))
                     if a.title == COND_FIX]
        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after_cond = await client.settled_diagnostics(uri, after=mark)
        assert guards.read_text().splitlines()[14] == \
            "        y = torch.cond(x.sum() > 0, lambda: x * 2, lambda: x - 1)"
        # Nothing of export's remains, nor anything in Branching under compile (Counted's
        # .item() still breaks the compiled graph there: a compile matter, not the check's).
        assert not [d for d in after_cond if str(d.code).startswith("FX4")
                    or d.range.start.line + 1 >= 12]
        assert compiled_in(after_cond, 5, 10) == [("GB0124", 7)]
