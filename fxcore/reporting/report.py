"""What gets reported from a set of results: one problem per place, code, capture mode and
message, whatever number of classes reached it, minus what suppression comments and
``select``/``ignore``/``per-file-ignores`` silence, plus the suppressions that silenced nothing
(FX900).

The command line prints these problems and the language server publishes them; both get the
same answer from the same results.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.instance_trust import inputs_made_up_for_submodule, on_guessed_arguments
from fxcore.model.job_spec import ReportConfig
from fxcore.model.results import CODES, Failure, FileResult, Hint, ModuleResult, Span
from fxcore.reporting import class_notes
from fxcore.rules import BY_CODE, Severity
from fxcore.workspace import suppressions
from fxcore.workspace.file_access import TextOf
from fxcore.workspace.noqa_lines import NoqaLines
from fxcore.workspace.parsing import outline
from fxcore.workspace.suppressions import SKIP_REASON, Directive


@dataclass
class Selection:
    """Which codes one workspace reports, from its ``ReportConfig``."""

    config: ReportConfig = field(default_factory=ReportConfig)
    root: str = ""
    #: Information codes (``Rule.information``: FX103, FX104) selected like any other code;
    #: the others are reported only when ``select`` names them in full. The command line
    #: gives none (its output is about problems), the editor FX104, and FX103 with
    #: ``showNotTraced``.
    shown_information: frozenset[str] = frozenset()

    def reports(self, code: str, path: str) -> bool:
        """``select``/``ignore``: the longest matching prefix decides (ignoring, between
        equal ones); then ``per-file-ignores`` removes codes whatever was selected."""
        rule = BY_CODE.get(code)
        opt_in = rule is not None and rule.information and code not in self.shown_information
        rules = [(len(p), False, True) for p in self.config.select
                 if code == p or (code.startswith(p) and not opt_in)]
        rules += [(len(p), True, False) for p in self.config.ignore if code.startswith(p)]
        if not rules or not max(rules)[2]:
            return False
        relative = os.path.relpath(path, self.root).replace(os.sep, "/") if self.root else path
        return not any(
            code.startswith(prefix)
            for pattern, prefixes in self.config.per_file_ignores.items()
            if fnmatch.fnmatch(relative, pattern)
            or fnmatch.fnmatch(os.path.basename(path), pattern)
            for prefix in prefixes
        )


@dataclass(frozen=True)
class Reach:
    """One trace that reached a problem's place: a class's, or a file's import (``module``
    None). Where the editor shows a problem and what it says of it come from these."""

    #: The file whose trace found it.
    traced_path: str
    module: ModuleResult | None
    item: Failure | Hint


@dataclass
class Problem(Span):
    code: str
    message: str
    severity: Severity
    #: The traces that reached this place, the one of the class it is in first, when known;
    #: empty for suppression reports (FX900).
    reached: list[Reach] = field(default_factory=list)
    #: For FX900: the suppression comment, and its codes that silenced nothing (None: it
    #: silenced nothing at all).
    directive: Directive | None = None
    unused: frozenset[str] | None = None
    #: The capture mode whose verdict found it (``fx`` for file-level problems and FX900).
    mode: str = DEFAULT_MODE

    @property
    def failure(self) -> Failure | Hint | None:
        """The first failure (or hint) of the group: what fixes are planned from."""
        return self.reached[0].item if self.reached else None

    @property
    def module(self) -> ModuleResult | None:
        """The class result the first failure came from."""
        return self.reached[0].module if self.reached else None

    @property
    def classes(self) -> list[str]:
        """The classes whose trace reached this place, the one it is in first."""
        return list(dict.fromkeys(reach.module.class_name for reach in self.reached
                                  if reach.module is not None))

    @property
    def attribution(self) -> str:
        """``ConvBlock``, or ``ConvBlock; also reached from Encoder, UNet``."""
        if len(self.classes) <= 1:
            return "".join(self.classes)
        return f"{self.classes[0]}; also reached from {', '.join(self.classes[1:])}"

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    #: FX103 of the classes not traced where the selection reports it but as information
    #: left to the output (the command line's notes): not silenced, ignored nor reported.
    not_traced: list[Problem] = field(default_factory=list)
    #: How many problems suppression comments silenced, and how many the selection left out.
    suppressed: int = 0
    unselected: int = 0
    #: How many problems a baseline (``fxcore.reporting.baseline``) took out of ``problems``.
    baselined: int = 0


def _enclosing_first(reached: list[Reach], span: Span) -> list[Reach]:
    """The classes that reached ``span``, the one declared last before it in its file first:
    its own trace says best what happens there."""
    before = [reach for reach in reached if reach.module is not None
              and reach.module.path == span.path and reach.module.line <= span.line]
    if not before:
        return reached
    first = max(before, key=lambda reach: reach.module.line if reach.module else 0)
    return [first, *(reach for reach in reached if reach is not first)]


class _Directives:
    """Suppression comments of files, parsed once each, and which of their codes were used."""

    def __init__(self, text_of: TextOf) -> None:
        self._text_of = text_of
        self._texts: dict[str, str | None] = {}
        self._by_path: dict[str, dict[int, list[Directive]]] = {}
        self._governing: dict[str, NoqaLines] = {}
        #: (path, id of the directive, code): the directives are kept in ``_by_path``.
        self.used: set[tuple[str, int, str]] = set()

    def text(self, path: str) -> str | None:
        """The file's text, read once."""
        if path not in self._texts:
            self._texts[path] = self._text_of(path)
        return self._texts[path]

    def of(self, path: str) -> dict[int, list[Directive]]:
        if path not in self._by_path:
            text = self.text(path)
            self._by_path[path] = suppressions.parse(text) if text is not None else {}
        return self._by_path[path]

    def governing(self, path: str) -> NoqaLines:
        """Which line's comments govern each line of the file (a string's or a backslash
        continuation's last line)."""
        if path not in self._governing:
            self._governing[path] = suppressions.governing_lines(self.text(path) or "")
        return self._governing[path]

    def silence(self, code: str, places: Iterable[tuple[str, int]]) -> bool:
        """True when a directive governing one of ``places`` silences ``code`` (marking it
        used)."""
        silenced = False
        for path, line in places:
            directives = self.of(path)
            if not directives:
                continue  # no need of where comments govern (a tokenization of the file)
            for directive in directives.get(self.governing(path).of(line), []):
                if directive.silences(code):
                    self.used.add((path, id(directive), code))
                    silenced = True
        return silenced


