"""The report's problems -> LSP diagnostics for one document.

``fxcore.reporting.report.collect`` decides what is shown (suppressions, select/ignore, one problem
per
place and code); this module converts each problem to a diagnostic, in one walk. A document's
diagnostics come from its own trace and, for failures located in it, from the traces of other
open files that import it (a submodule defined here, used by a model there). Each diagnostic
remembers the problem and failure it shows so code actions and hovers can find them again.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types

from fx_lsp.features import positions
from fx_lsp.features.initialization_options import SEVERITIES, Options
from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.results import Failure, Frame, Hint, ModuleResult, Range, Span
from fxcore.reporting.report import Problem, Reach, Report
from fxcore.rules import BY_CODE
from fxcore.rules.documentation import help_url
from fxcore.workspace.parsing import parse_module

SOURCE = "fx-lsp"


def source_of(mode: str) -> str:
    """A diagnostic's ``source``: ``fx-lsp``, or ``fx-lsp (export)`` for another capture
    mode's verdict."""
    return SOURCE if mode == DEFAULT_MODE else f"{SOURCE} ({mode})"


def is_own_source(source: str | None) -> bool:
    """A diagnostic ``source`` of fx-lsp's, whatever its capture mode."""
    return source == SOURCE or (source or "").startswith(f"{SOURCE} (")


#: Text of a file by absolute path, as its lines (the open buffer, else the file on disk).
LinesOf = Callable[[str], list[str]]
#: ``cell 3:5`` for a line of an open notebook's module (None for any other file's line), as
#: a message names the place.
CellWords = Callable[[str, int], "str | None"]


def no_cells(path: str, line: int) -> str | None:
    """No notebook is open."""
    return None


def line_words(path: str, line: int, cell_words: CellWords) -> str:
    """``12``, or ``cell 3:5`` in an open notebook: a line as messages name it."""
    return cell_words(path, line) or str(line)


def code_link(code: str) -> types.CodeDescription:
    """The page documenting ``code`` on the documentation site (``help_url``)."""
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
    #: The report's problem it shows (None for a class's summary of its failures).
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


def _name_range(module: ModuleResult, lines: list[str], encoding: str) -> types.Range:
    return positions.range_to_lsp(lines, module, encoding)


def summary_message(module: ModuleResult, document: str,
                    cell_words: CellWords = no_cells) -> str:
    count = len(module.failures)
    first = module.failures[0]
    noun = "failure" if count == 1 else "failures"
    where = f"{short_path(first.path, document)}:{line_words(first.path, first.line, cell_words)}"
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


def _lsp_severity(problem: Problem, options: Options) -> types.DiagnosticSeverity:
    """Failures take the user's ``severity``; information codes (FX103, FX104) show as
    Information; the rest as the report's severity says (FX300 from guessed inputs: Warning)."""
    if BY_CODE[problem.code].information:
        return types.DiagnosticSeverity.Information
    if problem.severity == "error":
        return options.severity
    return SEVERITIES[problem.severity]


def _shown_from(problem: Problem, path: str) -> Reach | None:
    """The trace whose finding the document at ``path`` shows of ``problem``: its own trace's
    first, else another's that imports it; None when the document does not show it. A file
    error shows in the file traced only (at its frame there); hints and class notes only from
    the document's own trace; failures located here from whichever trace reached them."""
    own = [reach for reach in problem.reached if reach.traced_path == path]
    if problem.reached and problem.module is None:
        return own[0] if own else None
    if problem.path != path:
        return None
    if own:
        return own[0]
    return problem.reached[0] if isinstance(problem.failure, Failure) else None


def _suffix(problem: Problem, reach: Reach, path: str) -> str:
    """What the message adds about the classes that reached a failure shown at ``path``."""
    if reach.module is None or not isinstance(reach.item, Failure):
        return ""
    if reach.traced_path != path:
        traced = f"tracing {reach.module.class_name} in {short_path(reach.traced_path, path)}"
        if len(problem.classes) > 1:
            traced = f"in {problem.attribution}; {traced}"
        return f" ({traced})"
    return f" (in {problem.attribution})" if len(problem.classes) > 1 else ""


