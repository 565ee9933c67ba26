"""Applying edits as an editor does: text edits to a text, and a workspace edit to open
buffers (saved) and files on disk (announced with didChangeWatchedFiles); the code actions
offered for a diagnostic."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from lsp_support import FxClient


def _offset(text: str, position: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    before = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return before + index
        units += 2 if ord(char) > 0xFFFF else 1
    return before + len(line)


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    for edit in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = (
            text[: _offset(text, edit.range.start)]
            + edit.new_text
            + text[_offset(text, edit.range.end) :]
        )
    return text


async def apply_workspace_edit(client: FxClient, edit: types.WorkspaceEdit) -> None:
    """What an editor does: edit open buffers (then save them), write other files to disk and
    tell the server through didChangeWatchedFiles."""
    changed: list[types.FileEvent] = []
    for change in edit.document_changes:
        if isinstance(change, types.CreateFile):
            path = pathlib.Path(to_fs_path(change.uri))
            if not path.exists():
                path.write_text("")
                changed.append(types.FileEvent(uri=change.uri, type=types.FileChangeType.Created))
            continue
        uri = change.text_document.uri
        path = pathlib.Path(to_fs_path(uri))
        new_text = apply_edits(path.read_text(encoding="utf-8"), change.edits)
        if change.text_document.version is not None:
            assert change.text_document.version == client.versions[uri]
            client.replace_text(uri, new_text)
            path.write_text(new_text, encoding="utf-8")
            client.save(uri)
        else:
            path.write_text(new_text, encoding="utf-8")
            changed.append(types.FileEvent(uri=uri, type=types.FileChangeType.Changed))
    if changed:
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(changes=changed)
        )


async def code_actions_for(
    client: FxClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
