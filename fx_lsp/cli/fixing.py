"""``fx-lsp check --fix`` and ``--diff``: the edits of ``fxcore.api.fixes`` written to the
files, or printed as a diff (``fx_lsp.fix_texts``), and what was fixed said on standard
error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TextIO, TypeVar

from fx_lsp.cli.shards import Shard
from fx_lsp.escaping import log_line_start, terminal
from fx_lsp.fix_texts import refusal_lines
from fxcore.api import fixes
from fxcore.fixing import fix_apply, option_trials
from fxcore.reporting.report import Problem, Report
from fxcore.reporting.shown import Places

#: ``--fix`` traces again after applying fixes, as many times as fixes keep applying (a fix
#: can let tracing reach further), at most this often.
MAX_FIX_ROUNDS = 4


def planned_edits(problems: list[Problem], unsafe: bool, stream: TextIO) -> fix_apply.Edits:
    """The edits fixing ``problems`` (``fxcore.api.fixes.plan_fixes``); each fix not made
    said on ``stream``."""
    plan = fixes.plan_fixes(problems, unsafe)
    stream.writelines(refusal_lines(plan.refusals))
    return plan.edits


def print_summary(edits: fix_apply.Edits, stream: TextIO, applied: bool,
                  lines: list[str] | None = None) -> None:
    """How many problems were (or would be) fixed, and a line each: ``lines`` when given
    (said before the files changed: a notebook's cell lines move with a fix), else
    ``fixed_line``."""
    verb = "Fixed" if applied else "Would fix"
    count = len(edits.fixed)
    stream.write(f"{verb} {count} problem{'s' if count != 1 else ''} in "
                 f"{len(edits.files)} file{'s' if len(edits.files) != 1 else ''}.\n")
    if lines is None:
        places = Places()
        lines = [fixed_line(problem, title, places) for problem, title in edits.fixed]
    for line in lines:
        stream.write(line)


def fixed_line(problem: Problem, title: str, places: Places) -> str:
    """``  model.py:12:5: FX002: Wrap len ...`` (``nb.ipynb:cell 3:5:1`` in a notebook)."""
    where = log_line_start(terminal(places.at(problem.path, problem.line,
                                              problem.column).words))
    return f"  {where}: {problem.code}: {terminal(title)}\n"


class Checked(Protocol):
    """A run whose report's problems fixes are planned from (``fxcore.api.check.CheckRun``)."""

    report: Report


Run = TypeVar("Run", bound=Checked)


def fix_until_done(check_run: Run, shard: Shard | None,
                   run: Callable[[], tuple[Run, Shard | None]], unsafe: bool,
                   stream: TextIO) -> tuple[Run, Shard | None]:
    """Apply fixes and trace again until none applies; the last run is what remains. A config
    option after which its class meets a new code is taken out again, and not set in a later
    round (``fxcore.fixing.option_trials``)."""
    done = fix_apply.Edits()
    lines: list[str] = []
    undid: list[option_trials.Undone] = []
    for _ in range(MAX_FIX_ROUNDS):
        before = check_run.report.problems
        edits = planned_edits(option_trials.still_to_fix(before, undid), unsafe, stream)
        if not edits.files:
            break
        # Said before writing: the cells as this run found its problems in them.
        places = Places()
        lines += [fixed_line(problem, title, places) for problem, title in edits.fixed]
        fixes.write_edits(edits)
        done.fixed += edits.fixed
        done.files.update({path: (done.files.get(path, texts)[0], texts[1])
                           for path, texts in edits.files.items()})
        check_run, shard = run()
        if tried := option_trials.undone(edits.options, before, check_run.report.problems):
            fixes.undo_options(tried)
            undid += tried
            lines += [f"{terminal(item.said())}\n" for item in tried]
            check_run, shard = run()
    print_summary(done, stream, applied=True, lines=lines)
    return check_run, shard
