"""``--output-format full`` (the default): each problem with its source line, notes and fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from fx_lsp.cli.output_formats.common import folded_notes, mode_tag, notes, terminal_location
from fx_lsp.escaping import terminal, terminal_lines
from fxcore.api.quick_fixes import first_fix_title
from fxcore.reporting.report import Problem
from fxcore.reporting.shown import ShownReport
from fxcore.workspace.paths import source_text, split_lines

_STYLES = {"error": "bold red", "warning": "bold yellow", "hint": "bold cyan"}


def full(report: ShownReport, stream: TextIO, help_of: Callable[[Problem], str | None]
         = first_fix_title) -> None:
    """Each problem with its source line and ``^^^`` under the range, the guessed instance
    it was found on as a ``note:`` line, then its fix as a ``help:`` line; coloured on a
    terminal unless ``NO_COLOR`` is set. The classes not traced are listed, or counted on one
    line (``NotTraced.listed``).
    Workspace text goes through ``escaping.terminal`` and into ``Text`` (never markup); a
    message's further lines follow it behind a ``|``, so that none starts a log line with
    ``::`` or a path."""
    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False,
                      markup=False)
    for warning in report.summary.config_problems:
        console.print(Text.assemble(("warning", "bold yellow"), f": {terminal(warning)}"))
    lines_by_path: dict[str, list[str]] = {}
    for shown in report.problems:
        problem = shown.problem
        if problem.path not in lines_by_path:
            lines_by_path[problem.path] = split_lines(source_text(problem.path, {}) or "")
        lines = lines_by_path[problem.path]
        first, *more = terminal_lines(problem.message)
        console.print(Text.assemble(
            (terminal_location(shown.place), "bold"), ": ",
            (problem.code, _STYLES[problem.severity]),
            f" [{terminal(problem.attribution)}]" if problem.classes else "",
            terminal(mode_tag(problem)), f" {first}"))
        for line in more:
            console.print(Text.assemble(("  |", "blue"), f" {line}"))
        if 0 < problem.line <= len(lines):
            raw = lines[problem.line - 1].expandtabs(1)
            # The line's number where the user reads it: in its cell, for a notebook.
            place = shown.place.cell
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
        for note in shown.notes:
            console.print(Text.assemble(("  = note", "bold"), f": {terminal(note)}"))
        fix = help_of(problem)
        if fix:
            console.print(Text.assemble(("  = help", "bold cyan"), f": {terminal(fix)}"))
        console.print()
    folded = {(note.module.path, note.module.line) for note in report.not_traced
              if not note.listed}
    for where, text in notes([note for note in report.not_traced if note.listed]):
        console.print(Text.assemble((where, "bold"), ": note: ", text))
    if folded:
        console.print(Text.assemble(("note", "bold"), f": {folded_notes(len(folded))}"))
    console.print(report.summary_line())
