"""The command line's progress bar for a run (``fxcore.api.check.Progress``)."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal (and not
    turned off: ``-v`` and ``-q``)."""

    def __init__(self, shown: bool = True, stream: TextIO | None = None) -> None:
        self.shown = shown
        self.stream = stream or sys.stderr
        self.total = 0
        self.enabled = False
        self.done = 0

    def start(self, total: int) -> None:
        self.total = total
        self.enabled = self.shown and total > 1 and self.stream.isatty()
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
