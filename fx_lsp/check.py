"""``fx-lsp check``'s run: trace the files, each with its own workspace's config, and build the
report the output formats print."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from fxcore.checking.pipeline import Pipeline, jobs_below
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.model.instance_trust import does_not_fit, on_guessed_arguments
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import CODES, FileResult, ModuleResult
from fxcore.reporting.report import Report, Selection
from fxcore.rules.compile import is_graph_break
from fxcore.workspace.config import ProjectConfig, read_project_config
from fxcore.workspace.notebook.cells import CellPosition, NotebookModule, is_notebook
from fxcore.workspace.paths import find_workspace_root, notebook_module, source_text

#: The editor's key for showing the classes that were not traced (FX103 on each); the
#: command line reads it for the same: its ``full`` format then lists them.
SHOW_NOT_TRACED = "show-not-traced"


def display_path(path: str) -> str:
    """Relative to the current folder when below it, as ruff prints paths."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


@functools.lru_cache(maxsize=32)
def _notebook(path: str) -> NotebookModule | None:
    """The module of the notebook at ``path`` as on disk, read once until
    ``forget_notebooks``."""
    return notebook_module(path, {})


def forget_notebooks() -> None:
    """Read notebooks again from disk (a fix may have edited them)."""
    _notebook.cache_clear()


def cell_position(path: str, line: int, column: int) -> CellPosition | None:
    """Where a line of a notebook's module is in its cells; None for a ``.py`` file."""
    if not is_notebook(path):
        return None
    module = _notebook(os.path.abspath(path))
    return module.to_cell_position(line, column) if module is not None else None


def cell_words(path: str, line: int, column: int) -> str:
    """``cell 3:5:1``, as ruff names a place in a notebook ("" for a file)."""
    place = cell_position(path, line, column)
    return "" if place is None else f"cell {place.cell_number}:{place.line}:{place.column}"


def shown_location(path: str, line: int, column: int) -> str:
    """``model.py:12:5``, or ``nb.ipynb:cell 3:5:1`` in a notebook (ruff's way)."""
    in_cell = cell_words(path, line, column)
    if in_cell:
        return f"{display_path(path)}:{in_cell}"
    return f"{display_path(path)}:{line}:{column}"


@dataclass
class ModeCounts:
    """One capture mode's verdicts."""

    traceable: int = 0
    failed: int = 0
    not_traced: int = 0
    #: Of ``failed``, the verdicts whose only problems are graph breaks (compile): the class
    #: still compiles, in several graphs, so the summary does not call it failed.
    broken: int = 0
    #: The verdicts of classes whose constructor raised (FX101 only): nothing was captured,
    #: so they are neither traced nor failed.
    not_built: int = 0
    #: The verdicts of classes whose instance, built from defaults or guesses, or whose
    #: inferred inputs do not fit them (FX105, FX406, FX504): not traced, and counted apart
    #: from the classes fx-lsp could not build or skipped.
    not_fitting: int = 0
    #: Of ``traced``, the verdicts on an instance built from guessed arguments, its own or a
    #: parent's (``fxcore.model.instance_trust``); the others are on real instances.
    guessed: int = 0

    @property
    def real(self) -> int:
        return self.traced - self.guessed

    @property
    def traced(self) -> int:
        return self.traceable + self.failed

    def add(self, module: ModuleResult) -> None:
        if module.status == "traceable":
            self.traceable += 1
        elif only_constructor_failures(module):
            self.not_built += 1
        elif module.status == "failed":
            self.failed += 1
            self.broken += only_graph_breaks(module)
        elif does_not_fit(module):
            self.not_fitting += 1
        else:
            self.not_traced += 1
        if is_traced(module):
            self.guessed += on_guessed_arguments(module.arguments)

    def words(self) -> str:
        untraced = untraced_words(self.not_built, self.not_fitting, self.not_traced)
        if self.broken:
            return (f"{self.traced} traced, {self.traceable} whole, {self.broken} with graph "
                    f"breaks, {self.failed - self.broken} failed{untraced}"
                    f"{guessed_words(self.guessed, ', ')}")
        return (f"{self.traced} traced, {self.traceable} traceable, {self.failed} failed"
                f"{untraced}{guessed_words(self.guessed, ', ')}")


