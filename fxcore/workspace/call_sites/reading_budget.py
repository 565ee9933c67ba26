"""What one pass of the call-site index over a workspace may read and parse (``index``): the
build of the index and each rescan or file event after it, in the host, before any class of
the check is run.

Parsing a file and walking it for constructor calls costs about 2 s of CPU a megabyte of
ordinary code, and up to 10 s for a file dense with calls (a generated test of thousands of
``Net(...)`` lines), which no size limit per file catches: 120 such test files held a check
for minutes before its first class. So a pass stops at ``MAX_PASS_BYTES`` of text or
``PASS_SECONDS`` of the host's CPU time, whichever comes first, also in the middle of a
file (whose calls are then left out whole). CPU time (the thread's own) keeps the bound the
same on a loaded machine; a wall-clock backstop, ``WALL_CLOCK_FACTOR`` times as long and
scaled (``fxcore.model.timeout_scale``), ends a pass whose thread gets no CPU.
"""

from __future__ import annotations

import time

from fxcore.model.timeout_scale import timeout_scale

#: The most text one pass parses: a large project's sources, tests and documents whole
#: (torch.nn's are 2 MB, timm's about 5 MB).
MAX_PASS_BYTES = 16 * 1024 * 1024
#: The most CPU seconds one pass takes: ordinary code of a few megabytes.
PASS_SECONDS = 10.0
#: How much longer in wall-clock time than in CPU time a pass may last (times the scale).
WALL_CLOCK_FACTOR = 3.0


class ReadingBudgetSpent(Exception):
    """The pass's bytes or time ran out while a file was read."""


class ReadingBudget:
    """The bytes and the time left to one pass, from when it is made."""

    def __init__(self) -> None:
        self.bytes_left = MAX_PASS_BYTES
        self._cpu_started = time.thread_time()
        self._wall_started = time.monotonic()
        self._wall_limit = PASS_SECONDS * WALL_CLOCK_FACTOR * timeout_scale()
        #: Files left out because the pass ran out (counted for the warning).
        self.left_out = 0

    def spent(self) -> bool:
        return (self.bytes_left < 0
                or time.thread_time() - self._cpu_started >= PASS_SECONDS
                or time.monotonic() - self._wall_started >= self._wall_limit)

    def take(self, text: str) -> None:
        """Count ``text`` as parsed; raises ``ReadingBudgetSpent`` past the bound."""
        self.bytes_left -= len(text)
        self.check()

    def check(self) -> None:
        if self.spent():
            raise ReadingBudgetSpent()
