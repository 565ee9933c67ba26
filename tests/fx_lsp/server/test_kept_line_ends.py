"""The editor's quick fixes and its fix-all action keep the line ends of what they edit,
through a real server over stdio: an open buffer with Windows line ends (``\\r\\n``) and
mixed ones, and a ``pyproject.toml`` on disk, not open, with ``\\r\\n`` and a UTF-8 byte
order mark. Each edit is applied as an editor applies it (LSP lines end at ``\\r\\n``,
``\\r`` or ``\\n``) and the text after it compared whole: only the fixed lines differ."""

from __future__ import annotations

import pathlib
import re

import pytest
from editor_edits import code_actions_for
from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_support import session

#: A model with one FX002 (``len``) on line 8 and one FX001 (``if flag``) on line 13.
LINES = ["# -*- coding: utf-8 -*-", "import torch", "from torch import nn", "", "",
         "class UsesLen(nn.Module):", "    def forward(self, x):",
         "        return x * len(x)", "", "", "class UsesFlag(nn.Module):",
         "    def forward(self, x, flag: bool = False):", "        if flag:",
         "            return x + 1", "        return x"]
WRAP_AFTER, WRAP = 3, ["import torch.fx", "", 'torch.fx.wrap("len")']
BOM = "\ufeff"
PYPROJECT = ["[project]", "name = 'kept'"]
#: What "Trace UsesFlag with flag = false" adds to it for ``mixed.py``.
CONFIG_OPTION = ["", '[tool.fx-lsp.modules."mixed:UsesFlag"]', "concrete-args = {flag = false}"]

#: Line ends of the buffer: Windows', and mixed (the fix's lines come after a ``\r\n``).
CASES = {"crlf": ["\r\n"] * len(LINES),
         "mixed": ["\r\n"] * 3 + ["\n"] * 4 + ["\r\n"] * 8}


def joined(lines: list[str], ends: list[str]) -> str:
    return "".join(line + end for line, end in zip(lines, ends, strict=True))


def _offset(text: str, position: types.Position) -> int:
    """Where an LSP position (UTF-16; these texts are ASCII) is in ``text``."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n|$)", text)
    return sum(len(line) for line in lines[:position.line]) + position.character


def applied(text: str, edits: list[types.TextEdit]) -> str:
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        text = (text[:_offset(text, edit.range.start)] + edit.new_text
                + text[_offset(text, edit.range.end):])
    return text


def edits_of(action: types.CodeAction, name: str) -> list[types.TextEdit]:
    assert action.edit is not None and action.edit.document_changes is not None
    (change,) = [change for change in action.edit.document_changes
                 if isinstance(change, types.TextDocumentEdit)
                 and to_fs_path(change.text_document.uri).endswith(name)]
    return list(change.edits)


@pytest.mark.slow
async def test_quick_fixes_keep_the_line_ends_of_the_buffer(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'kept'\n")
    async with session(tmp_path) as client:
        for case, ends in CASES.items():
            path = tmp_path / f"{case}.py"
            text = joined(LINES, ends)
            path.write_bytes(text.encode())
            uri = client.open(path, text)
            diagnostics = await client.diagnostics_for(uri, version=1)
            by_line = {d.range.start.line + 1: d for d in diagnostics if d.severity == 1}
            assert sorted(by_line) == [8, 13], diagnostics

            (wrap,) = [action for action in await code_actions_for(client, uri, by_line[8])
                       if action.title.startswith('Wrap len for tracing')]
            # The lines fx-lsp adds take the end of the line before them.
            assert applied(text, edits_of(wrap, path.name)) == joined(
                [*LINES[:WRAP_AFTER], *WRAP, *LINES[WRAP_AFTER:]],
                [*ends[:WRAP_AFTER], *[ends[WRAP_AFTER - 1]] * 3, *ends[WRAP_AFTER:]]), case

            (ignore,) = [action for action in await code_actions_for(client, uri, by_line[8])
                         if action.title.startswith("Ignore FX002")]
            assert applied(text, edits_of(ignore, path.name)) == joined(
                [*LINES[:7], f"{LINES[7]}  # fx-lsp: ignore[FX002]", *LINES[8:]], ends), case


@pytest.mark.slow
@pytest.mark.parametrize("bom", ["", BOM], ids=["crlf", "crlf-bom"])
async def test_a_quick_fix_keeps_the_line_ends_of_a_file_that_is_not_open(
        tmp_path: pathlib.Path, bom: str) -> None:
    """pyproject.toml is not open: its edit is applied to the file, which keeps its ``\r\n``;
    an editor leaves a byte order mark out of the text it edits (and keeps it)."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject_text = bom + joined(PYPROJECT, ["\r\n"] * 2)
    pyproject.write_bytes(pyproject_text.encode())
    path = tmp_path / "mixed.py"
    path.write_text(joined(LINES, ["\n"] * len(LINES)))
    async with session(tmp_path) as client:
        uri = client.open(path)
        diagnostics = await client.diagnostics_for(uri, version=1)
        (flag,) = [d for d in diagnostics if d.severity == 1 and d.range.start.line == 12]
        (option,) = [action for action in await code_actions_for(client, uri, flag)
                     if action.title.startswith("Trace UsesFlag with flag")]
        edited = applied(pyproject_text.removeprefix(BOM), edits_of(option, "pyproject.toml"))
        assert edited == joined([*PYPROJECT, *CONFIG_OPTION], ["\r\n"] * 5)


@pytest.mark.slow
async def test_fix_all_keeps_mixed_line_ends_of_the_buffer(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'kept'\n")
    path, ends = tmp_path / "models.py", CASES["mixed"]
    text = joined(LINES[:8], ends[:8])
    path.write_bytes(text.encode())
    async with session(tmp_path) as client:
        uri = client.open(path, text)
        await client.diagnostics_for(uri, version=1)
        (action,) = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[],
                                            only=[types.CodeActionKind.Source])))
        assert applied(text, edits_of(action, "models.py")) == joined(
            [*LINES[:WRAP_AFTER], *WRAP, *LINES[WRAP_AFTER:8]],
            [*ends[:WRAP_AFTER], *[ends[WRAP_AFTER - 1]] * 3, *ends[WRAP_AFTER:8]])
