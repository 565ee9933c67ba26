"""``--output-format concise``: one line per problem."""

from __future__ import annotations

from typing import TextIO

from fx_lsp.cli.output_formats.common import heading, notes, terminal_location
from fx_lsp.escaping import terminal
from fxcore.reporting.shown import ShownReport


def concise(report: ShownReport, stream: TextIO) -> None:
    """One line per problem, sorted by path, line and column; workspace text in it shown by
    ``escaping.terminal``, so that it cannot add lines or control the terminal."""
    for problem in report.summary.config_problems:
        stream.write(f"warning: {terminal(problem)}\n")
    for shown in report.problems:
        stream.write(f"{terminal_location(shown.place)}: {terminal(heading(shown.problem))}\n")
    for where, text in notes(report.not_traced):
        stream.write(f"{where}: note: {text}\n")
    stream.write(report.summary_line() + "\n")
