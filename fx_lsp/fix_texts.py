"""Fixes as the command line and ``fx-lsp mcp`` show them (``fxcore.api.fixes`` plans them): a
unified diff per file, and a line per fix not made, workspace text made inert
(``fx_lsp.escaping``)."""

from __future__ import annotations

import difflib
from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fxcore.fixing.fix_apply import Edits
from fxcore.reporting.shown import display_path


def write_diff(edits: Edits, stream: TextIO) -> None:
    """A unified diff per file; control characters in the lines shown as ruff shows them
    (the line ends kept), so a file cannot control the terminal through its diff."""
    for path, (old, new) in edits.files.items():
        shown = terminal(display_path(path))
        for line in difflib.unified_diff(
                (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                fromfile=shown if old is not None else "/dev/null", tofile=shown):
            body = line.rstrip("\r\n")
            stream.write(terminal(body) + line[len(body):])


def refusal_lines(refusals: list[tuple[str, str]]) -> list[str]:
    """``model.py: not fixed: why`` for each (path, why)."""
    return [f"{log_line_start(terminal(display_path(path)))}: not fixed: {terminal(reason)}\n"
            for path, reason in refusals]
