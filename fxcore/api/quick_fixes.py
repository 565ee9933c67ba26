"""The fixes of one problem, for the editor's quick fixes and the ``help:`` line of the command
line's full format: the one fix planner (``fxcore.fixing.fix_plan``), the fixes of a
suppression, and the first fix offered. A ``Fix`` (``fxcore.fixing.fix``) computes its edit only
when asked, its whole-file parses through ``run``, so that a server can run them in a process of
its own."""

from __future__ import annotations

from fxcore.api.fixes import text_on_disk
from fxcore.fixing.fix_apply import choose
from fxcore.fixing.fix_plan import (
    ignore_fix,
    in_workspace,
    plan,
    unused_suppression_fix,
    why_no_fix,
)
from fxcore.model.results import Failure
from fxcore.reporting.report import Problem
from fxcore.workspace.paths import find_workspace_root

__all__ = ["first_fix_title", "ignore_fix", "in_workspace", "plan", "unused_suppression_fix",
           "why_no_fix"]


def first_fix_title(problem: Problem) -> str | None:
    """The fix the editor offers first for this problem, or why a recompile's standard fix is
    not offered; None when there is neither."""
    if not isinstance(problem.failure, Failure):
        why = why_no_fix(problem.failure, text_on_disk)
        return None if why is None else f"no quick fix: {why}"
    found = plan(problem.failure, problem.module, text_on_disk, find_workspace_root)
    first = choose(found, unsafe=True)
    return first.title if first else None
