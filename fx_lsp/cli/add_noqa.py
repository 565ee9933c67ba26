"""``fx-lsp check --add-noqa``: the ``# noqa`` comments ``fxcore.api.noqa`` plans, written as
``--fix`` writes (``fxcore.api.fixes``: a notebook's cells edited in its JSON, never through a
link out of the workspace, the whole file replaced at once), and the problems that have no line
a comment can go on listed."""

from __future__ import annotations

from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fx_lsp.fix_texts import refusal_lines
from fxcore.api.fixes import notebook_edits, write_edits
from fxcore.api.noqa import plan_noqa
from fxcore.reporting.shown import ShownReport


def add_noqa_comments(report: ShownReport, stream: TextIO) -> int:
    """Add the comments, say for how many problems and list those left as they were; returns
    that number."""
    edits, listed = plan_noqa(report)
    # Each place as the report shows it: the notebook as checked, before the comments.
    lines = [f"  {log_line_start(terminal(shown.place.words))}: {shown.problem.code}: "
             f"not silenced: {terminal(reason)}\n" for shown, reason in listed]
    written = notebook_edits(edits)
    stream.writelines(refusal_lines(written.refusals))
    edits = written.edits
    write_edits(edits)
    count = len(edits.fixed)
    stream.write(f"Added noqa comments for {count} problem{'s' * (count != 1)} in "
                 f"{len(edits.files)} file{'s' * (len(edits.files) != 1)}.\n")
    for line in lines:
        stream.write(line)
    return count
