"""``plan_noqa``: the ``# noqa`` comments of ``fx-lsp check --add-noqa``, one for each reported
problem at its line, or at the end of the backslash continuation or multi-line string it is in
(``fxcore.fixing.noqa_edits``), in ``.py`` files and notebook cells (as module texts: written
with ``fxcore.api.fixes.notebook_edits``). Problems that have no line a comment can go on are
listed with why."""

from __future__ import annotations

from fxcore.api.fixes import text_on_disk
from fxcore.fixing.fix_apply import Edits
from fxcore.fixing.noqa_edits import add_noqa
from fxcore.model.results import CODES
from fxcore.reporting.report import Problem
from fxcore.reporting.shown import ShownProblem, ShownReport
from fxcore.workspace.file_access import UnsafeWrite, inside_workspace
from fxcore.workspace.paths import find_workspace_root


def _no_line_of_its_own(problem: Problem, checked: set[str]) -> str | None:
    """Why a problem cannot be silenced by a comment on its line, if it cannot."""
    if problem.code == CODES["import"]:
        return "the file cannot be imported: no comment silences that"
    if problem.code == CODES["unused-suppression"]:
        return "an unused suppression: remove it (--fix does) rather than silence it"
    if problem.path not in checked:
        return "its file is not one of the files checked"
    return None


def plan_noqa(report: ShownReport) -> tuple[Edits, list[tuple[ShownProblem, str]]]:
    """The texts with their comments (notebooks' as module texts), each problem a comment is
    added for in ``Edits.fixed``, and each one left as it is with why."""
    checked = {result.path for result in report.results}
    by_path: dict[str, list[ShownProblem]] = {}
    listed: list[tuple[ShownProblem, str]] = []
    for shown in report.problems:
        reason = _no_line_of_its_own(shown.problem, checked)
        if reason is None:
            by_path.setdefault(shown.problem.path, []).append(shown)
        else:
            listed.append((shown, reason))
    edits = Edits()
    for path, shown_problems in by_path.items():
        problems = [shown.problem for shown in shown_problems]
        text = text_on_disk(path)
        try:
            inside_workspace(path, find_workspace_root(path))
        except UnsafeWrite:
            listed += [(shown, "a link takes its file out of the workspace")
                       for shown in shown_problems]
            continue
        if text is None:
            listed += [(shown, "the file is not UTF-8 text") for shown in shown_problems]
            continue
        codes: dict[int, set[str]] = {}
        for problem in problems:
            codes.setdefault(problem.line, set()).add(problem.code)
        edit = add_noqa(text, codes)
        if edit.text != text:
            edits.files[path] = (text, edit.text)
        for problem in problems:
            if problem.code in edit.added.get(problem.line, ()):
                edits.made(problem, "noqa", path)
        listed += [(shown, edit.refused[shown.problem.line]) for shown in shown_problems
                   if shown.problem.line in edit.refused]
    return edits, listed
