"""Applying the fixes the editor offers to whole files: ``fx-lsp check --fix`` and ``--diff``.

For each reported failure or hint (FX201's ``concrete-none``, FX505's config option) the planner
(``fxcore.fixing.fix_plan``, the editor's) lists its fixes; the first preferred one that is
allowed is chosen (safe ones only, unless unsafe fixes are asked for). The fixes of one file
are applied in one pass: those located by position from the end of the file backwards, then
those located by name, which may move lines, then the imports the edits need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fxcore.fixing.fix_plan import (
    Fix,
    RootOf,
    Run,
    TextOf,
    in_workspace,
    plan,
    run_here,
    why_no_fix,
)
from fxcore.reporting.report import Problem


@dataclass
class Edits:
    #: Path -> (its text, None for a new file; its fixed text).
    files: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    #: Each problem a fix was applied for, with the fix's title.
    fixed: list[tuple[Problem, str]] = field(default_factory=list)
    #: Each problem whose fix was not made, with why (a link leading out of the workspace, a
    #: rewrite that would change outputs).
    refused: list[tuple[Problem, str]] = field(default_factory=list)
    #: The file each fix of ``fixed`` edited, in its order (``fix_trials`` takes a fix back
    #: out of it): filled with ``fixed`` by ``made``, never apart.
    paths: list[str] = field(default_factory=list)

    def made(self, problem: Problem, title: str, path: str) -> None:
        """A fix titled ``title`` for ``problem`` was made in ``path``."""
        self.fixed.append((problem, title))
        self.paths.append(path)


def choose(fixes: list[Fix], unsafe: bool) -> Fix | None:
    allowed = [fix for fix in fixes if fix.safe or unsafe]
    allowed.sort(key=lambda fix: not fix.preferred)
    return allowed[0] if allowed else None


def plan_edits(problems: list[Problem], text_of: TextOf, root_of: RootOf, unsafe: bool = False,
               run: Run = run_here) -> Edits:
    chosen: dict[str, list[tuple[Problem, Fix]]] = {}
    edits = Edits()
    for problem in problems:
        if problem.failure is None:  # reached by no trace (FX900): nothing to plan from
            continue
        fixes, refusals = in_workspace(
            plan(problem.failure, problem.module, text_of, root_of, run), root_of)
        fix = choose(fixes, unsafe)
        edits.refused += [(problem, reason) for reason in refusals if fix is None]
        if fix is None and (why := why_no_fix(problem.failure, text_of, run)) is not None:
            edits.refused.append((problem, f"{problem.code} at line {problem.line}: {why}"))
        if fix is not None:
            chosen.setdefault(fix.path, []).append((problem, fix))
    for path, planned in sorted(chosen.items()):
        old = text_of(path)
        text = old or ""
        by_position = sorted((item for item in planned if item[1].position is not None),
                             key=lambda item: item[1].position or (0, 0), reverse=True)
        by_name = [item for item in planned if item[1].position is None]
        import_edits: list[Callable[[str], str]] = []
        for problem, fix in [*by_position, *by_name]:
            try:
                fixed = run(fix.transform, text)
            except Exception:
                continue  # libcst rejects the source: the problem stays
            if fix.import_edit is not None and fixed != text:
                import_edits.append(fix.import_edit)
            text = fixed
            edits.made(problem, fix.title, path)
        for import_edit in import_edits:  # by name, idempotent: the first one adds it
            text = run(import_edit, text)
        if text != (old or ""):
            edits.files[path] = (old, text)
    return edits
