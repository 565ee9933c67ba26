"""Quick fixes for fx-lsp diagnostics, as versioned ``TextDocumentEdit``s.

The transforms themselves live in ``fxcore.fixes`` (libcst / tomlkit, idempotent); this module
decides which fixes fit a failure and turns their new text into the smallest edit.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types

from fx_lsp import positions
from fx_lsp.diagnostics import Entry, path_to_uri
from fxcore import fixes
from fxcore.model import Failure, Frame, ModuleResult
from fxcore.workspace import find_workspace_root, import_location

#: Text of a file by absolute path (the open buffer, else the disk), None when it does not exist.
TextOf = Callable[[str], "str | None"]
#: Version of an open document, None for a file that is not open.
VersionOf = Callable[[str], "int | None"]


@dataclass
class Fix:
    title: str
    path: str
    old_text: str | None
    new_text: str
    preferred: bool = False


def _location_frame(failure: Failure) -> Frame | None:
    """The frame the failure is reported at (its innermost workspace frame)."""
    for frame in reversed(failure.frames):
        if frame.path == failure.path and frame.line == failure.line:
            return frame
    return failure.frames[-1] if failure.frames else None


def _enclosing_class(source: str, line: int) -> str | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or 0):
            return node.name
    return None


def _span_text(source: str, failure: Failure) -> str:
    lines = positions.split_lines(source)
    if failure.line != failure.end_line or not 0 < failure.line <= len(lines):
        return ""
    return lines[failure.line - 1][failure.column - 1 : failure.end_column - 1]


def _names(expression: str) -> set[str]:
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _len_fixes(failure: Failure, text_of: TextOf) -> list[Fix]:
    source = text_of(failure.path)
    if source is None:
        return []
    found = [
        Fix(
            'Wrap len for tracing: torch.fx.wrap("len")',
            failure.path,
            source,
            fixes.wrap_len(source),
            True,
        ),
        Fix(
            f"Replace {_span_text(source, failure) or 'len(x)'} with .size(0)",
            failure.path,
            source,
            fixes.len_to_size(source, failure.line, failure.column),
        ),
    ]
    return found


def _helper_fix(failure: Failure, text_of: TextOf) -> list[Fix]:
    frame = _location_frame(failure)
    source = text_of(failure.path)
    if frame is None or source is None or frame.function == "forward":
        return []
    if frame.function not in fixes.module_function_names(source):
        return []
    return [
        Fix(
            f"Decorate {frame.function}() with @torch.fx.wrap (traced as one call)",
            failure.path,
            source,
            fixes.wrap_function(source, frame.function),
            failure.kind != "len",
        )
    ]


def _pyproject(module: ModuleResult, text_of: TextOf) -> tuple[str, str | None]:
    path = os.path.join(find_workspace_root(module.path), "pyproject.toml")
    return path, text_of(path)


def _leaf_fix(failure: Failure, module: ModuleResult, text_of: TextOf) -> list[Fix]:
    """A failure inside the forward of a submodule's class: make that class a leaf."""
    for frame in reversed(failure.frames[1:]):
        if frame.function != "forward":
            continue
        source = text_of(frame.path)
        name = _enclosing_class(source, frame.line) if source is not None else None
        if name is None or (frame.path == module.path and name == module.class_name):
            continue
        qualified = f"{import_location(frame.path).module_name}:{name}"
        path, text = _pyproject(module, text_of)
        return [
            Fix(
                f"Treat {name} as a leaf module (pyproject.toml)",
                path,
                text,
                fixes.add_leaf_module(text or "", qualified),
            )
        ]
    return []


def _concrete_fixes(failure: Failure, module: ModuleResult, text_of: TextOf) -> list[Fix]:
    """Control flow on a plain ``forward`` argument of the traced class: make it concrete."""
    if failure.kind != "control-flow" or failure.path != module.path:
        return []
    source = text_of(module.path)
    if source is None or _enclosing_class(source, failure.line) != module.class_name:
        return []
    plain = fixes.plain_forward_arguments(source, module.class_name)
    found = []
    path, text = _pyproject(module, text_of)
    for name in sorted(_names(_span_text(source, failure)) & plain.keys()):
        value = plain[name]
        shown = repr(value) if not isinstance(value, bool) else str(value).lower()
        found.append(
            Fix(
                f"Trace {module.class_name} with {name} = {shown} (concrete-args, pyproject.toml)",
                path,
                text,
                fixes.add_concrete_arg(text or "", module.qualified_name, name, value),
                True,
            )
        )
    return found


def plan(entry: Entry, text_of: TextOf) -> list[Fix]:
    """The fixes that apply to a diagnostic's failure (only those that change something)."""
    failure, module = entry.failure, entry.module
    if failure is None:
        return []
    found: list[Fix] = []
    try:
        if failure.kind == "len":
            found += _len_fixes(failure, text_of)
        found += _helper_fix(failure, text_of)
        if module is not None:
            found += _leaf_fix(failure, module, text_of)
            found += _concrete_fixes(failure, module, text_of)
    except Exception:
        # libcst rejects some sources Python accepts (and the reverse): offer nothing then.
        return []
    return [fix for fix in found if fix.new_text != fix.old_text]


def minimal_edit(old: str, new: str, encoding: str) -> types.TextEdit:
    """One edit replacing only the part of ``old`` that differs from ``new``."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    lines = positions.split_lines(old)

    def position(offset: int) -> types.Position:
        before = positions.split_lines(old[:offset])
        return positions.to_lsp(lines, len(before), len(before[-1]) + 1, encoding)

    return types.TextEdit(
        range=types.Range(start=position(start), end=position(end_old)), new_text=new[start:end_new]
    )


def to_code_action(
    fix: Fix, diagnostic: types.Diagnostic, version_of: VersionOf, encoding: str
) -> types.CodeAction:
    uri = path_to_uri(fix.path)
    changes: list[types.TextDocumentEdit | types.CreateFile] = []
    if fix.old_text is None:
        changes.append(
            types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True))
        )
    changes.append(
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=version_of(fix.path)
            ),
            edits=[minimal_edit(fix.old_text or "", fix.new_text, encoding)],
        )
    )
    return types.CodeAction(
        title=fix.title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=fix.preferred or None,
        edit=types.WorkspaceEdit(document_changes=changes),
    )


def code_actions(
    entries: list[Entry],
    context: types.CodeActionContext,
    requested: types.Range,
    text_of: TextOf,
    version_of: VersionOf,
    encoding: str,
) -> list[types.CodeAction]:
    """Quick fixes for the fx-lsp diagnostics the client sent, or that touch the range."""
    wanted = [d for d in context.diagnostics if d.source == "fx-lsp"]

    def matches(entry: Entry) -> bool:
        d = entry.diagnostic
        if wanted:
            return any(w.range == d.range and w.code == d.code for w in wanted)
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
    for entry in entries:
        if matches(entry):
            for fix in plan(entry, text_of):
                actions.append(to_code_action(fix, entry.diagnostic, version_of, encoding))
    return actions
