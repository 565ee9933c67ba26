"""Quick fixes for fx-lsp diagnostics, as versioned ``TextDocumentEdit``s.

Which fixes fit a failure is planned by ``fxcore.api.quick_fixes`` (no editor types there); this
module turns them into code actions and their new text into the smallest edit. Planning is
cheap but for one ``ast`` parse per text; computing an edit parses with libcst, which takes
seconds on a 20,000-line file, so clients that resolve code actions get the list without
edits and ask for one edit on ``codeAction/resolve``. Both parses go through ``Files.run``:
the server runs them in a process of its own (``fx_lsp.features.parse_process``), cached per text.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from fx_lsp.features import positions
from fx_lsp.features.diagnostics import Entry, is_own_source, path_to_uri
from fx_lsp.features.snapshot import DocumentSnapshot, Files
from fxcore.api.quick_fixes import (
    ignore_fix,
    in_workspace,
    plan,
    unused_suppression_fix,
    why_no_fix,
)
from fxcore.fixing.fix import Fix
from fxcore.workspace.kept_bytes import kept_text, universal_newlines


def fix_edit(fix: Fix, files: Files, encoding: str) -> types.WorkspaceEdit | None:
    """The fix's edit, or None when it would change nothing (it is already applied) or its
    transform fails (libcst rejects some sources Python accepts)."""
    try:
        old, new = fix.texts(files.text_of, files.run)
    except Exception:
        return None
    if new == old:
        return None
    uri = path_to_uri(fix.path)
    changes: list[types.TextDocumentEdit | types.CreateFile] = []
    if old is None:
        changes.append(
            types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True))
        )
    changes.append(
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=files.version_of(fix.path)
            ),
            edits=[kept_edit(fix.path, old, new, files, encoding)],
        )
    )
    return types.WorkspaceEdit(document_changes=changes)


def _common_length(old: str, new: str, limit: int, from_end: bool) -> int:
    """How many characters (at most ``limit``) ``old`` and ``new`` share at their start (or
    end): a binary search over slice comparisons, which run in C; a character loop takes tens
    of milliseconds of the GIL on a 20,000-line file."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if from_end:
            same = old[len(old) - middle :] == new[len(new) - middle :]
        else:
            same = old[:middle] == new[:middle]
        if same:
            low = middle
        else:
            high = middle - 1
    return low


def kept_edit(path: str, old: str | None, new: str, files: Files,
              encoding: str) -> types.TextEdit:
    """The edit making ``old``, the text of ``path`` that fixes were planned on (``\n`` line
    ends), ``new``, applied to the text the editor edits (``Files.edited_text_of``: an open
    buffer, a file on disk), whose line ends the edit keeps (``fxcore.workspace.kept_bytes``)."""
    if old is None:
        return minimal_edit("", new, encoding)
    edited = files.edited_text_of(path)
    if edited is None or universal_newlines(edited) != old:
        edited = old
    return minimal_edit(edited, kept_text(edited, new), encoding)


def minimal_edit(old: str, new: str, encoding: str) -> types.TextEdit:
    """One edit replacing only the part of ``old`` that differs from ``new``."""
    start = _common_length(old, new, min(len(old), len(new)), from_end=False)
    common_end = _common_length(old, new, min(len(old), len(new)) - start, from_end=True)
    end_old, end_new = len(old) - common_end, len(new) - common_end
    lines = positions.split_lines(old)

    def position(offset: int) -> types.Position:
        before = positions.split_lines(old[:offset])
        return positions.to_lsp(lines, len(before), len(before[-1]) + 1, encoding)

    return types.TextEdit(
        range=types.Range(start=position(start), end=position(end_old)), new_text=new[start:end_new]
    )


def entry_fixes(entry: Entry, files: Files) -> list[Fix]:
    """The quick fixes of a diagnostic: the planner's for its failure and "Ignore ... on this
    line"; for an unused suppression (FX900), its removal."""
    problem = entry.problem
    if problem is not None and problem.directive is not None:
        return [unused_suppression_fix(problem.path, problem.directive, problem.unused)]
    if entry.failure is None:
        return []
    failure = entry.failure
    fixes, _ = in_workspace(plan(failure, entry.module, files.text_of, files.root_of,
                                 files.run), files.root_of)
    return [*fixes, ignore_fix(failure.code, failure.path, failure.line)]


def _to_code_action(
    fix: Fix, diagnostic: types.Diagnostic, edit: types.WorkspaceEdit | None, data: Any
) -> types.CodeAction:
    return types.CodeAction(
        title=fix.title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=fix.preferred or None,
        edit=edit,
        data=data,
    )


def _same(a: types.Diagnostic, b: types.Diagnostic) -> bool:
    return a.range == b.range and a.code == b.code


def code_actions(
    snapshot: DocumentSnapshot,
    context: types.CodeActionContext,
    requested: types.Range,
    resolves: bool = False,
    shows_disabled: bool = False,
) -> list[types.CodeAction]:
    """Quick fixes for the fx-lsp diagnostics the client sent, or that touch the range; none
    when the buffer changed since the request (the client asks again for the new text).

    When the client ``resolves`` code actions, the actions carry the document's URI instead
    of an edit; ``resolve`` computes the edit. Otherwise every edit is computed here and
    fixes that would change nothing are left out. A client that ``shows_disabled`` actions
    also gets, for a recompile whose standard fix would change outputs, a disabled one saying
    why there is none.
    """
    if snapshot.outdated():
        return []
    # The client's diagnostics of every capture mode (``fx-lsp (export)``) are ours.
    wanted = [d for d in context.diagnostics if is_own_source(d.source)]

    def matches(entry: Entry) -> bool:
        d = entry.diagnostic
        if wanted:
            return any(_same(w, d) for w in wanted)
        return (d.range.start.line, d.range.start.character) <= (
            requested.end.line,
            requested.end.character,
        ) and (requested.start.line, requested.start.character) <= (
            d.range.end.line,
            d.range.end.character,
        )

    if context.only and not any(
        kind in (types.CodeActionKind.QuickFix, types.CodeActionKind.Empty) for kind in context.only
    ):
        return []
    actions = []
    for entry in snapshot.entries:
        if not matches(entry):
            continue
        for fix in entry_fixes(entry, snapshot.files):
            if resolves:
                actions.append(_to_code_action(fix, entry.diagnostic, None, {"uri": snapshot.uri}))
                continue
            edit = fix_edit(fix, snapshot.files, snapshot.encoding)
            if edit is not None:
                actions.append(_to_code_action(fix, entry.diagnostic, edit, None))
        why = why_no_fix(entry.failure, snapshot.files.text_of, snapshot.files.run) \
            if shows_disabled else None
        if why is not None:
            actions.append(types.CodeAction(
                title=f"No quick fix for {entry.diagnostic.code}",
                kind=types.CodeActionKind.QuickFix, diagnostics=[entry.diagnostic],
                disabled=types.CodeActionDisabled(reason=why)))
    return actions


def resolve(snapshot: DocumentSnapshot, action: types.CodeAction) -> types.CodeAction:
    """``action`` with its edit, computed from the current texts. An action whose diagnostic
    is gone, or whose fix is already applied, comes back without an edit (it does nothing)."""
    for entry in snapshot.entries:
        if not any(_same(d, entry.diagnostic) for d in action.diagnostics or []):
            continue
        for fix in entry_fixes(entry, snapshot.files):
            if fix.title == action.title:
                action.edit = fix_edit(fix, snapshot.files, snapshot.encoding)
                return action
    return action
