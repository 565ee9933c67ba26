"""``--output-format concise``: one line per problem."""

from __future__ import annotations

from typing import TextIO

from fx_lsp.check import CheckRun
from fx_lsp.escaping import terminal
from fx_lsp.output_formats.common import heading, not_traced, notes, tail, terminal_location


def concise(run: CheckRun, stream: TextIO) -> None:
    """One line per problem, sorted by path, line and column; workspace text in it shown by
    ``escaping.terminal``, so that it cannot add lines or control the terminal."""
    for problem in run.summary.config_problems:
        stream.write(f"warning: {terminal(problem)}\n")
    for problem in run.report.problems:
        stream.write(f"{terminal_location(problem.path, problem.line, problem.column)}: "
                     f"{terminal(heading(problem))}\n")
    for where, text in notes(not_traced(run)):
        stream.write(f"{where}: note: {text}\n")
    stream.write(tail(run) + "\n")
