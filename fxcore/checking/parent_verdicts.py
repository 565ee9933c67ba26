"""Parent verdicts (``fxcore.reporting.parent_arguments``) over a run's results, at the two
granularities the adapters need: all at once (``fx-lsp check``: every result is in before the
report), or one result at a time against the latest results of other files (the server, which
publishes each file as its trace comes in)."""

from __future__ import annotations

from fxcore.model.results import FileResult
from fxcore.reporting.parent_arguments import apply_parent_arguments


def with_parent_verdicts(results: list[FileResult]) -> list[FileResult]:
    """The results, in path order, each class that needs it given the verdict of the instance a
    traced root built."""
    return apply_parent_arguments(sorted(results, key=lambda result: result.path))


class ParentVerdicts:
    """The latest result of each file whose roots built workspace classes: their derived
    verdicts serve the classes of other files."""

    def __init__(self) -> None:
        self._roots: dict[str, FileResult] = {}

    def apply(self, result: FileResult, remember: bool = True) -> FileResult:
        """``result`` with the verdicts of instances that traced roots built, remembering its
        own derived verdicts (or forgetting its file's older ones) for other files; without
        ``remember`` (a running trace's verdicts so far), the file's older ones stay."""
        if remember and result.derived_modules:
            self._roots[result.path] = result
        elif remember:
            self._roots.pop(result.path, None)
        others = [root for path, root in self._roots.items() if path != result.path]
        return apply_parent_arguments([result, *others])[0]
