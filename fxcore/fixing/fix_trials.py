"""Fixes of compile mode's problems kept only where the check after them finds the class
meeting fewer graph breaks and nothing new.

A fix can replace one break by another rather than remove it: ``capture_scalar_outputs`` on an
``.item()`` whose number then goes to ``math.exp`` moves the break there (a symbolic float
Python's math cannot take, FX501), on a number that becomes a slice's bound the compile can
fail (FX502), a rewrite can leave a value that breaks further on. Only a check after the edit
shows it. ``fx-lsp check --fix`` checks again after each round of fixes and compares, for each
class a compile-mode fix of the round was for, the codes it meets, counted, before and after
(``judged``): a class that meets a code more often than before, or no fewer graph breaks, has
the round's fixes of its graph breaks taken out of their files again; a fix of another problem
(a recompilation's, whose fix may trade it for a graph break) only where the class meets a
code that is no graph break more often (the compile failing, FX502). A problem met at the very
line a fix of the round was for, which a fix of its own fits, is the next step of that fix
(``t.item()`` as a condition kept a tensor, then the branch on it as ``torch.where``): it is
left out of the counts, and its own fix judged in the next round. A fix that was its class's
only one in the round is undone for good (``Undone``) and not made in a later round; where
the class had several, each is tried again alone, one per round (``to_fix``). The editor's fix-all
action is one round: its next check shows what is new, and undoing the edit is the editor's
own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from fxcore.reporting.report import Problem
from fxcore.rules.compile import is_graph_break

#: A problem as rounds of fixes know it again: its lines move with the fixes above it.
Key = tuple[str, str, tuple[str, ...]]


def key(problem: Problem) -> Key:
    return (problem.path, problem.code, tuple(problem.classes))


@dataclass(frozen=True)
class Undone:
    """A fix taken out of its file again: made for the problem ``code`` at ``path`` of
    ``classes``, which met ``worse`` with it."""

    path: str
    code: str
    title: str
    classes: tuple[str, ...]
    worse: str

    def said(self) -> str:
        return (f"Undid \"{self.title}\" in {self.path} (for {self.code}): with it, "
                f"{', '.join(self.classes)} {self.worse}.")


@dataclass
class Verdict:
    #: The fixes undone for good.
    undone: list[Undone]
    #: The problems whose fixes are undone to be tried again alone (their class had several).
    retried: list[Problem]

    def taken_back(self) -> set[Key]:
        return {(item.path, item.code, item.classes) for item in self.undone} | \
            {key(problem) for problem in self.retried}


def _counts(problems: list[Problem]) -> dict[str, Counter[str]]:
    """The codes each class meets in compile mode, counted."""
    found: dict[str, Counter[str]] = defaultdict(Counter)
    for problem in problems:
        if problem.mode == "compile":
            for name in problem.classes:
                found[name][problem.code] += 1
    return found


def _worse(was: Counter[str], now: Counter[str], breaks_only: bool) -> str | None:
    """How a class does worse after its fixes: a code met more often, or no fewer breaks;
    with ``breaks_only`` false (a fix of no graph break), a code that is no break met more
    often."""
    new = now - was
    if not breaks_only:
        new = Counter({code: count for code, count in new.items() if not is_graph_break(code)})
        return f"newly met {', '.join(sorted(new))}" if new else None
    if new:
        shown = ", ".join(code if not was[code] else f"{code} {now[code]} times ({was[code]} "
                          "before)" for code in sorted(new))
        return f"newly met {shown}"
    breaks = sum(count for code, count in was.items() if is_graph_break(code))
    if sum(count for code, count in now.items() if is_graph_break(code)) >= breaks > 0:
        return "met no fewer graph breaks"
    return None


def judged(fixed: list[tuple[Problem, str]], before: list[Problem], after: list[Problem],
           fixable: Callable[[Problem], bool] = lambda _: False) -> Verdict:
    """Which of a round's fixes (``Edits.fixed``: problem, title) to take back, from the
    problems of the checks before and after the round; ``fixable``: whether a fix fits a
    problem of ``after``."""
    places = {(problem.path, problem.line) for problem, _ in fixed}
    was = _counts(before)
    now = _counts([problem for problem in after
                   if (problem.path, problem.line) not in places or not fixable(problem)])
    judged_fixes = [(problem, title) for problem, title in fixed if problem.mode == "compile"]
    per_class: Counter[str] = Counter(name for problem, _ in judged_fixes
                                      for name in problem.classes)
    verdict = Verdict([], [])
    for problem, title in judged_fixes:
        worse = [(name, why) for name in problem.classes
                 if (why := _worse(was.get(name, Counter()), now.get(name, Counter()),
                                   is_graph_break(problem.code)))]
        if not worse:
            continue
        if all(per_class[name] == 1 for name, _ in worse):
            verdict.undone.append(Undone(problem.path, problem.code, title,
                                         tuple(problem.classes), worse[0][1]))
        else:
            verdict.retried.append(problem)
    return verdict


def to_fix(problems: list[Problem], undone: list[Undone], alone: set[str]) -> list[Problem]:
    """``problems`` but those a fix undone for good was for (the same code, file and
    classes), and of the compile-mode ones of each class in ``alone``, the first only."""
    taken = {(item.path, item.code, item.classes) for item in undone}
    found, seen = [], set()
    for problem in problems:
        if key(problem) in taken:
            continue
        shared = set(problem.classes) & alone if problem.mode == "compile" else set()
        if shared & seen:
            continue
        seen |= shared
        found.append(problem)
    return found
