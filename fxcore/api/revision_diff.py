"""``diff``: what a change did to the graphs. The classes of the Python files that differ
between two git revisions (HEAD: the working tree when not given), and of the files importing
them (``fxcore.api.git_revisions``), are checked at both (a revision's files in a folder of
their own: ``fxcore.api.revision_files``; ``fxcore.api.check``, results cached), and each
class's changes per capture mode compared (``fxcore.reporting.graph_diff``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fxcore.api import git_revisions, revision_files
from fxcore.api.check import CheckRun, Progress, check_jobs, run_jobs
from fxcore.checking.pipeline import Pipeline
from fxcore.checking.preparation import LINKED_OUT
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.reporting import graph_diff


@dataclass
class SideChecked:
    """What was checked at one revision."""

    #: ``BASE`` or ``HEAD``.
    name: str
    #: None: the working tree.
    revision: str | None
    files: int
    #: Of ``files``, how many came from the cache.
    cached: int
    #: A line for each file a symbolic link takes out of the workspace, refused unread.
    refused: list[str] = field(default_factory=list)


@dataclass
class RevisionDiff:
    """What ``diff`` found: each class and mode that changed, and what each side checked."""

    changes: list[graph_diff.ClassChange] = field(default_factory=list)
    #: Each revision at which files were checked.
    checked: list[SideChecked] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return any(change.regressed for change in self.changes)

    @property
    def refused(self) -> list[str]:
        """The lines of the files refused at the workspace boundary, at either revision."""
        return [line for side in self.checked for line in side.refused]


def _refused(run: CheckRun) -> list[str]:
    """``path: message`` of each file a link takes out of its workspace (one FX100, the file
    never read: ``fxcore.checking.preparation.linked_out``)."""
    return [f"{result.path}: {error.message}" for result in run.results
            for error in result.errors if error.kind == LINKED_OUT]


def _checked(folder: str, changed: list[str], timeout: float | None,
             modes: tuple[str, ...] | None, engine: Engine, progress: Progress | None
             ) -> tuple[dict[graph_diff.ClassKey, graph_diff.ClassState], CheckRun | None]:
    """The states of the classes of ``changed`` and of their importers in ``folder``."""
    present = [path for path in changed if os.path.isfile(os.path.join(folder, path))]
    files = sorted(set(present) | git_revisions.importers(folder, changed))
    if not files:
        return {}, None
    jobs, projects = check_jobs([os.path.join(folder, path) for path in files], timeout, modes)
    pipeline = Pipeline(engine, ResultCache())
    try:
        run = run_jobs(jobs, projects, pipeline, progress)
    finally:
        pipeline.close()
    modules = [module for result in run.results for module in result.modules]
    return graph_diff.states(modules, folder), run


@contextlib.contextmanager
def _revision(root: str, revision: str | None) -> Iterator[str]:
    # A revision the working tree holds (HEAD of a clean checkout, as in CI) is checked in
    # place: its results are then those a `fx-lsp check .` before it cached.
    if revision is None or git_revisions.is_working_tree(root, revision):
        yield root
    else:
        with revision_files.checkout(root, revision) as folder:
            yield folder


def diff_revisions(folder: str, base: str, head: str | None,
                   modes: tuple[str, ...] | None, timeout: float | None, engine: Engine,
                   progress: Progress | None = None) -> RevisionDiff:
    """The changes between ``base`` and ``head`` of the git repository of ``folder``, traced
    on ``engine`` (the caller's, left running). Raises ``git_revisions.GitError`` when git
    refuses."""
    root = git_revisions.repository_root(folder)
    changed = git_revisions.changed_python_files(root, base, head)
    if not changed:
        return RevisionDiff()
    sides, checked = [], []
    for name, revision in (("BASE", base), ("HEAD", head)):
        with _revision(root, revision) as checked_folder:
            found, check_run = _checked(checked_folder, changed, timeout, modes, engine,
                                        progress)
        sides.append(found)
        if check_run is not None:
            checked.append(SideChecked(name, revision, check_run.summary.files,
                                       check_run.summary.cached, _refused(check_run)))
    return RevisionDiff(graph_diff.diff(sides[0], sides[1]), checked)


def diff_json(base: str, head: str | None, changes: list[graph_diff.ClassChange],
              refused: list[str] | None = None) -> dict[str, Any]:
    """What ``fx-lsp diff --output-format json`` prints and ``fx-lsp mcp``'s ``diff``
    returns; ``refused``: ``RevisionDiff.refused``."""
    return {"base": base, "head": head,
            "changes": [graph_diff.change_json(change) for change in changes],
            "regressions": sum(change.regressed for change in changes),
            "refused": refused or []}
