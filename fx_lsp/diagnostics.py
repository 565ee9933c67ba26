"""fxcore results -> LSP diagnostics for one document.

A document's diagnostics come from its own trace and, for failures located in it, from the
traces of other open files that import it (a submodule defined here, used by a model there).
Each diagnostic remembers the failure it shows so code actions and hovers can find it again.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lsprotocol import types

from fx_lsp import positions
from fx_lsp.initialization_options import Options
from fxcore.arguments import describe
from fxcore.capture_modes import DEFAULT_MODE
from fxcore.codes import help_url
from fxcore.parsing import parse_module
from fxcore.report import Problem, Report
from fxcore.results import Failure, FileResult, Frame, Hint, ModuleResult, Range, Span

SOURCE = "fx-lsp"


def source_of(mode: str) -> str:
    """A diagnostic's ``source``: ``fx-lsp``, or ``fx-lsp (export)`` for another capture
    mode's verdict."""
    return SOURCE if mode == DEFAULT_MODE else f"{SOURCE} ({mode})"

#: Text of a file by absolute path, as its lines (the open buffer, else the file on disk).
LinesOf = Callable[[str], list[str]]


def code_link(code: str) -> types.CodeDescription:
    """The README section documenting ``code`` (one per code, anchors like ``#fx002``)."""
    return types.CodeDescription(href=help_url(code))


def path_to_uri(path: str) -> str:
    from pygls.uris import from_fs_path

    return from_fs_path(path) or f"file://{path}"


@dataclass
class Entry:
    """A published diagnostic and what it is about."""

    diagnostic: types.Diagnostic
    module: ModuleResult | None
    failure: Failure | None
    #: The file whose trace produced it.
    traced_path: str
    #: What the report says of it (classes that reached it; for FX900, the suppression).
    problem: Problem | None = None


