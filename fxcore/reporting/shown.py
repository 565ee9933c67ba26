"""What a run's report shows, resolved once: each problem's and note's place as a reader finds
it (the path relative to the current folder, a notebook's cell and the line in it), the notes
on the instance a problem was found on, and which classes not traced are shown and listed.

The output formats of ``fx-lsp check`` only render a ``ShownReport``, as ruff's emitters are
handed messages whose locations are already resolved: none of them goes back to the run."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from fxcore.model.instance_trust import DOES_NOT_FIT_CODES, guessed_instance
from fxcore.model.results import FileResult, ModuleResult
from fxcore.reporting.parent_arguments import traced_instance
from fxcore.reporting.report import Problem, Report
from fxcore.reporting.verdict_counts import Summary
from fxcore.workspace.notebook.cells import CellPosition, NotebookModule, is_notebook
from fxcore.workspace.paths import notebook_module


def display_path(path: str) -> str:
    """Relative to the current folder when below it, as ruff prints paths."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


@dataclass(frozen=True)
class Place:
    """A point of a file as it is shown."""

    #: ``display_path`` of the file.
    path: str
    #: 1-based, in the file (in a notebook: in its module, as the problem's span counts).
    line: int
    column: int
    #: Where the point is in a notebook's cells; None in a ``.py`` file.
    cell: CellPosition | None = None

    @property
    def cell_words(self) -> str:
        """``cell 3:5:1``, as ruff names a place in a notebook ("" in a file)."""
        place = self.cell
        return "" if place is None else f"cell {place.cell_number}:{place.line}:{place.column}"

    @property
    def words(self) -> str:
        """``model.py:12:5``, or ``nb.ipynb:cell 3:5:1`` in a notebook (ruff's way)."""
        return f"{self.path}:{self.cell_words or f'{self.line}:{self.column}'}"


class ShownFile:
    """How the places of one file are shown: its display path, and a notebook's cells as its
    file holds them when this is made (a fix may edit them later)."""

    def __init__(self, path: str) -> None:
        self._absolute = os.path.abspath(path)
        self.path = display_path(path)

    @functools.cached_property
    def _notebook(self) -> NotebookModule | None:
        """The notebook's module, read at its first place asked for; None for a file."""
        return notebook_module(self._absolute, {}) if is_notebook(self._absolute) else None

    def at(self, line: int, column: int) -> Place:
        notebook = self._notebook
        cell = notebook.to_cell_position(line, column) if notebook is not None else None
        return Place(self.path, line, column, cell)


class Places:
    """Each file's ``ShownFile``, made once."""

    def __init__(self) -> None:
        self._files: dict[str, ShownFile] = {}

    def of(self, path: str) -> ShownFile:
        if path not in self._files:
            self._files[path] = ShownFile(path)
        return self._files[path]

    def at(self, path: str, line: int, column: int) -> Place:
        return self.of(path).at(line, column)


@dataclass(frozen=True)
class ShownProblem:
    """A reported problem, where it is shown and what is said of the instance it was found
    on."""

    problem: Problem
    place: Place
    #: One note per class that reached it whose instance is not the class as configured or
    #: built with its defaults (``instance_notes``).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotTraced:
    """A class not traced that the report shows as a note (FX103 taken as information)."""

    module: ModuleResult
    place: Place
    #: Listed with its reason, rather than counted (``show-not-traced``).
    listed: bool


@dataclass
class ShownReport:
    """A run's report as every output format shows it."""

    problems: list[ShownProblem]
    not_traced: list[NotTraced]
    results: list[FileResult]
    summary: Summary
    #: How many problems suppression comments silenced, and a baseline took out.
    suppressed: int = 0
    baselined: int = 0
    #: The places of the files' other spans (failures, frames, classes, lines), for the
    #: formats that show the results whole.
    places: Places = field(default_factory=Places)

    @property
    def failed(self) -> bool:
        """Anything reported that is not a hint: the run's exit status is 1."""
        return any(shown.problem.severity != "hint" for shown in self.problems)

    def summary_line(self) -> str:
        return self.summary.line(self.suppressed, self.baselined)


def instance_note(module: ModuleResult | None) -> str | None:
    """Which instance a problem was found on, when it is not the class as configured or
    built with its defaults: built by a traced parent, by a builder function, or with found
    or guessed arguments (the verdict holds for that instance)."""
    found = traced_instance(module) if module is not None else None
    if module is None or found is None:
        return None
    by_parent, words = found
    return f"{module.class_name} was traced {'as built by' if by_parent else 'with'} {words}"


def instance_notes(problem: Problem) -> tuple[str, ...]:
    """What the problem was found on, one note per class that reached it: the guessed
    instance, named, or the instance a builder, a parent, a call site or configuration
    classes built; none for a class as configured or built with its defaults."""
    notes = []
    for module in (reach.module for reach in problem.reached if reach.module is not None):
        instance = guessed_instance(module.class_name, module.arguments)
        if instance is None:
            found = instance_note(module)
            if found is not None:
                notes.append(found)
            continue
        assert module.arguments is not None
        notes.append(f"traced with guessed arguments {instance}"
                     if module.arguments.origin != "parent" else
                     f"traced as {instance}, built with guessed arguments")
    return tuple(dict.fromkeys(notes))


def not_traced(report: Report) -> list[ModuleResult]:
    """Each class that was not traced, once per reason, whose FX103 the selection takes as a
    note (``Report.not_traced``: not ignored, not silenced by a ``noqa``, not reported as a
    problem); none for a class whose instance does not fit it where its FX105 is reported,
    which says so."""
    reported = {(p.path, p.line, p.code) for p in report.problems}
    return [note.module for note in report.not_traced if note.module is not None
            and not any((f.path, f.line, f.code) in reported for f in note.module.failures
                        if f.code in DOES_NOT_FIT_CODES)]


def show(results: list[FileResult], report: Report, summary: Summary,
         lists_not_traced: Callable[[str], bool]) -> ShownReport:
    """The report of ``results`` as it is shown; ``lists_not_traced(path)`` says whether the
    classes not traced of that file are listed rather than counted."""
    places = Places()
    return ShownReport(
        problems=[ShownProblem(problem, places.at(problem.path, problem.line, problem.column),
                               instance_notes(problem))
                  for problem in report.problems],
        not_traced=[NotTraced(module, places.at(module.path, module.line, module.column),
                              lists_not_traced(module.path))
                    for module in not_traced(report)],
        results=results, summary=summary, suppressed=report.suppressed,
        baselined=report.baselined, places=places)
