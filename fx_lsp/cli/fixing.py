"""``fx-lsp check --fix`` and ``--diff``: the edits of ``fxcore.api.fixes`` written to the
files, or printed as a diff (``fx_lsp.fix_texts``), and what was fixed said on standard
error."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fx_lsp.fix_texts import refusal_lines
from fxcore.api import fix_rounds, fixes
from fxcore.api.fix_rounds import FixedLine, Run
from fxcore.fixing import fix_apply
from fxcore.reporting.report import Problem


def planned_edits(problems: list[Problem], unsafe: bool, stream: TextIO) -> fix_apply.Edits:
    """The edits fixing ``problems`` (``fxcore.api.fixes.plan_fixes``); each fix not made
    said on ``stream``."""
    plan = fixes.plan_fixes(problems, unsafe)
    stream.writelines(refusal_lines(plan.refusals))
    return plan.edits


def print_summary(edits: fix_apply.Edits, stream: TextIO, applied: bool,
                  lines: list[str] | None = None) -> None:
    """How many problems were (or would be) fixed, and a line each: ``lines`` when given
    (said before the files changed: a notebook's cell lines move with a fix), else one for
    each fix of ``edits``."""
    verb = "Fixed" if applied else "Would fix"
    count = len(edits.fixed)
    stream.write(f"{verb} {count} problem{'s' if count != 1 else ''} in "
                 f"{len(edits.files)} file{'s' if len(edits.files) != 1 else ''}.\n")
    if lines is None:
        lines = [_fixed_line(line.where, line.code, line.title)
                 for line in fix_rounds.fixed_lines(edits)]
    for line in lines:
        stream.write(line)


def _fixed_line(where: str, code: str, title: str) -> str:
    """``  model.py:12:5: FX002: Wrap len ...`` (``nb.ipynb:cell 3:5:1`` in a notebook)."""
    return f"  {log_line_start(terminal(where))}: {code}: {terminal(title)}\n"


def fix_until_done(check_run: Run, run: Callable[[], Run], unsafe: bool,
                   stream: TextIO) -> Run:
    """``--fix``: the rounds of ``fxcore.api.fix_rounds`` made, each fix not made said on
    ``stream``, then what was fixed, and each fix taken back; the last run is what remains."""
    rounds = fix_rounds.fix_until_done(check_run, run, unsafe)
    stream.writelines(refusal_lines(rounds.refusals))
    print_summary(rounds.done, stream, applied=True, lines=[
        _fixed_line(line.where, line.code, line.title) if isinstance(line, FixedLine)
        else f"{terminal(line)}\n" for line in rounds.lines])
    return rounds.last_run