def _problem_entry(problem: Problem, path: str, lines_of: LinesOf, options: Options,
                   encoding: str) -> Entry | None:
    """The diagnostic the document at ``path`` shows of ``problem``, if it shows one."""
    lines = lines_of(path)
    if problem.directive is not None:
        if problem.path != path:
            return None
        reach = None
        failure = None
        where = positions.range_to_lsp(lines, problem, encoding)
    else:
        reach = _shown_from(problem, path)
        if reach is None:
            return None
        failure = reach.item if isinstance(reach.item, Failure) else None
        if reach.module is None and failure is not None:
            where = _file_error_range(failure, path, lines, encoding)
        else:
            where = _range(lines_of, problem, encoding)
    severity = _lsp_severity(problem, options)
    # Hints (FX2xx) and unused suppressions are shown as code that could go.
    unnecessary = problem.directive is not None or (
        severity == types.DiagnosticSeverity.Hint and isinstance(problem.failure, Hint))
    diagnostic = types.Diagnostic(
        range=where,
        message=problem.message + (_suffix(problem, reach, path) if reach else ""),
        severity=severity,
        code=problem.code,
        code_description=code_link(problem.code),
        source=source_of(problem.mode),
        related_information=related_information(failure, lines_of, encoding) or None
        if failure is not None else None,
        tags=[types.DiagnosticTag.Unnecessary] if unnecessary else None,
    )
    return Entry(diagnostic, reach.module if reach else None, failure,
                 reach.traced_path if reach else path, problem)


def _summaries(path: str, report: Report, lines_of: LinesOf, options: Options,
               encoding: str, cell_words: CellWords) -> list[Entry]:
    """On the name of each class traced here whose reported failures are not all in its body
    (another function, another file): how many, and where, as related information."""
    shown: dict[int, tuple[ModuleResult, list[Failure]]] = {}
    for problem in report.problems:
        for reach in problem.reached:
            module, item = reach.module, reach.item
            if reach.traced_path == path and module is not None \
                    and any(item is failure for failure in module.failures):
                shown.setdefault(id(module), (module, []))[1].append(item)
    lines = lines_of(path)
    extents = class_extents(lines)
    entries = []
    for module, failures in sorted(shown.values(), key=lambda pair: pair[0].line):
        failures.sort(key=lambda f: next(i for i, g in enumerate(module.failures) if g is f))
        if not any(_elsewhere(failure, module, extents) for failure in failures):
            continue
        first = failures[0]
        diagnostic = types.Diagnostic(
            range=_name_range(module, lines, encoding),
            message=summary_message(module, path, cell_words),
            severity=options.severity,
            code=first.code,
            code_description=code_link(first.code),
            source=source_of(module.mode),
            related_information=[
                types.DiagnosticRelatedInformation(
                    location=types.Location(uri=path_to_uri(f.path),
                                            range=_range(lines_of, f, encoding)),
                    message=f"{f.code}: {f.message}",
                )
                for f in failures
            ],
        )
        entries.append(Entry(diagnostic, module, first, path))
    return entries


def build(path: str, report: Report, lines_of: LinesOf, options: Options, encoding: str,
          cell_words: CellWords = no_cells) -> list[Entry]:
    """The diagnostics of the document at ``path``: one per problem of ``report`` (of its own
    result and of the files traced with it) that shows here, then a summary on the name of
    each class whose failures are elsewhere."""
    # The report has one problem per place, code, mode and message, whatever number of
    # classes reached it: each is shown.
    entries = [entry for entry in (_problem_entry(problem, path, lines_of, options, encoding)
                                   for problem in report.problems) if entry is not None]
    shown = {_place(entry) for entry in entries}
    # A class's summary on its name gives way to a problem of the same code shown there.
    entries += [entry for entry in _summaries(path, report, lines_of, options, encoding,
                                              cell_words)
                if _place(entry) not in shown]
    return entries


def _place(entry: Entry) -> tuple[int, int, int, int, str, str]:
    """Where a diagnostic is, its code and its source (which names the capture mode)."""
    r = entry.diagnostic.range
    return (r.start.line, r.start.character, r.end.line, r.end.character,
            str(entry.diagnostic.code), str(entry.diagnostic.source))
