"""``fix``: the edits of the fixes of a run's problems (``fxcore.fixing.fix_apply``), with each
notebook's new text its JSON, ready to write or show as a diff, and each fix not made with why."""

from __future__ import annotations

from dataclasses import dataclass, field

from fxcore.fixing import fix_apply
from fxcore.reporting.report import Problem
from fxcore.workspace.kept_bytes import replace_workspace_text, replace_workspace_texts
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.notebook.json_edits import NotebookEditError, edit_notebook_json
from fxcore.workspace.notebook.module_builder import notebook_module_of_json
from fxcore.workspace.paths import find_workspace_root, notebook_json, source_text


@dataclass
class FixPlan:
    """The fixes of a run's problems (``plan_fixes``): their edits and those not made."""

    #: The files' texts before and after, a notebook's as its JSON (``written_text``).
    edits: fix_apply.Edits = field(default_factory=fix_apply.Edits)
    #: (path, why) of each fix not made: a link leading out of the workspace
    #: (``Edits.refused``), a notebook whose edit does not fit its cells.
    refusals: list[tuple[str, str]] = field(default_factory=list)

    def without_fix(self, problems: list[Problem]) -> list[Problem]:
        """Those of ``problems`` that no edit fixes."""
        fixed = [problem for problem, _ in self.edits.fixed]
        return [problem for problem in problems if problem not in fixed]


def text_on_disk(path: str) -> str | None:
    """A file's text as fixes edit it: None unless UTF-8, since they write it back."""
    return source_text(path, {}, strict=True)


def written_text(path: str, old: str | None, new: str) -> str:
    """What a fixed file's text is written as: ``new``, or for a notebook, its JSON with the
    fixed module's lines put into their cells
    (``fxcore.workspace.notebook.json_edits.edit_notebook_json``). Raises
    ``NotebookEditError`` when the notebook changed since, or the edit does not fit its
    cells."""
    if not is_notebook(path):
        return new
    raw = notebook_json(path, {}, strict=True)
    module = notebook_module_of_json(raw) if raw is not None else None
    if raw is None or module is None or module.text != old:
        raise NotebookEditError("the notebook changed since it was checked")
    return edit_notebook_json(raw, new)


def plan_fixes(problems: list[Problem], unsafe: bool) -> FixPlan:
    """The edits fixing ``problems`` (safe fixes only, unless ``unsafe``), ready to write."""
    return notebook_edits(
        fix_apply.plan_edits(problems, text_on_disk, find_workspace_root, unsafe))


def notebook_edits(edits: fix_apply.Edits) -> FixPlan:
    """``edits`` with each notebook's new text its JSON (``written_text``); a notebook whose
    edit cannot be put into its cells is left as it is, and refused, as are the fixes
    ``edits`` did not make (a link leading out of the workspace)."""
    planned = FixPlan(refusals=[(problem.path, reason) for problem, reason in edits.refused])
    refused = set()
    for path, (old, new) in edits.files.items():
        try:
            planned.edits.files[path] = (notebook_json(path, {}, strict=True)
                                         if is_notebook(path) else old,
                                         written_text(path, old, new))
        except NotebookEditError as error:
            refused.add(path)
            planned.refusals.append((path, str(error)))
    kept = [(fixed, path) for fixed, path in zip(edits.fixed, edits.paths, strict=True)
            if path not in refused]
    planned.edits.fixed = [fixed for fixed, _ in kept]
    planned.edits.paths = [path for _, path in kept]
    return planned


def write_edits(edits: fix_apply.Edits) -> None:
    """Write the fixed texts (as ``notebook_edits`` made them), each file's bytes but its
    fixed lines kept (``fxcore.workspace.kept_bytes``); raises ``UnwritableFiles`` naming
    those that could not be written, after writing the others."""
    replace_workspace_texts((path, new, find_workspace_root(path))
                            for path, (_, new) in edits.files.items())


def restore_files(edits: fix_apply.Edits, paths: set[str]) -> None:
    """Write back the texts ``paths`` had before ``edits`` (as ``notebook_edits`` made them:
    a notebook's JSON), where ``edits`` changed them: ``fix_trials`` takes fixes back."""
    for path in sorted(paths):
        old = edits.files.get(path, (None, ""))[0]
        if old is not None:
            replace_workspace_text(path, old, find_workspace_root(path))


def select_problems(problems: list[Problem], code: str | None,
                    line: int | None) -> list[Problem]:
    """The problems with ``code`` (any case) and on ``line`` (1-based), each when given."""
    return [problem for problem in problems
            if (code is None or problem.code == code.strip().upper())
            and (line is None or problem.line == line)]
