"""Config options tried, kept only where the check after them finds no new failure.

A config option that a fix sets for a whole file (``capture_scalar_outputs`` for an
``.item()`` read into Python, ``capture_dynamic_output_shape_ops`` for a dynamic shape) removes
the break where the value then only feeds what the graph can keep symbolic; elsewhere the
break moves (``int()`` of the symbolic number: a break outside torch's registry, FX501) or the
compile fails (an unbacked symbol torch cannot place: FX502), which only a check after the edit
shows. ``fx-lsp check --fix`` checks again after each round of fixes; where a class that an
option's fix was for meets, in that check, a code it did not meet before, the option is taken
out of its file again and not set in a later round (``undone``). The editor's fix-all action is
one round: its next check shows the new failure, where the undo is the editor's own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from fxcore.reporting.report import Problem


@dataclass(frozen=True)
class Undone:
    """An option taken out of ``path`` again: for the problem ``code`` of ``classes``, and the
    codes those classes newly met with it."""

    path: str
    option: str
    code: str
    classes: tuple[str, ...]
    new_codes: tuple[str, ...]

    def said(self) -> str:
        return (f"Undid {self.option} in {self.path} (for {self.code}): with it, "
                f"{', '.join(self.classes)} met {', '.join(self.new_codes)}, which "
                "it did not before.")


def _codes_by_class(problems: list[Problem]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for problem in problems:
        for name in problem.classes:
            found[name].add(problem.code)
    return found


def undone(options: list[tuple[Problem, str, str]], before: list[Problem],
           after: list[Problem]) -> list[Undone]:
    """The options (``Edits.options``: problem, path, option) whose classes meet a code in
    ``after`` they did not meet in ``before``, one per path and option."""
    was, now = _codes_by_class(before), _codes_by_class(after)
    found: dict[tuple[str, str], Undone] = {}
    for problem, path, option in options:
        classes = tuple(problem.classes)
        new = sorted(set().union(*(now.get(name, set()) - was.get(name, set())
                                   for name in classes)))
        if new and (path, option) not in found:
            found[(path, option)] = Undone(path, option, problem.code, classes, tuple(new))
    return list(found.values())


def still_to_fix(problems: list[Problem], undid: list[Undone]) -> list[Problem]:
    """``problems`` but those an undone option was for (the same code, file and classes)."""
    taken = {(item.path, item.code, item.classes) for item in undid}
    return [problem for problem in problems
            if (problem.path, problem.code, tuple(problem.classes)) not in taken]
