"""What a job still running has judged so far: the verdicts of its classes whose verdicts are
final, for an editor to show before the job ends (``fxcore.checking.partial_verdicts``)."""

from __future__ import annotations

from dataclasses import dataclass

from fxcore.model.results import FileResult


@dataclass(frozen=True)
class PartialResult:
    """A file's verdicts so far: ``result`` holds every mode's verdict of the classes judged
    in them all whose verdicts no later one changes (the job's final result gives each of
    them the same), and no file-level data (imports, errors): those come with the end."""

    result: FileResult
    #: How many of the job's classes have no verdict here yet (none, or none final yet).
    unjudged: int
    #: How many classes the job has (those its children announced, and those kept).
    classes: int
