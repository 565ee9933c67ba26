"""Each quick fix end to end: apply its edit, let the server re-trace, and check that the
diagnostic it was attached to is gone and that no new failure appeared."""

from __future__ import annotations

import pathlib
import re
from collections import Counter

import pytest
from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_support import FxClient, session, wait_for


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


def _apply(text: str, edits: list[types.TextEdit]) -> str:
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
        new_text = _apply(path.read_text(encoding="utf-8"), change.edits)
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


def _failures(diagnostics: list[types.Diagnostic]) -> Counter[tuple[str, str]]:
    """Failures by code and message; line numbers in messages move when a fix adds lines."""
    return Counter(
        (str(d.code), re.sub(r":\d+\)", ")", d.message))
        for d in diagnostics
        if d.severity == types.DiagnosticSeverity.Error
    )


async def _actions(
    client: FxClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )


CASES = [
    # (which diagnostic: a line of net.py it starts on, the fix's title starts with, file edited)
    ("return x * len(x)", 'Wrap len for tracing: torch.fx.wrap("len")', "net.py"),
    ("return x * len(x)", "Replace len(x) with .size(0)", "net.py"),
    ("if x.mean() > 0:", "Decorate helper() with @torch.fx.wrap", "net.py"),
    ("class UsesBlock", "Treat Block as a leaf module", "pyproject.toml"),
    ("if flag:", "Trace UsesFlag with flag = false", "pyproject.toml"),
]


@pytest.mark.parametrize(("line_text", "title", "edited"), CASES, ids=[c[1][:24] for c in CASES])
async def test_quick_fix_makes_the_trace_pass(
    workspace: pathlib.Path, line_text: str, title: str, edited: str
) -> None:
    net = workspace / "pkg" / "net.py"
    (line,) = [i for i, text in enumerate(net.read_text().splitlines()) if line_text in text]
    async with session(workspace) as client:
        uri = client.open(net)
        before = await client.diagnostics_for(uri, version=1)
        (target,) = [d for d in before if d.range.start.line == line and d.severity == 1]
        actions = await _actions(client, uri, target)
        (action,) = [a for a in actions if a.title.startswith(title)]
        assert action.kind == types.CodeActionKind.QuickFix
        assert list(action.diagnostics) == [target]
        (edit,) = [c for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit)]
        assert edit.text_document.uri.endswith(edited)

        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after = await client.diagnostics_for(uri, after=mark)
        assert target.message not in {d.message for d in after if d.range == target.range}
        new_failures = _failures(after) - _failures(before)
        assert not new_failures, new_failures
        assert _failures(after).total() < _failures(before).total()

        # The fix is not offered again where it was applied (fxcore.fixes is idempotent too).
        again = [
            action
            for d in after
            if d.range == target.range
            for action in await _actions(client, uri, d)
            if action.title.startswith(title)
        ]
        assert again == []
        traced_text = (workspace / "pkg" / "net.py").read_text()
        if title.startswith("Wrap len"):
            assert traced_text.count('torch.fx.wrap("len")') == 1
        await wait_for(lambda: client.statuses[-1]["state"] == "idle", 10, "idle")