def untraced_words(not_built: int, not_fitting: int, not_traced: int) -> str:
    """``, 1 could not be built, 2 that fx-lsp's instance or inputs do not fit, 3 not traced``:
    the first two said only when there are some, so that a summary without them reads as it
    always did."""
    not_built_words = f", {not_built} could not be built" if not_built else ""
    not_fitting_words = (f", {not_fitting} that fx-lsp's instance or inputs do not fit"
                         if not_fitting else "")
    return f"{not_built_words}{not_fitting_words}, {not_traced} not traced"


def guessed_words(guessed: int, separator: str) -> str:
    """``; 12 on guessed arguments``: said only when some verdict is on a guessed instance,
    so that a summary without guesses reads as it always did."""
    return f"{separator}{guessed} on guessed arguments" if guessed else ""


def is_traced(module: ModuleResult) -> bool:
    """A verdict that captured something: traceable, or failed past the constructor."""
    return module.status == "traceable" or (module.status == "failed"
                                            and not only_constructor_failures(module))


def only_constructor_failures(module: ModuleResult) -> bool:
    """A verdict whose failures all say the constructor raised (FX101): no capture ran."""
    return module.status == "failed" and bool(module.failures) and all(
        failure.code == CODES["constructor"] for failure in module.failures)


def only_graph_breaks(module: ModuleResult) -> bool:
    """A compile verdict whose failures are all graph breaks."""
    return module.graph_count is not None and bool(module.failures) and all(
        is_graph_break(failure.code) for failure in module.failures)


def _over_modes(count: str) -> property:
    """A ``ModeCounts`` count added up over a ``Summary``'s modes."""
    return property(lambda summary: sum(getattr(counts, count)
                                        for counts in summary.by_mode.values()))


@dataclass
class Summary:
    files: int = 0
    file_errors: int = 0
    cached: int = 0
    config_problems: list[str] = field(default_factory=list)
    #: Verdicts per capture mode, in the order the modes first gave one.
    by_mode: dict[str, ModeCounts] = field(default_factory=dict)
    #: The classes with a verdict, whatever their number of modes.
    classes: set[tuple[str, str]] = field(default_factory=set)

    traceable = _over_modes("traceable")
    failed = _over_modes("failed")
    not_traced = _over_modes("not_traced")
    not_built = _over_modes("not_built")
    not_fitting = _over_modes("not_fitting")
    guessed = _over_modes("guessed")

    @property
    def traced(self) -> int:
        return self.traceable + self.failed

    @property
    def real(self) -> int:
        return self.traced - self.guessed

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.file_errors += len(result.errors)
        self.cached += result.from_cache
        for module in result.modules:
            self.by_mode.setdefault(module.mode, ModeCounts()).add(module)
            self.classes.add((module.path, module.class_name))

    def line(self, suppressed: int = 0, baselined: int = 0) -> str:
        if len(self.by_mode) > 1:
            # Several verdicts per class: count classes, and each mode's verdicts apart.
            classes = len(self.classes)
            counts = f"{classes} class{'es' * (classes != 1)}; " + "; ".join(
                f"{mode}: {counts.words()}" for mode, counts in self.by_mode.items())
        else:
            counts = (f"{self.traced} modules traced, {self.traceable} traceable, "
                      f"{self.failed} failed"
                      f"{untraced_words(self.not_built, self.not_fitting, self.not_traced)}")
        return (
            f"Checked {self.files} file{'s' if self.files != 1 else ''}: "
            + counts
            + (f", {self.file_errors} files could not be imported" if self.file_errors else "")
            + ("" if len(self.by_mode) > 1 else guessed_words(self.guessed, "; "))
            + (f"; {suppressed} suppressed" if suppressed else "")
            + (f"; {baselined} in the baseline, subtracted" if baselined else "")
            + "."
        )


class Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal (and not
    turned off: ``-v`` and ``-q``)."""

    def __init__(self, total: int, stream: TextIO | None = None, shown: bool = True) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = shown and total > 1 and self.stream.isatty()
        self.done = 0

    def advance(self) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = width * self.done // self.total
            self.stream.write(
                f"\r[{'=' * filled}{' ' * (width - filled)}] {self.done}/{self.total} files"
            )
            self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


@dataclass
class CheckRun:
    results: list[FileResult]
    summary: Summary
    report: Report
    #: Each workspace root's ``[tool.fx-lsp]``.
    projects: dict[str, ProjectConfig]

    @property
    def failed(self) -> bool:
        """Anything reported that is not a hint: the run's exit status is 1."""
        return any(problem.severity != "hint" for problem in self.report.problems)

    def shows_not_traced(self, path: str) -> bool:
        """True when the workspace of ``path`` sets ``show-not-traced = true``: the terminal
        lists its classes not traced rather than counting them."""
        project = self.projects.get(find_workspace_root(path))
        return project is not None and project.table.get(SHOW_NOT_TRACED) is True


class UnreadableConfig(Exception):
    """A ``pyproject.toml`` that cannot be parsed at all: the run stops (exit status 2) rather
    than check every file of that workspace with settings it does not have."""


class Projects:
    """Each workspace root's configuration, read once, with the command line's time-out and
    capture modes."""

    def __init__(self, timeout: float | None, summary: Summary,
                 modes: tuple[str, ...] | None = None) -> None:
        self.timeout = timeout
        self.modes = modes
        self.summary = summary
        self.found: dict[str, ProjectConfig] = {}

    def __call__(self, root: str) -> ProjectConfig:
        if root not in self.found:
            project = read_project_config(root)
            if project.unreadable is not None:
                raise UnreadableConfig(project.unreadable)
            if self.timeout is not None:
                project.engine.timeout = self.timeout
            if self.modes is not None:
                project.engine.modes = self.modes
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

    def selection(self, path: str) -> Selection:
        root = find_workspace_root(path)
        return Selection(self(root).report, root)


def check_jobs(paths: Sequence[str], timeout: float | None,
               modes: tuple[str, ...] | None = None) -> tuple[list[TraceJob], Projects]:
    summary = Summary()
    projects = Projects(timeout, summary, modes)
    return jobs_below(paths, find_workspace_root, projects.engine), projects


def run_jobs(jobs: list[TraceJob], projects: Projects, workers: int | None,
             use_cache: bool = True, show_progress: bool = True,
             engine: Engine | None = None) -> CheckRun:
    """Trace the jobs (unchanged files' results from the cache) and report them, through
    ``fxcore.checking.pipeline``, on ``engine`` if given (a caller's warm one, left running)
    or else on one of ``workers`` children of the run's own. The run's cache and call-site
    index are its own either way."""
    forget_notebooks()  # cells as this run reads them (an earlier run in this process may
    # have read another text)
    progress = Progress(len(jobs), shown=show_progress)
    runs_on = engine or Engine(workers=workers)
    pipeline = Pipeline(runs_on, ResultCache() if use_cache else None)
    try:
        checked = pipeline.check(jobs, lambda path: source_text(path, {}), projects.selection,
                                 progress.advance)
    finally:
        progress.finish()
        # The engine first: closing it stops at once a job that still waits for its zygote.
        if engine is None:
            runs_on.close()
        pipeline.close()
    summary = projects.summary
    for result in checked.results:
        summary.add(result)
    return CheckRun(checked.results, summary, checked.report, projects.found)
