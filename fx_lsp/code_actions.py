"""Quick fixes for fx-lsp diagnostics, as versioned ``TextDocumentEdit``s.

The transforms themselves live in ``fxcore.fixes`` (libcst / tomlkit, idempotent); this module
decides which fixes fit a failure and turns their new text into the smallest edit. Deciding is
cheap (an ``ast`` parse, cached per text); computing an edit parses with libcst, which takes
seconds on a 20,000-line file, so clients that resolve code actions get the list without
edits and ask for one edit on ``codeAction/resolve``.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from fx_lsp import positions
from fx_lsp.diagnostics import Entry, path_to_uri
from fxcore import fixes
from fxcore.model import Failure, Frame, ModuleResult
from fxcore.workspace import import_location

#: Text of a file by absolute path (the open buffer, else the disk), None when it does not exist.
TextOf = Callable[[str], "str | None"]
#: Version of an open document, None for a file that is not open.
VersionOf = Callable[[str], "int | None"]
#: The workspace root of a file (its ``pyproject.toml`` takes the project-level fixes).
RootOf = Callable[[str], str]


@dataclass
class Fix:
    title: str
    path: str
    #: The fixed text of ``path`` from its current text ("" when the file does not exist yet).
    transform: Callable[[str], str]
    preferred: bool = False

    def texts(self, text_of: TextOf) -> tuple[str | None, str]:
        """(current text or None, fixed text): the expensive part, done on resolve, and done
        once per text (cursor moves repeat the same requests)."""
        old = text_of(self.path)
        key = (_transform_key(self.transform), self.path, old)
        new = _fixed_texts.get(key)
        if new is None:
            new = self.transform(old or "")
            _fixed_texts[key] = new
            while len(_fixed_texts) > 32:
                del _fixed_texts[next(iter(_fixed_texts))]
        return old, new


#: (transform, path, old text) -> fixed text, oldest first.
_fixed_texts: dict[tuple[Any, str, str | None], str] = {}


def _transform_key(transform: Callable[[str], str]) -> Any:
    if isinstance(transform, functools.partial):
        return (transform.func, transform.args, tuple(sorted(transform.keywords.items())))
    return transform


@functools.lru_cache(maxsize=8)
def _parse(source: str) -> ast.Module | None:
    """One ``ast`` parse per text (so per document version), shared by every request."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _location_frame(failure: Failure) -> Frame | None:
    """The frame the failure is reported at (its innermost workspace frame)."""
    for frame in reversed(failure.frames):
        if frame.path == failure.path and frame.line == failure.line:
            return frame
    return failure.frames[-1] if failure.frames else None


def _enclosing_class(source: str, line: int) -> str | None:
    tree = _parse(source)
    for node in tree.body if tree is not None else []:
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


