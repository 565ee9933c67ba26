"""The editor's side of ``fx-lsp check --write-baseline``: a problem that the workspace's
``.fx-lsp-baseline.json`` holds is shown as a hint, saying so, so that adopting fx-lsp does not
paint a project's old code red, while new problems keep their severity. Matched as the command
line matches (``fxcore.reporting.baseline.match``), against the buffer's text."""

from __future__ import annotations

import dataclasses
import logging
import os

from fxcore.reporting import baseline
from fxcore.reporting.report import Report
from fxcore.workspace.file_access import UnreadableFile, read_text

log = logging.getLogger(__name__)

#: Added to the message of a problem shown as a hint because the baseline holds it.
BASELINED = " (in the baseline: shown as a hint)"


class BaselineFiles:
    """Each workspace root's baseline, read again only when its file changes."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[tuple[int, int], list[baseline.Entry]]] = {}

    def entries(self, root: str) -> list[baseline.Entry]:
        path = os.path.join(root, baseline.BASELINE_NAME)
        try:
            status = os.stat(path)
        except OSError:
            return []
        stamp = (status.st_mtime_ns, status.st_size)
        cached = self._read.get(root)
        if cached is None or cached[0] != stamp:
            try:
                found = baseline.loads(read_text(path, errors="strict"))
            except (OSError, UnreadableFile, UnicodeDecodeError, baseline.BaselineError) as error:
                log.warning("%s: not used: %s", path, error)
                found = []
            cached = self._read[root] = (stamp, found)
        return cached[1]

    def as_hints(self, report: Report, root: str, text_of: baseline.TextOf) -> Report:
        """``report`` with the problems of the baseline at ``root`` made hints."""
        entries = self.entries(root)
        if not entries:
            return report
        items = [(problem, baseline.entry_of(problem, root, text_of))
                 for problem in report.problems]
        held = {id(problem) for problem in baseline.match(items, entries).baselined}
        report.problems = [
            dataclasses.replace(problem, severity="hint", message=problem.message + BASELINED)
            if id(problem) in held else problem for problem in report.problems]
        return report
