"""The output formats of ``fx-lsp check``: ``full``, ``concise``, ``json``, ``github``,
``sarif`` and ``junit``, and ``--statistics``. Each prints a ``CheckRun``; none traces."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import quote

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from fx_lsp.check import (
    CheckRun,
    cell_position,
    cell_words,
    display_path,
    forget_notebooks,
    shown_location,
)
from fx_lsp.escaping import log_line_start, terminal, terminal_lines, xml_text
from fx_lsp.fixing import text_on_disk
from fx_lsp.json_report import json_report
from fx_lsp.shards import Shard, shard_json
from fxcore.fixing import fix_plan
from fxcore.fixing.fix_apply import choose
from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.instance_trust import DOES_NOT_FIT_CODES, guessed_instance
from fxcore.model.results import CODES, Failure, ModuleResult
from fxcore.model.version import VERSION
from fxcore.reporting.parent_arguments import traced_instance
from fxcore.reporting.report import Problem
from fxcore.rules.compile import GRAPH_BREAK_RULES
from fxcore.rules.documentation import README_URL, documentation, help_url
from fxcore.workspace.paths import find_workspace_root, source_text, split_lines

FORMATS = ("full", "concise", "json", "github", "sarif", "junit")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _heading(problem: Problem) -> str:
    """``FX002 [MeanPool] len() is called ...``: the code, the classes and the message."""
    classes = f" [{problem.attribution}]" if problem.classes else ""
    return f"{problem.code}{classes}{_mode_tag(problem)} {problem.message}"


def _mode_tag(problem: Problem) -> str:
    """`` (export)`` for a problem of a capture mode other than ``fx``, else nothing."""
    return _mode_label(problem.mode)


def _mode_label(mode: str) -> str:
    return f" ({mode})" if mode != DEFAULT_MODE else ""


def _location(path: str, line: int, column: int) -> str:
    return shown_location(path, line, column)


def _terminal_location(path: str, line: int, column: int) -> str:
    """``_location`` at the start of a terminal or CI log line."""
    return log_line_start(terminal(_location(path, line, column)))


def _not_traced(run: CheckRun) -> list[ModuleResult]:
    """Each class that was not traced, once per reason, whose FX103 the selection takes as a
    note (``Report.not_traced``: not ignored, not silenced by a ``noqa``, not reported as a
    problem); none for a class whose instance does not fit it where its FX105 is reported,
    which says so."""
    reported = {(p.path, p.line, p.code) for p in run.report.problems}
    return [note.module for note in run.report.not_traced if note.module is not None
            and not any((f.path, f.line, f.code) in reported for f in note.module.failures
                        if f.code in DOES_NOT_FIT_CODES)]


def _notes(modules: list[ModuleResult]) -> list[tuple[str, str]]:
    """(location, text) of each of these classes not traced, for a terminal."""
    return [(_terminal_location(m.path, m.line, m.column),
             terminal(f"{CODES['not-traced']} {m.class_name}{_mode_label(m.mode)} was not "
                      f"traced. {m.reason}"))
            for m in modules]


def _folded_notes(count: int) -> str:
    """``7 classes not traced (--show-not-traced lists them)``."""
    them = "them" if count != 1 else "it"
    return (f"{count} class{'es' * (count != 1)} not traced (--show-not-traced lists "
            f"{them})")


def _instance_notes(problem: Problem) -> list[str]:
    """What the problem was found on, one note per class that reached it: the guessed
    instance, named, or the instance a builder, a parent, a call site or configuration
    classes built; none for a class as configured or built with its defaults."""
    notes = []
    for module in (reach.module for reach in problem.reached if reach.module is not None):
        instance = guessed_instance(module.class_name, module.arguments)
        if instance is None:
            found = _instance_note(module)
            if found is not None:
                notes.append(found)
            continue
        assert module.arguments is not None
        notes.append(f"traced with guessed arguments {instance}"
                     if module.arguments.origin != "parent" else
                     f"traced as {instance}, built with guessed arguments")
    return list(dict.fromkeys(notes))


def _instance_note(module: ModuleResult | None) -> str | None:
    """Which instance a problem was found on, when it is not the class as configured or
    built with its defaults: built by a traced parent, by a builder function, or with found
    or guessed arguments (the verdict holds for that instance)."""
    found = traced_instance(module) if module is not None else None
    if module is None or found is None:
        return None
    by_parent, words = found
    return f"{module.class_name} was traced {'as built by' if by_parent else 'with'} {words}"


def _tail(run: CheckRun) -> str:
    return run.summary.line(run.report.suppressed)


# -- concise -------------------------------------------------------------------------------


def concise(run: CheckRun, stream: TextIO) -> None:
    """One line per problem, sorted by path, line and column; workspace text in it shown by
    ``escaping.terminal``, so that it cannot add lines or control the terminal."""
    for problem in run.summary.config_problems:
        stream.write(f"warning: {terminal(problem)}\n")
    for problem in run.report.problems:
        stream.write(f"{_terminal_location(problem.path, problem.line, problem.column)}: "
                     f"{terminal(_heading(problem))}\n")
    for where, text in _notes(_not_traced(run)):
        stream.write(f"{where}: note: {text}\n")
    stream.write(_tail(run) + "\n")


# -- full ----------------------------------------------------------------------------------


def first_fix_title(problem: Problem) -> str | None:
    """The fix the editor offers first for this problem (``help:``)."""
    if not isinstance(problem.failure, Failure):
        return None
    found = fix_plan.plan(problem.failure, problem.module, text_on_disk, find_workspace_root)
    first = choose(found, unsafe=True)
    return first.title if first else None


_STYLES = {"error": "bold red", "warning": "bold yellow", "hint": "bold cyan"}


def full(run: CheckRun, stream: TextIO, help_of: Callable[[Problem], str | None]
         = first_fix_title, show_not_traced: bool | None = None) -> None:
    """Each problem with its source line and ``^^^`` under the range, the guessed instance
    it was found on as a ``note:`` line, then its fix as a ``help:`` line; coloured on a
    terminal unless ``NO_COLOR`` is set. The classes not traced are counted on one line, or
    listed with ``show_not_traced`` (None: as each workspace's ``show-not-traced`` says).
    Workspace text goes through ``escaping.terminal`` and into ``Text`` (never markup); a
    message's further lines follow it behind a ``|``, so that none starts a log line with
    ``::`` or a path."""
    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False,
                      markup=False)
    for problem in run.summary.config_problems:
        console.print(Text.assemble(("warning", "bold yellow"), f": {terminal(problem)}"))
    lines_by_path: dict[str, list[str]] = {}
    for problem in run.report.problems:
        if problem.path not in lines_by_path:
            lines_by_path[problem.path] = split_lines(source_text(problem.path, {}) or "")
        lines = lines_by_path[problem.path]
        first, *more = terminal_lines(problem.message)
        console.print(Text.assemble(
            (_terminal_location(problem.path, problem.line, problem.column), "bold"), ": ",
            (problem.code, _STYLES[problem.severity]),
            f" [{terminal(problem.attribution)}]" if problem.classes else "",
            terminal(_mode_tag(problem)), f" {first}"))
        for line in more:
            console.print(Text.assemble(("  |", "blue"), f" {line}"))
        if 0 < problem.line <= len(lines):
            raw = lines[problem.line - 1].expandtabs(1)
            # The line's number where the user reads it: in its cell, for a notebook.
            place = cell_position(problem.path, problem.line, problem.column)
            number = str(place.line if place is not None else problem.line)
            gutter = " " * len(number)
            end = problem.end_column if problem.end_line == problem.line else len(raw) + 1
            start = min(problem.column - 1, len(raw))
            # Measured on the line as shown: a control character shows as a symbol or \xNN.
            width = max(cell_len(terminal(raw[start:max(end - 1, start + 1)])), 1)
            console.print(Text(f"{gutter} |", style="blue"))
            console.print(Text.assemble((f"{number} |", "blue"), f" {terminal(raw)}"))
            console.print(Text.assemble(
                (f"{gutter} |", "blue"), " " + " " * cell_len(terminal(raw[:start])),
                ("^" * width + f" {problem.code}", _STYLES[problem.severity])))
            console.print(Text(f"{gutter} |", style="blue"))
        for note in _instance_notes(problem):
            console.print(Text.assemble(("  = note", "bold"), f": {terminal(note)}"))
        fix = help_of(problem)
        if fix:
            console.print(Text.assemble(("  = help", "bold cyan"), f": {terminal(fix)}"))
        console.print()
    listed: list[ModuleResult] = []
    folded: set[tuple[str, int]] = set()
    for module in _not_traced(run):
        listing = run.shows_not_traced(module.path) if show_not_traced is None \
            else show_not_traced
        if listing:
            listed.append(module)
        else:
            folded.add((module.path, module.line))
    for where, text in _notes(listed):
        console.print(Text.assemble((where, "bold"), ": note: ", text))
    if folded:
        console.print(Text.assemble(("note", "bold"), f": {_folded_notes(len(folded))}"))
    console.print(_tail(run))


# -- json ----------------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "hint": "notice"}


def github(run: CheckRun, stream: TextIO) -> None:
    """GitHub Actions workflow commands: each problem annotates the pull request's diff.
    Escaped as ``@actions/core`` escapes them, so each is one line; the message, which the
    pull request shows, with its control characters visible (the file name stays exact, or
    the annotation would not find its file)."""
    for problem in run.report.problems:
        message = "\n".join(terminal_lines(_heading(problem)))
        place: tuple[tuple[str, object], ...] = (
            ("line", problem.line), ("col", problem.column), ("endLine", problem.end_line),
            ("endColumn", problem.end_column))
        in_cell = cell_words(problem.path, problem.line, problem.column)
        if in_cell:
            # Lines of a notebook's cells are not lines of its file: the annotation is on the
            # file, and its message names the cell.
            place, message = (), f"{in_cell}: {message}"
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (("file", display_path(problem.path)), *place,
                               ("title", f"fx-lsp ({problem.code})"))
        )
        stream.write(f"::{_GITHUB_COMMANDS[problem.severity]} {properties}::"
                     f"{_escape_data(message)}\n")


# -- sarif ---------------------------------------------------------------------------------


_SARIF_LEVELS = {"error": "error", "warning": "warning", "hint": "note"}


def _uri(path: str) -> str:
    # A file name that is not UTF-8 holds its bytes as lone surrogates: percent-encode them.
    return quote(display_path(path).replace(os.sep, "/"), errors="surrogateescape")


def sarif_rules(occurring: set[str]) -> list[dict[str, Any]]:
    """A rule per code of this project, and per graph break (PyTorch's ~500 GBnnnn) only
    when it occurs, as ruff lists only the rules it reports."""
    graph_breaks = {rule.code for rule in GRAPH_BREAK_RULES}
    return [
        {
            "id": doc.code,
            "shortDescription": {"text": doc.title},
            "fullDescription": {"text": doc.text},
            "help": {"text": doc.text, "markdown": doc.text},
            "helpUri": help_url(doc.code),
        }
        for doc in documentation().values()
        if doc.code not in graph_breaks or doc.code in occurring
    ]


def sarif(run: CheckRun, shard: Shard | None = None) -> dict[str, Any]:
    """SARIF 2.1.0: one run, a rule per code, a result per problem."""
    rules = sarif_rules({problem.code for problem in run.report.problems})
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = []
    for problem in run.report.problems:
        physical: dict[str, Any] = {
            "artifactLocation": {"uri": _uri(problem.path)},
            "region": {"startLine": problem.line, "startColumn": problem.column,
                       "endLine": problem.end_line, "endColumn": problem.end_column},
        }
        text = _heading(problem)
        place = cell_position(problem.path, problem.line, problem.column)
        result: dict[str, Any] = {
            "ruleId": problem.code,
            "level": _SARIF_LEVELS[problem.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": physical}],
        }
        if place is not None:
            # A region would count the file's JSON lines: the notebook is the location, the
            # message names the cell, and the properties hold its place there.
            del physical["region"]
            result["message"]["text"] = \
                f"cell {place.cell_number}:{place.line}:{place.column}: {text}"
            result["properties"] = {"fx-lsp": {"cell": place.cell_number,
                                               "startLine": place.line,
                                               "startColumn": place.column}}
        if problem.code in index:
            result["ruleIndex"] = index[problem.code]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "fx-lsp", "version": VERSION,
                                "informationUri": README_URL, "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            **({"properties": {"fx-lsp": {"shard": shard_json(shard)}}} if shard else {}),
        }],
    }


# -- junit ---------------------------------------------------------------------------------


def junit(run: CheckRun) -> str:
    """JUnit XML: a test suite per file, a failing test case per problem (a passing one for a
    file without problems). Workspace text goes through ``escaping.xml_text``: ElementTree
    escapes markup but writes characters XML cannot hold as they are."""
    by_path: dict[str, list[Problem]] = {result.path: [] for result in run.results}
    for problem in run.report.problems:
        by_path.setdefault(problem.path, []).append(problem)
    suites = ET.Element("testsuites", name="fx-lsp", tests=str(max(len(run.report.problems), 0)),
                        failures=str(len(run.report.problems)))
    for path, problems in sorted(by_path.items()):
        shown_path = xml_text(display_path(path))
        suite = ET.SubElement(suites, "testsuite", name=shown_path,
                              tests=str(max(len(problems), 1)), failures=str(len(problems)))
        for problem in problems:
            place = cell_position(problem.path, problem.line, problem.column)
            where = f"line {problem.line}, column {problem.column}" if place is None else \
                f"cell {place.cell_number}, line {place.line}, column {place.column}"
            case = ET.SubElement(suite, "testcase", classname=shown_path,
                                 name=f"{problem.code} at {where}")
            heading = xml_text(_heading(problem))
            failure = ET.SubElement(case, "failure", message=heading, type=problem.code)
            failure.text = f"{xml_text(_location(problem.path, problem.line, problem.column))}" \
                f": {heading}"
        if not problems:
            ET.SubElement(suite, "testcase", classname=shown_path, name="fx-lsp")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


# -- statistics ----------------------------------------------------------------------------


def statistics(run: CheckRun, stream: TextIO) -> None:
    """The number of problems per code, most frequent first."""
    counts = Counter(problem.code for problem in run.report.problems)
    docs = documentation()
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        title = docs[code].title if code in docs else ""
        stream.write(f"{count:>5}\t{code}\t{title}\n")


def write(run: CheckRun, output_format: str, stream: TextIO, shard: Shard | None = None,
          show_not_traced: bool | None = None) -> None:
    forget_notebooks()  # notebooks as they are now: a fix may have edited them
    if output_format == "full":
        full(run, stream, show_not_traced=show_not_traced)
    elif output_format == "concise":
        concise(run, stream)
    elif output_format == "github":
        github(run, stream)
    elif output_format == "junit":
        stream.write(junit(run) + "\n")
    else:
        data = json_report(run, shard) if output_format == "json" else sarif(run, shard)
        json.dump(data, stream, indent=2)
        stream.write("\n")