def _module_function_names(source: str) -> set[str]:
    tree = _parse(source)
    body = tree.body if tree is not None else []
    return {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _len_fixes(failure: Failure, text_of: TextOf) -> list[Fix]:
    source = text_of(failure.path)
    if source is None:
        return []
    line, column = failure.line, failure.column
    return [
        Fix('Wrap len for tracing: torch.fx.wrap("len")', failure.path, fixes.wrap_len, True),
        Fix(
            f"Replace {_span_text(source, failure) or 'len(x)'} with .size(0)",
            failure.path,
            functools.partial(fixes.len_to_size, line=line, column=column),
        ),
    ]


def _helper_fix(failure: Failure, text_of: TextOf) -> list[Fix]:
    frame = _location_frame(failure)
    source = text_of(failure.path)
    if frame is None or source is None or frame.function == "forward":
        return []
    function = frame.function
    if function not in _module_function_names(source):
        return []
    return [
        Fix(
            f"Decorate {function}() with @torch.fx.wrap (traced as one call)",
            failure.path,
            functools.partial(fixes.wrap_function, function=function),
            failure.kind != "len",
        )
    ]


def _pyproject(module: ModuleResult, root_of: RootOf) -> str:
    return os.path.join(root_of(module.path), "pyproject.toml")


def _leaf_fix(
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf
) -> list[Fix]:
    """A failure inside the forward of a submodule's class: make that class a leaf."""
    for frame in reversed(failure.frames[1:]):
        if frame.function != "forward":
            continue
        source = text_of(frame.path)
        name = _enclosing_class(source, frame.line) if source is not None else None
        if name is None or (frame.path == module.path and name == module.class_name):
            continue
        qualified = f"{import_location(frame.path).module_name}:{name}"
        return [
            Fix(
                f"Treat {name} as a leaf module (pyproject.toml)",
                _pyproject(module, root_of),
                functools.partial(fixes.add_leaf_module, name=qualified),
            )
        ]
    return []


def _concrete_fixes(
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf
) -> list[Fix]:
    """Control flow on a plain ``forward`` argument of the traced class: make it concrete."""
    if failure.kind != "control-flow" or failure.path != module.path:
        return []
    source = text_of(module.path)
    if source is None or _enclosing_class(source, failure.line) != module.class_name:
        return []
    plain = fixes.plain_forward_arguments(source, module.class_name)
    found = []
    path = _pyproject(module, root_of)
    qualified = module.qualified_name
    for name in sorted(_names(_span_text(source, failure)) & plain.keys()):
        value = plain[name]
        shown = repr(value) if not isinstance(value, bool) else str(value).lower()
        found.append(
            Fix(
                f"Trace {module.class_name} with {name} = {shown} (concrete-args, pyproject.toml)",
                path,
                functools.partial(
                    fixes.add_concrete_arg, qualified_name=qualified, argument=name, value=value
                ),
                True,
            )
        )
    return found


def plan(entry: Entry, text_of: TextOf, root_of: RootOf) -> list[Fix]:
    """The fixes that fit a diagnostic's failure, their edits not computed yet (cheap)."""
    failure, module = entry.failure, entry.module
    if failure is None:
        return []
    found: list[Fix] = []
    try:
        if failure.kind == "len":
            found += _len_fixes(failure, text_of)
        found += _helper_fix(failure, text_of)
        if module is not None:
            found += _leaf_fix(failure, module, text_of, root_of)
            found += _concrete_fixes(failure, module, text_of, root_of)
    except Exception:
        # libcst rejects some sources Python accepts (and the reverse): offer nothing then.
        return []
    return found


def fix_edit(
    fix: Fix, text_of: TextOf, version_of: VersionOf, encoding: str
) -> types.WorkspaceEdit | None:
    """The fix's edit, or None when it would change nothing (it is already applied) or its
    transform fails (libcst rejects some sources Python accepts)."""
    try:
        old, new = fix.texts(text_of)
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
                uri=uri, version=version_of(fix.path)
            ),
            edits=[minimal_edit(old or "", new, encoding)],
        )
    )
    return types.WorkspaceEdit(document_changes=changes)


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
    entries: list[Entry],
    context: types.CodeActionContext,
    requested: types.Range,
    text_of: TextOf,
    version_of: VersionOf,
    root_of: RootOf,
    encoding: str,
    resolve_data: Any = None,
) -> list[types.CodeAction]:
    """Quick fixes for the fx-lsp diagnostics the client sent, or that touch the range.

    With ``resolve_data`` (the client resolves code actions) the actions carry it instead of
    an edit; ``resolve`` computes the edit. Without, every edit is computed here and fixes that
    would change nothing are left out.
    """
    wanted = [d for d in context.diagnostics if d.source == "fx-lsp"]

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
    for entry in entries:
        if not matches(entry):
            continue
        for fix in plan(entry, text_of, root_of):
            if resolve_data is not None:
                actions.append(_to_code_action(fix, entry.diagnostic, None, resolve_data))
                continue
            edit = fix_edit(fix, text_of, version_of, encoding)
            if edit is not None:
                actions.append(_to_code_action(fix, entry.diagnostic, edit, None))
    return actions


def resolve(
    action: types.CodeAction,
    entries: list[Entry],
    text_of: TextOf,
    version_of: VersionOf,
    root_of: RootOf,
    encoding: str,
) -> types.CodeAction:
    """``action`` with its edit, computed from the current texts. An action whose diagnostic
    is gone, or whose fix is already applied, comes back without an edit (it does nothing)."""
    for entry in entries:
        if not any(_same(d, entry.diagnostic) for d in action.diagnostics or []):
            continue
        for fix in plan(entry, text_of, root_of):
            if fix.title == action.title:
                action.edit = fix_edit(fix, text_of, version_of, encoding)
                return action
    return action