#: Severities, least first.
_SEVERITY_ORDER: tuple[Severity, ...] = ("hint", "warning", "error")


def severity(item: Failure | Hint, module: ModuleResult | None) -> Severity:
    """The severity of a problem as one class's trace found it: its rule's, or the rule's
    own for a guessed instance (a problem the guess may have made; also a submodule traced on
    inputs inferred for it alone, ``inputs_made_up_for_submodule``) or for configured example
    inputs (``Rule.severity_on_guessed_instance``, ``severity_with_configured_inputs``)."""
    rule = BY_CODE[item.code]
    if module is not None:
        if rule.severity_on_guessed_instance is not None \
                and (on_guessed_arguments(module.arguments)
                     or inputs_made_up_for_submodule(module)):
            return rule.severity_on_guessed_instance
        if rule.severity_with_configured_inputs is not None and module.inputs is not None \
                and module.inputs.origin == "config":
            return rule.severity_with_configured_inputs
    return rule.severity


def _highest_severity(reached: list[Reach]) -> Severity:
    """A problem's severity: the highest of the traces that reached it (one on a real
    instance is not lowered by another on a guessed one)."""
    return max((severity(reach.item, reach.module) for reach in reached),
               key=_SEVERITY_ORDER.index)


def line_shapes(module: ModuleResult) -> dict[tuple[str, int], str]:
    """(path, line) -> the shape of the value the line produces: its last node with a shape
    (a line that calls a helper produces what the helper returns)."""
    found = {}
    for place, nodes in module.line_nodes.items():
        shaped = [node.shape for node in nodes if node.shape is not None]
        if shaped:
            found[place] = shaped[-1]
    return found


def _places(item: Failure | Hint) -> list[tuple[str, int]]:
    """The reported line and, for a failure, each call line of its chain."""
    frames = item.frames if isinstance(item, Failure) else []
    return [(item.path, item.line), *((frame.path, frame.line) for frame in frames)]