def class_extents(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level class name -> (first line, last line) of its body, from the current text."""
    try:
        tree = parse_module("\n".join(lines))
    except SyntaxError:
        return {}
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def short_path(path: str, relative_to: str) -> str:
    """``layers.py`` or ``pkg/layers.py`` next to the document, else the file name."""
    relative = os.path.relpath(path, os.path.dirname(relative_to))
    return os.path.basename(path) if relative.startswith("..") else relative


def _range(lines_of: LinesOf, span: Span, encoding: str) -> types.Range:
    return positions.range_to_lsp(lines_of(span.path), span, encoding)


def related_information(
    failure: Failure, lines_of: LinesOf, encoding: str
) -> list[types.DiagnosticRelatedInformation]:
    """Each outer frame of the call chain: where the next function down was called from."""
    related = []
    for caller, callee in zip(failure.frames, failure.frames[1:], strict=False):
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=path_to_uri(caller.path), range=_range(lines_of, caller, encoding)
                ),
                message=f"{callee.function}() called from {caller.function}()",
            )
        )
    return related


def _failure_diagnostic(
    failure: Failure, lines_of: LinesOf, options: Options, encoding: str, suffix: str = ""
) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(lines_of, failure, encoding),
        message=failure.message + suffix,
        severity=options.severity,
        code=failure.code,
        code_description=code_link(failure.code),
        source=SOURCE,
        related_information=related_information(failure, lines_of, encoding) or None,
    )


def _name_range(module: ModuleResult, lines: list[str], encoding: str) -> types.Range:
    return positions.range_to_lsp(lines, module, encoding)


def summary_message(module: ModuleResult, document: str) -> str:
    count = len(module.failures)
    first = module.failures[0]
    noun = "failure" if count == 1 else "failures"
    where = f"{short_path(first.path, document)}:{first.line}"
    return (
        f"{module.class_name} is not FX-traceable: {count} {noun} "
        f"(first: {first.kind.replace('-', ' ')} at {where})"
    )


def _elsewhere(failure: Failure, module: ModuleResult, extents: dict[str, tuple[int, int]]) -> bool:
    """True when the failure is not inside the class body itself (another function or file)."""
    if failure.path != module.path:
        return True
    first, last = extents.get(module.class_name, (module.line, module.line))
    return not first <= failure.line <= last


def _file_error_range(failure: Failure, path: str, lines: list[str], encoding: str) -> types.Range:
    """Where a file-level error shows in ``path``: its own location, else its last frame here."""
    if failure.path == path:
        spot: Failure | Frame = failure
    else:
        here = [frame for frame in failure.frames if frame.path == path]
        if not here:
            return positions.range_to_lsp(lines, Range(1, 1, 1, 1 + len(lines[0])), encoding)
        spot = here[-1]
    return positions.range_to_lsp(lines, spot, encoding)


def _reported(report: Report) -> Callable[[Failure | Hint, str], Problem | None]:
    """The report's problem at a failure's (or hint's) place, of a capture mode: None when
    it is not reported (suppressed, not selected)."""
    by_place = {(p.path, p.line, p.column, p.end_line, p.end_column, p.code, p.mode): p
                for p in report.problems}

    def find(item: Failure | Hint, mode: str = DEFAULT_MODE) -> Problem | None:
        return by_place.get((item.path, item.line, item.column, item.end_line,
                             item.end_column, item.code, mode))

    return find


def _also(problem: Problem | None) -> str:
    return f" (in {problem.attribution})" if problem and len(problem.classes) > 1 else ""


def _unnecessary(item: Hint | Problem, lines: list[str], encoding: str,
                 severity: types.DiagnosticSeverity) -> types.Diagnostic:
    """A diagnostic shown as unnecessary code: a hint (FX2xx), an unused suppression."""
    return types.Diagnostic(
        range=positions.range_to_lsp(lines, item, encoding),
        message=item.message,
        severity=severity,
        code=item.code,
        code_description=code_link(item.code),
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary],
    )


def build(
    path: str,
    own: FileResult | None,
    others: Iterable[FileResult],
    lines_of: LinesOf,
    options: Options,
    encoding: str,
    report: Report,
) -> list[Entry]:
    """The diagnostics of the document at ``path``: what ``report`` (of ``own`` and
    ``others``) keeps, after suppressions and the selection of codes."""
    lines = lines_of(path)
    others = list(others)
    entries: list[Entry] = []
    seen: set[tuple[int, int, int, int, str, str]] = set()
    reported = _reported(report)

    def add(entry: Entry) -> None:
        # One failing expression can be reached from several classes: show it once per
        # capture mode (what is not a failure, as a hint, once for all modes).
        mode = entry.module.mode if entry.module is not None else DEFAULT_MODE
        entry.diagnostic.source = source_of(mode)
        r = entry.diagnostic.range
        key = (
            r.start.line,
            r.start.character,
            r.end.line,
            r.end.character,
            str(entry.diagnostic.code),
            mode if entry.failure is not None else DEFAULT_MODE,
        )
        if key not in seen:
            seen.add(key)
            entries.append(entry)

    if own is not None:
        extents = class_extents(lines)
        for error in own.errors:
            if reported(error) is None:
                continue
            diagnostic = _failure_diagnostic(error, lines_of, options, encoding)
            diagnostic.range = _file_error_range(error, path, lines, encoding)
            add(Entry(diagnostic, None, error, path))
        for module in own.modules:
            shown = [f for f in module.failures if reported(f, module.mode) is not None]
            for failure in shown:
                if failure.path == path:
                    problem = reported(failure, module.mode)
                    add(
                        Entry(
                            _failure_diagnostic(failure, lines_of, options, encoding,
                                                _also(problem)),
                            module,
                            failure,
                            path,
                            problem,
                        )
                    )
            if shown and any(_elsewhere(f, module, extents) for f in shown):
                first = shown[0]
                add(
                    Entry(
                        types.Diagnostic(
                            range=_name_range(module, lines, encoding),
                            message=summary_message(module, path),
                            severity=options.severity,
                            code=first.code,
                            code_description=code_link(first.code),
                            source=SOURCE,
                            related_information=[
                                types.DiagnosticRelatedInformation(
                                    location=types.Location(
                                        uri=path_to_uri(f.path), range=_range(lines_of, f, encoding)
                                    ),
                                    message=f"{f.code}: {f.message}",
                                )
                                for f in shown
                            ],
                        ),
                        module,
                        first,
                        path,
                    )
                )
            if module.status == "not-traced" and options.show_not_traced:
                add(
                    Entry(
                        types.Diagnostic(
                            range=_name_range(module, lines, encoding),
                            message=f"{module.class_name} was not traced: {module.reason}",
                            severity=types.DiagnosticSeverity.Information,
                            code="not-traced",
                            source=SOURCE,
                        ),
                        module,
                        None,
                        path,
                    )
                )
            guessed = describe(module.arguments) if module.arguments is not None \
                and module.arguments.origin == "guessed" else None
            if guessed is not None and module.path == path:
                add(
                    Entry(
                        types.Diagnostic(
                            range=_name_range(module, lines, encoding),
                            message=f"{module.class_name} was traced with {guessed}. Its "
                            "verdict holds for those; configure the real ones in "
                            "[tool.fx-lsp.modules] if they differ.",
                            severity=types.DiagnosticSeverity.Information,
                            code="guessed-arguments",
                            source=SOURCE,
                        ),
                        module,
                        None,
                        path,
                    )
                )
            for hint in module.hints:
                if hint.path != path or reported(hint, module.mode) is None:
                    continue
                add(
                    Entry(
                        _unnecessary(hint, lines, encoding, types.DiagnosticSeverity.Hint),
                        module,
                        None,
                        path,
                    )
                )

    for other in others:
        for module in other.modules:
            for failure in module.failures:
                problem = reported(failure, module.mode)
                if failure.path != path or problem is None:
                    continue
                traced = f"tracing {module.class_name} in {short_path(other.path, path)}"
                if len(problem.classes) > 1:
                    traced = f"in {problem.attribution}; {traced}"
                diagnostic = _failure_diagnostic(failure, lines_of, options, encoding,
                                                 f" ({traced})")
                add(Entry(diagnostic, module, failure, other.path, problem))
    for result in (own, *others) if own is not None else others:
        for module in result.modules:
            for failure in module.shape_errors:
                problem = reported(failure, module.mode)
                if failure.path != path or problem is None:
                    continue
                diagnostic = _failure_diagnostic(failure, lines_of, options, encoding,
                                                 _also(problem))
                if problem.severity == "warning":
                    diagnostic.severity = types.DiagnosticSeverity.Warning
                add(Entry(diagnostic, module, failure, result.path, problem))
    for problem in report.problems:
        if problem.path == path and problem.directive is not None:
            diagnostic = _unnecessary(problem, lines, encoding, types.DiagnosticSeverity.Warning)
            add(Entry(diagnostic, None, None, path, problem))
    return entries
