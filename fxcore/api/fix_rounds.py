"""``fix_until_done``: the rounds of ``fx-lsp check --fix``. Fixes are applied and the files
traced again until none applies; a fix of compile mode after which its class meets a new code,
or no fewer graph breaks, is taken back (``fxcore.fixing.fix_trials``). What was done comes
back as data (``FixRounds``) for the front end to say."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from fxcore.api import fixes
from fxcore.fixing import fix_trials
from fxcore.fixing.fix_apply import Edits
from fxcore.reporting.report import Problem, Report
from fxcore.reporting.shown import Places

#: Traced again after applying fixes, as many times as fixes keep applying (a fix can let
#: tracing reach further, a fix taken back is tried again alone), at most this often.
MAX_FIX_ROUNDS = 6


class Checked(Protocol):
    """A run whose report's problems fixes are planned from (``fxcore.api.check.CheckRun``)."""

    report: Report


Run = TypeVar("Run", bound=Checked)


@dataclass(frozen=True)
class FixedLine:
    """A fix made: where its problem was, as the report showed it before the files changed
    (a notebook's cell lines move with a fix), its code and the fix's title."""

    where: str
    code: str
    title: str


@dataclass
class FixRounds(Generic[Run]):
    """What the rounds did: the last run (what remains), every file's text before and after,
    each fix not made with why, and a line for each fix made or taken back, in order."""

    last_run: Run
    done: Edits = field(default_factory=Edits)
    refusals: list[tuple[str, str]] = field(default_factory=list)
    #: A ``FixedLine``, or what a fix taken back says (``fix_trials.Undone.said``).
    lines: list[FixedLine | str] = field(default_factory=list)


def fixed_lines(edits: Edits) -> list[FixedLine]:
    """A line for each fix of ``edits``, its place as the report shows it now."""
    places = Places()
    return [FixedLine(places.at(problem.path, problem.line, problem.column).words,
                      problem.code, title) for problem, title in edits.fixed]


def _planned(problems: list[Problem], unsafe: bool, rounds: FixRounds[Run]) -> Edits:
    plan = fixes.plan_fixes(problems, unsafe)
    rounds.refusals += plan.refusals
    return plan.edits


def _take_back(edits: Edits, verdict: fix_trials.Verdict, unsafe: bool,
               rounds: FixRounds[Run]) -> Edits:
    """The round's ``edits`` without the fixes ``verdict`` takes back: the files those fixes
    edited written back as they were, the round's other fixes in them made again."""
    taken = verdict.taken_back()
    made = list(zip(edits.fixed, edits.paths, strict=True))
    paths = {path for (problem, _), path in made if fix_trials.key(problem) in taken}
    fixes.restore_files(edits, paths)
    again = _planned([problem for (problem, _), path in made
                      if path in paths and fix_trials.key(problem) not in taken],
                     unsafe, rounds)
    fixes.write_edits(again)
    kept = [(fixed, path) for fixed, path in made if path not in paths]
    return Edits(
        files={**{path: texts for path, texts in edits.files.items() if path not in paths},
               **{path: (edits.files.get(path, (old, new))[0], new)
                  for path, (old, new) in again.files.items()}},
        fixed=[fixed for fixed, _ in kept] + again.fixed,
        paths=[path for _, path in kept] + again.paths)


def fix_until_done(check_run: Run, run: Callable[[], Run], unsafe: bool) -> FixRounds[Run]:
    """Apply fixes and trace again (``run``) until none applies. A fix of compile mode after
    which its class meets a new code, or no fewer graph breaks, is taken out again (its files
    as they were before the round, the round's other fixes in them made again), and not made
    in a later round, or tried there alone where its class had several."""
    rounds = FixRounds(check_run)
    undone: list[fix_trials.Undone] = []
    alone: set[str] = set()
    for _ in range(MAX_FIX_ROUNDS):
        before = rounds.last_run.report.problems
        edits = _planned(fix_trials.to_fix(before, undone, alone), unsafe, rounds)
        if not edits.files:
            break
        said = {id(problem): line
                for (problem, _), line in zip(edits.fixed, fixed_lines(edits), strict=True)}
        fixes.write_edits(edits)
        rounds.last_run = run()
        verdict = fix_trials.judged(
            edits.fixed, before, rounds.last_run.report.problems,
            lambda problem: bool(fixes.plan_fixes([problem], unsafe).edits.fixed))
        if verdict.undone or verdict.retried:
            edits = _take_back(edits, verdict, unsafe, rounds)
            undone += verdict.undone
            alone |= {name for problem in verdict.retried for name in problem.classes}
            rounds.last_run = run()
        rounds.lines += [said[id(problem)] for problem, _ in edits.fixed]
        rounds.lines += [item.said() for item in verdict.undone]
        for (problem, title), path in zip(edits.fixed, edits.paths, strict=True):
            rounds.done.made(problem, title, path)
        rounds.done.files.update({path: (rounds.done.files.get(path, texts)[0], texts[1])
                                  for path, texts in edits.files.items()})
    return rounds