def _unused(path: str, directives: dict[int, list[Directive]], used: set[tuple[str, int, str]],
            class_lines: set[int], traced_lines: set[int]) -> list[Problem]:
    found = []
    for line, on_line in sorted(directives.items()):
        for directive in on_line:
            if directive.kind != "skip" and line not in traced_lines:
                continue  # outside the classes traced here: what reaches it may not be in view
            unused: frozenset[str] | None = None
            if directive.kind == "skip":
                if line in class_lines:
                    continue
                message = "Unused `# fx-lsp: skip`: no class is declared on this line."
            else:
                codes = directive.reportable_codes
                used_codes = {code for p, d, code in used if p == path and d == id(directive)}
                if codes is None:
                    if used_codes:
                        continue
                    message = "Unused suppression: nothing is reported here."
                else:
                    if not codes - used_codes:
                        continue
                    unused = frozenset(codes - used_codes)
                    if unused == directive.codes:
                        unused = None  # all it names: remove it whole
                    message = (f"Unused suppression of {', '.join(sorted(codes - used_codes))}:"
                               " not reported here.")
            found.append(Problem(**directive.range.at(path), code=CODES["unused-suppression"],
                                 message=message,
                                 severity=BY_CODE[CODES["unused-suppression"]].severity,
                                 directive=directive,
                                 unused=unused))
    return found


def collect(results: list[FileResult], text_of: TextOf,
            selection_of: Callable[[str], Selection],
            checked: Iterable[str] | None = None) -> Report:
    """The report of ``results``. Unused suppressions are looked for in the files of
    ``checked`` (default: every result's file) whose own trace completed (a file that could
    not be imported, or a class that timed out, may leave a used one unseen), inside the
    bodies of the classes traced there: a helper function elsewhere may be reached from
    classes this report does not include."""
    report = Report()
    #: One group per place, code, capture mode and message: two modes' failures stay apart,
    #: and so do two classes' that say different things there (a helper that raises with
    #: each caller's value).
    groups: dict[tuple[str, int, int, int, int, str, str, str], list[Reach]] = {}
    directives = _Directives(text_of)
    suppressed: set[tuple[str, int, int, int, int, str, str, str]] = set()
    items = [Reach(result.path, None, error) for result in results for error in result.errors]
    items += [Reach(result.path, module, item) for result in results for module in result.modules
              for item in (*module.failures, *module.shape_errors, *module.hints,
                           *class_notes.notes(module))]
    for reach in items:
        item = reach.item
        # A hint is one whatever the modes that found it: an unused submodule (FX200) is so
        # in every mode, and so are a class's notes (FX103, FX104: every mode of a skipped or
        # unbuilt class says the same, and its arguments are shared).
        mode = reach.module.mode if reach.module is not None \
            and not isinstance(item, Hint) else DEFAULT_MODE
        key = (item.path, item.line, item.column, item.end_line, item.end_column, item.code,
               mode, item.message)
        # Each class's own call chain decides: a comment on one caller's line silences the
        # failure as reached through that call only.
        if directives.silence(item.code, _places(item)):
            suppressed.add(key)
            continue
        reached = groups.setdefault(key, [])
        if reach.module is None or not any(r.module is reach.module for r in reached):
            reached.append(reach)
    # Counted as silenced only where they would be reported: an information code the
    # selection leaves out (FX104 on the command line) is not a silenced problem.
    report.suppressed = sum(1 for key in suppressed - groups.keys()
                            if selection_of(key[0]).reports(key[5], key[0]))

    for reached in groups.values():
        ordered = _enclosing_first(reached, reached[0].item)
        first = ordered[0]
        problem = Problem(**first.item.span(), code=first.item.code, message=first.item.message,
                          severity=_highest_severity(ordered), reached=ordered,
                          mode=first.module.mode if first.module else DEFAULT_MODE)
        selection = selection_of(problem.path)
        if selection.reports(problem.code, problem.path):
            report.problems.append(problem)
            continue
        report.unselected += 1
        if problem.code == CODES["not-traced"] and dataclasses.replace(
                selection, shown_information=selection.shown_information | {problem.code}
        ).reports(problem.code, problem.path):
            report.not_traced.append(problem)

    by_path = {r.path: r for r in results}
    complete = {r.path for r in results if not r.errors and not any(
        f.kind in ("timeout", "crash") for m in r.modules for f in m.failures)}
    for path in sorted(set(checked if checked is not None else complete) & complete):
        result = by_path[path]
        class_lines = {m.line for m in result.modules if m.reason == SKIP_REASON}
        traced = {m.class_name for m in result.modules if m.status != "not-traced"}
        found = outline(directives.text(path) or "")
        traced_lines = {line for name, first, last in (found.classes if found else ())
                        if name in traced for line in range(first, last + 1)}
        for problem in _unused(path, directives.of(path), directives.used, class_lines,
                               traced_lines):
            if selection_of(path).reports(problem.code, path):
                report.problems.append(problem)
    report.problems.sort(key=lambda p: p.sort_key)
    report.not_traced.sort(key=lambda p: p.sort_key)
    return report
