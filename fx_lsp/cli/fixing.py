"""``fx-lsp check --fix`` and ``--diff``: the edits of ``fxcore.api.fixes`` written to the
files, or printed as a diff (``fx_lsp.fix_texts``), and what was fixed said on standard
error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TextIO, TypeVar

from fx_lsp.escaping import log_line_start, terminal
from fx_lsp.fix_texts import refusal_lines
from fxcore.api import fixes
from fxcore.fixing import fix_apply, fix_trials
from fxcore.reporting.report import Problem, Report
from fxcore.reporting.shown import Places

#: ``--fix`` traces again after applying fixes, as many times as fixes keep applying (a fix
#: can let tracing reach further, a fix taken back is tried again alone), at most this often.
MAX_FIX_ROUNDS = 6


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


def _take_back(edits: fix_apply.Edits, verdict: fix_trials.Verdict, unsafe: bool,
               stream: TextIO) -> fix_apply.Edits:
    """The round's ``edits`` without the fixes ``verdict`` takes back: the files those fixes
    edited written back as they were, the round's other fixes in them made again."""
    taken = verdict.taken_back()
    made = list(zip(edits.fixed, edits.paths, strict=True))
    paths = {path for (problem, _), path in made if fix_trials.key(problem) in taken}
    fixes.restore_files(edits, paths)
    again = planned_edits([problem for (problem, _), path in made
                           if path in paths and fix_trials.key(problem) not in taken],
                          unsafe, stream)
    fixes.write_edits(again)
    kept = [(fixed, path) for fixed, path in made if path not in paths]
    return fix_apply.Edits(
        files={**{path: texts for path, texts in edits.files.items() if path not in paths},
               **{path: (edits.files.get(path, (old, new))[0], new)
                  for path, (old, new) in again.files.items()}},
        fixed=[fixed for fixed, _ in kept] + again.fixed,
        paths=[path for _, path in kept] + again.paths)


def fix_until_done(check_run: Run, run: Callable[[], Run], unsafe: bool,
                   stream: TextIO) -> Run:
    """Apply fixes and trace again until none applies; the last run is what remains. A fix of
    compile mode after which its class meets a new code, or no fewer graph breaks, is taken
    out again (its files as they were before the round, the round's other fixes in them made
    again), and not made in a later round, or tried there alone where its class had several
    (``fxcore.fixing.fix_trials``)."""
    done = fix_apply.Edits()
    lines: list[str] = []
    undone: list[fix_trials.Undone] = []
    alone: set[str] = set()
    for _ in range(MAX_FIX_ROUNDS):
        before = check_run.report.problems
        edits = planned_edits(fix_trials.to_fix(before, undone, alone), unsafe, stream)
        if not edits.files:
            break
        # Said before writing: the cells as this run found its problems in them.
        places = Places()
        said = {id(problem): fixed_line(problem, title, places)
                for problem, title in edits.fixed}
        fixes.write_edits(edits)
        check_run = run()
        verdict = fix_trials.judged(
            edits.fixed, before, check_run.report.problems,
            lambda problem: bool(fixes.plan_fixes([problem], unsafe).edits.fixed))
        if verdict.undone or verdict.retried:
            edits = _take_back(edits, verdict, unsafe, stream)
            undone += verdict.undone
            alone |= {name for problem in verdict.retried for name in problem.classes}
            check_run = run()
        lines += [said[id(problem)] for problem, _ in edits.fixed]
        lines += [f"{terminal(item.said())}\n" for item in verdict.undone]
        for (problem, title), path in zip(edits.fixed, edits.paths, strict=True):
            done.made(problem, title, path)
        done.files.update({path: (done.files.get(path, texts)[0], texts[1])
                           for path, texts in edits.files.items()})
    print_summary(done, stream, applied=True, lines=lines)
    return check_run
