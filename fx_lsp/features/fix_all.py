"""The editor's "fix all graph breaks" source action (``source.fixAll.fx-lsp``, as ruff offers
``source.fixAll.ruff``): every fix ``fx-lsp check --fix --unsafe-fixes`` makes for the problems
of a document, planned and applied by the same code (``fxcore.fixing.fix_apply``), as one
``WorkspaceEdit``.

One request is one round: the server checks the fixed text again when the buffer changes, and
the next request (or the next save, with ``editor.codeActionsOnSave``) makes the fixes that the
new check finds, until it offers none, as ``--fix`` does in its rounds.

Every edit is previewed: each file's edit is an ``AnnotatedTextEdit`` whose change annotation
``needs_confirmation``, listing the fixes, for a client that supports annotations (VS Code then
shows its refactor preview before applying); a client that does not gets the same
``WorkspaceEdit`` without them, which it shows as it shows any code action's edit.
"""

from __future__ import annotations

from lsprotocol import types

from fx_lsp.features.code_actions import kept_edit
from fx_lsp.features.diagnostics import path_to_uri
from fx_lsp.features.snapshot import DocumentSnapshot
from fxcore.fixing import fix_apply
from fxcore.reporting.report import Problem

#: The kind of the action; a client asks for it with ``only`` set to it or a prefix of it
#: (``source``, ``source.fixAll``).
FIX_ALL = "source.fixAll.fx-lsp"
ANNOTATION = "fx-lsp.fixAll"


def requested(only: list[str] | None) -> bool:
    """Whether a code-action request with ``only`` asks for the fix-all action."""
    return bool(only) and any(kind == FIX_ALL or FIX_ALL.startswith(f"{kind}.")
                              for kind in only or [])


def fix_all_action(snapshot: DocumentSnapshot, annotate: bool) -> types.CodeAction | None:
    """The action fixing every problem of the document that a fix fits, safe or unsafe;
    None when none does."""
    if snapshot.outdated():
        return None
    problems: list[Problem] = []
    for entry in snapshot.entries:  # a problem of several classes is one entry of each
        if entry.problem is not None and entry.problem.path == snapshot.path \
                and entry.problem not in problems:
            problems.append(entry.problem)
    files = snapshot.files
    edits = fix_apply.plan_edits(problems, files.text_of, files.root_of, unsafe=True,
                                 run=files.run)
    if not edits.files:
        return None
    titles = [f"{problem.code}: {title}" for problem, title in edits.fixed]
    changes: list[types.TextDocumentEdit | types.CreateFile] = []
    for path, (old, new) in sorted(edits.files.items()):
        uri = path_to_uri(path)
        if old is None:
            changes.append(types.CreateFile(
                uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
        edit = kept_edit(path, old, new, files, snapshot.encoding)
        if annotate:
            edit = types.AnnotatedTextEdit(range=edit.range, new_text=edit.new_text,
                                           annotation_id=ANNOTATION)
        changes.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=files.version_of(path)),
            edits=[edit]))
    count = len(edits.fixed)
    annotations = {ANNOTATION: types.ChangeAnnotation(
        label=f"fx-lsp: fix {count} graph break{'s' if count != 1 else ''} and problems",
        needs_confirmation=True, description="\n".join(titles))} if annotate else None
    return types.CodeAction(
        title=f"Fix all graph breaks and problems fx-lsp can fix ({count}; unsafe fixes "
              "included)",
        kind=FIX_ALL,
        edit=types.WorkspaceEdit(document_changes=changes, change_annotations=annotations))
