"""The editor's "fix all graph breaks" source action (``source.fixAll.fx-lsp``) through a real
server over stdio: asked for round after round (each after the server checked the fixed
buffer again) until it offers nothing, it leaves a corpus file with the same text as
``fx-lsp check --mode compile --fix --unsafe-fixes`` in a copy of the same workspace; its
edit comes with a change annotation that needs confirmation (the client's preview)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from editor_edits import apply_workspace_edit
from lsprotocol import types

from lsp_support import session

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "fxcore" / "fixing" / "break_corpus"
ROOT = pathlib.Path(__file__).resolve().parents[3]
NAME = "deepcopies.py"
CLASSES = ("CopiedInput", "CopiedActivation", "CopiedSum")
CONFIG = "".join(f'[tool.fx-lsp.modules."deepcopies:{name}"]\ninputs = {{x = "float32[4, 8]"}}\n'
                 for name in CLASSES)
#: ``--fix`` makes at most this many rounds (``fxcore.api.fix_rounds.MAX_FIX_ROUNDS``).
ROUNDS = 4


def workspace(folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(CONFIG)
    shutil.copy(CORPUS / NAME, folder / NAME)
    return folder / NAME


def fixed_by_the_cli(folder: pathlib.Path) -> str:
    path = workspace(folder)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--mode", "compile", "--fix",
                    "--unsafe-fixes", "."], cwd=folder, env=environment, capture_output=True,
                   timeout=600, check=False)
    return path.read_text()


async def fix_all_actions(client, uri: str) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.Source])))


@pytest.mark.slow  # two checks of three classes, and a server: over 12 s
async def test_fix_all_action_gives_the_text_fix_gives(tmp_path: pathlib.Path) -> None:
    expected = fixed_by_the_cli(tmp_path / "cli")
    assert expected != (CORPUS / NAME).read_text()
    path = workspace(tmp_path / "editor")
    async with session(path.parent, options={"modes": ["compile"]},
                       annotations=True) as client:
        uri = client.open(path)
        diagnostics = await client.settled_diagnostics(uri, version=1)
        assert {str(d.code) for d in diagnostics} == {"GB4198"}
        applied = 0
        for _ in range(ROUNDS):
            actions = await fix_all_actions(client, uri)
            if not actions:
                break
            (action,) = actions
            assert action.kind == "source.fixAll.fx-lsp"
            assert action.edit is not None and action.edit.change_annotations
            (annotation,) = action.edit.change_annotations.values()
            assert annotation.needs_confirmation
            assert "GB4198" in (annotation.description or "")
            mark = len(client.published)
            await apply_workspace_edit(client, action.edit)
            applied += 1
            diagnostics = await client.settled_diagnostics(uri, after=mark)
        assert applied >= 1
        assert not [d for d in diagnostics if str(d.code) == "GB4198"]
    assert path.read_text() == expected
