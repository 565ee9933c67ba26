"""``check``: trace the files, each with its own workspace's config, and hand the adapters the
run's results and report (``CheckRun.shown``: the report the command line's formats render and
``fxcore.reporting.json_report`` makes data of)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from fxcore.api.baselines import BaselineOutcome
from fxcore.api.shards import Shard
from fxcore.checking.pipeline import Pipeline, jobs_below
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import FileResult
from fxcore.reporting.report import Report, Selection
from fxcore.reporting.shown import ShownReport, show
from fxcore.reporting.verdict_counts import Summary
from fxcore.workspace.config import ProjectConfig, read_project_config
from fxcore.workspace.paths import find_workspace_root, source_text

#: The editor's key for showing the classes that were not traced (FX103 on each); the
#: command line reads it for the same: its ``full`` format then lists them.
SHOW_NOT_TRACED = "show-not-traced"


class Progress(Protocol):
    """What a run says of its progress as its files come in (the command line's bar)."""

    def start(self, total: int) -> None: ...

    def advance(self) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """A run that says nothing as it goes."""

    def start(self, total: int) -> None:
        pass

    def advance(self) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class CheckRun:
    """A run of ``check``: each file's results, the verdicts counted, the report."""

    results: list[FileResult]
    summary: Summary
    report: Report
    #: Each workspace root's ``[tool.fx-lsp]``.
    projects: dict[str, ProjectConfig]
    #: The shard of the files this run checked (``fx-lsp check --shard``); None: all.
    shard: Shard | None = None
    #: What the run's baseline held (``EngineSession.apply_baseline``); None: not applied.
    baseline: BaselineOutcome | None = None
    #: Each file's workspace root, as the run found it (``Projects.root_of``).
    root_of: Callable[[str], str] = find_workspace_root

    def shows_not_traced(self, path: str) -> bool:
        """True when the workspace of ``path`` sets ``show-not-traced = true``: the terminal
        lists its classes not traced rather than counting them."""
        project = self.projects.get(self.root_of(path))
        return project is not None and project.table.get(SHOW_NOT_TRACED) is True

    def shown(self, show_not_traced: bool | None = None) -> ShownReport:
        """The report as the output formats show it, with the files as they are now (a fix
        or a baseline may have changed both since the run); the classes not traced listed
        as ``show_not_traced`` says, else as each workspace's ``show-not-traced``."""
        lists = self.shows_not_traced if show_not_traced is None \
            else lambda path: show_not_traced
        return show(self.results, self.report, self.summary, lists)


class UnreadableConfig(Exception):
    """A ``pyproject.toml`` that cannot be parsed at all: the run stops (exit status 2) rather
    than check every file of that workspace with settings it does not have."""


#: Reads a workspace root's ``[tool.fx-lsp]``: ``read_project_config``, or a reader that keeps
#: what it read (``fx-lsp mcp``'s).
ConfigReader = Callable[[str], ProjectConfig]


class Projects:
    """Each workspace root's configuration, read once by ``read``, with the command line's
    time-out and capture modes."""

    def __init__(self, timeout: float | None, summary: Summary,
                 modes: tuple[str, ...] | None = None,
                 read: ConfigReader = read_project_config) -> None:
        self.timeout = timeout
        self.modes = modes
        self.summary = summary
        self.read = read
        self.found: dict[str, ProjectConfig] = {}
        #: Each file's root, found once a run: a file of thousands of classes asks for each.
        self._roots: dict[str, str] = {}

    def __call__(self, root: str) -> ProjectConfig:
        if root not in self.found:
            project = self.read(root)
            if project.unreadable is not None:
                raise UnreadableConfig(project.unreadable)
            # A copy with this run's overrides: ``read`` may hand the same config to the
            # next run, which gives other ones.
            overrides = {name: value for name, value in
                         (("timeout", self.timeout), ("modes", self.modes)) if value is not None}
            if overrides:
                project = dataclasses.replace(
                    project, engine=dataclasses.replace(project.engine, **overrides))
            self.found[root] = project
            self.summary.config_problems.extend(project.problems)
            shown = project.table.get(SHOW_NOT_TRACED, False)
            if not isinstance(shown, bool):
                # The editor says the same of its key; the engine's config does not read it.
                self.summary.config_problems.append(
                    f"{os.path.join(root, 'pyproject.toml')} [tool.fx-lsp]: "
                    f"'{SHOW_NOT_TRACED}' must be true or false; ignored")
        return self.found[root]

    def engine(self, root: str) -> EngineConfig:
        return self(root).engine

    def root_of(self, path: str) -> str:
        """``path``'s workspace root (``find_workspace_root``), looked for once a run."""
        if path not in self._roots:
            self._roots[path] = find_workspace_root(path)
        return self._roots[path]

    def selection(self, path: str) -> Selection:
        root = self.root_of(path)
        return Selection(self(root).report, root)


def check_jobs(paths: Sequence[str], timeout: float | None,
               modes: tuple[str, ...] | None = None,
               read: ConfigReader = read_project_config) -> tuple[list[TraceJob], Projects]:
    """The jobs of the files under ``paths``, each with its workspace's configuration
    (``timeout`` and ``modes``, where given, in place of the configured ones), and the
    configurations read, for ``run_jobs``."""
    summary = Summary()
    projects = Projects(timeout, summary, modes, read)
    return jobs_below(paths, projects.root_of, projects.engine), projects


def run_jobs(jobs: list[TraceJob], projects: Projects, pipeline: Pipeline,
             progress: Progress | None = None) -> CheckRun:
    """Trace the jobs (unchanged files' results from ``pipeline``'s cache) and report them,
    through ``fxcore.checking.pipeline``; ``progress`` is told of each file as it comes in.
    The pipeline is the caller's (``fxcore.api.session.EngineSession``'s), left open."""
    progress = progress or NoProgress()
    progress.start(len(jobs))
    try:
        checked = pipeline.check(jobs, lambda path: source_text(path, {}), projects.selection,
                                 progress.advance)
    finally:
        progress.finish()
    summary = projects.summary
    for result in checked.results:
        summary.add(result)
    return CheckRun(checked.results, summary, checked.report, projects.found,
                    root_of=projects.root_of)
