"""Quick fixes for fx-lsp diagnostics, as versioned ``TextDocumentEdit``s.

The transforms themselves live in ``fxcore.fixes`` (libcst / tomlkit, idempotent); this module
decides which fixes fit a failure and turns their new text into the smallest edit. Deciding is
cheap but for one ``ast`` parse per text; computing an edit parses with libcst, which takes
seconds on a 20,000-line file, so clients that resolve code actions get the list without
edits and ask for one edit on ``codeAction/resolve``. Both parses go through ``run``: the
server runs them in a process of its own (``fx_lsp.parse_process``), cached per text.
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
from fx_lsp.parse_process import Run, run_here
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

    def texts(self, text_of: TextOf, run: Run = run_here) -> tuple[str | None, str]:
        """(current text or None, fixed text): the expensive part, done on resolve."""
        old = text_of(self.path)
        return old, run(self.transform, old or "")


@dataclass(frozen=True)
class Outline:
    """What planning needs of a file's top level, from one ``ast`` parse."""

    #: (name, first line, last line) of each top-level class.
    classes: tuple[tuple[str, int, int], ...]
    functions: frozenset[str]


def outline(source: str) -> Outline | None:
    """The file's top-level classes and functions; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return Outline(
        classes=tuple(
            (node.name, node.lineno, node.end_lineno or node.lineno)
            for node in tree.body
            if isinstance(node, ast.ClassDef)
        ),
        functions=frozenset(
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
    )


def _location_frame(failure: Failure) -> Frame | None:
    """The frame the failure is reported at (its innermost workspace frame)."""
    for frame in reversed(failure.frames):
        if frame.path == failure.path and frame.line == failure.line:
            return frame
    return failure.frames[-1] if failure.frames else None


def _enclosing_class(source: str, line: int, run: Run) -> str | None:
    found = run(outline, source)
    for name, first, last in found.classes if found is not None else ():
        if first <= line <= last:
            return name
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
    line, column = failure.line, failure.column
    return [
        Fix('Wrap len for tracing: torch.fx.wrap("len")', failure.path, fixes.wrap_len, True),
        Fix(
            f"Replace {_span_text(source, failure) or 'len(x)'} with .size(0)",
            failure.path,
            functools.partial(fixes.len_to_size, line=line, column=column),
        ),
    ]


def _helper_fix(failure: Failure, text_of: TextOf, run: Run) -> list[Fix]:
    frame = _location_frame(failure)
    source = text_of(failure.path)
    if frame is None or source is None or frame.function == "forward":
        return []
    function = frame.function
    found = run(outline, source)
    if found is None or function not in found.functions:
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
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf, run: Run
) -> list[Fix]:
    """A failure inside the forward of a submodule's class: make that class a leaf."""
    for frame in reversed(failure.frames[1:]):
        if frame.function != "forward":
            continue
        source = text_of(frame.path)
        name = _enclosing_class(source, frame.line, run) if source is not None else None
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
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf, run: Run
) -> list[Fix]:
    """Control flow on a plain ``forward`` argument of the traced class: make it concrete."""
    if failure.kind != "control-flow" or failure.path != module.path:
        return []
    source = text_of(module.path)
    if source is None or _enclosing_class(source, failure.line, run) != module.class_name:
        return []
    plain = run(fixes.plain_forward_arguments, source, module.class_name)
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


def plan(entry: Entry, text_of: TextOf, root_of: RootOf, run: Run = run_here) -> list[Fix]:
    """The fixes that fit a diagnostic's failure, their edits not computed yet (cheap but for
    one parse per text, which ``run`` does)."""
    failure, module = entry.failure, entry.module
    if failure is None:
        return []
    found: list[Fix] = []
    try:
        if failure.kind == "len":
            found += _len_fixes(failure, text_of)
        found += _helper_fix(failure, text_of, run)
        if module is not None:
            found += _leaf_fix(failure, module, text_of, root_of, run)
            found += _concrete_fixes(failure, module, text_of, root_of, run)
    except Exception:
        # libcst rejects some sources Python accepts (and the reverse): offer nothing then.
        return []
    return found


def fix_edit(
    fix: Fix, text_of: TextOf, version_of: VersionOf, encoding: str, run: Run = run_here
) -> types.WorkspaceEdit | None:
    """The fix's edit, or None when it would change nothing (it is already applied) or its
    transform fails (libcst rejects some sources Python accepts)."""
    try:
        old, new = fix.texts(text_of, run)
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
    run: Run = run_here,
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
        for fix in plan(entry, text_of, root_of, run):
            if resolve_data is not None:
                actions.append(_to_code_action(fix, entry.diagnostic, None, resolve_data))
                continue
            edit = fix_edit(fix, text_of, version_of, encoding, run)
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
    run: Run = run_here,
) -> types.CodeAction:
    """``action`` with its edit, computed from the current texts. An action whose diagnostic
    is gone, or whose fix is already applied, comes back without an edit (it does nothing)."""
    for entry in entries:
        if not any(_same(d, entry.diagnostic) for d in action.diagnostics or []):
            continue
        for fix in plan(entry, text_of, root_of, run):
            if fix.title == action.title:
                action.edit = fix_edit(fix, text_of, version_of, encoding, run)
                return action
    return action
