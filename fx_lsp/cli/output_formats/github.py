"""``--output-format github``: GitHub Actions workflow commands that annotate a pull request."""

from __future__ import annotations

from typing import TextIO

from fx_lsp.cli.output_formats.common import heading
from fx_lsp.escaping import terminal, terminal_lines
from fxcore.reporting.shown import ShownReport


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "hint": "notice"}


def github(report: ShownReport, stream: TextIO) -> None:
    """GitHub Actions workflow commands: each problem annotates the pull request's diff.
    Escaped as ``@actions/core`` escapes them, so each is one line; the message, which the
    pull request shows, and the file name with their control characters visible, as every
    format shows them (the log shows the line as it is: an escape in a file name would
    control it; the annotation of a file so named finds no file)."""
    for shown in report.problems:
        problem = shown.problem
        message = "\n".join(terminal_lines(heading(problem)))
        place: tuple[tuple[str, object], ...] = (
            ("line", problem.line), ("col", problem.column), ("endLine", problem.end_line),
            ("endColumn", problem.end_column))
        in_cell = shown.place.cell_words
        if in_cell:
            # Lines of a notebook's cells are not lines of its file: the annotation is on the
            # file, and its message names the cell.
            place, message = (), f"{in_cell}: {message}"
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (("file", terminal(shown.place.path)), *place,
                               ("title", f"fx-lsp ({problem.code})"))
        )
        stream.write(f"::{_GITHUB_COMMANDS[problem.severity]} {properties}::"
                     f"{_escape_data(message)}\n")
