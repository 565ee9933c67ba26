"""The worker's time budgets, counted in the worker's CPU time.

How far a search goes (the candidate inputs run, the constructor arguments built, the
instances traced, the modes judged, the calls of compile's loop) is part of the verdict it
gives. Counted in wall-clock time, it depended on the machine's load: on a busy CI machine a
search tried fewer candidates, and a class's verdict differed from the one it had alone.
Counted in the worker's CPU time (``time.process_time``: every thread of the process; a
worker runs torch with one, ``fxcore.host.preload``), it is the code's own answer.

Code that waits without using the CPU (a sleep, a lock, a child process's work) spends none of
it: a backstop in wall-clock time, ``WALL_CLOCK_FACTOR`` times the budget and times the time-out
scale (``fxcore.model.timeout_scale``), stops it, before the host's time-out of the class,
counted in wall-clock time and scaled alike, stops the whole class. On an idle machine a
worker's CPU time keeps up with the wall clock, and the CPU budget is what ends a search.
"""

from __future__ import annotations

import math
import time

from fxcore.model.timeout_scale import timeout_scale

#: How much longer in wall-clock time than in CPU time a budget may last (times the time-out
#: scale). The inputs stage's budget is half a class's time-out: its backstop is still within
#: the time-out.
WALL_CLOCK_FACTOR = 1.5


def wall_clock_backstop(seconds: float, factor: float = WALL_CLOCK_FACTOR) -> float:
    """The wall-clock seconds that a budget of ``seconds`` of CPU time may last at most."""
    return seconds * factor * timeout_scale()


class Budget:
    """``seconds`` of the worker's CPU time from when it is made (by default unlimited: a
    stopwatch), ended early by its wall-clock backstop (``factor`` times as long, scaled)."""

    def __init__(self, seconds: float = math.inf, factor: float = WALL_CLOCK_FACTOR) -> None:
        self.seconds = seconds
        self._cpu_started = time.process_time()
        self._wall_started = time.monotonic()
        self._wall_per_cpu = wall_clock_backstop(1.0, factor)

    def cpu_spent(self) -> float:
        return time.process_time() - self._cpu_started

    def spent(self) -> float:
        """The CPU seconds spent since it was made; where more, the wall-clock seconds
        divided by the backstop's factor (a wait counts, only slower)."""
        return max(self.cpu_spent(),
                   (time.monotonic() - self._wall_started) / self._wall_per_cpu)

    def left(self) -> float:
        """What is left of it (0 or less when it is spent)."""
        return self.seconds - self.spent()

    def over(self) -> bool:
        return self.left() <= 0

    def slowed(self) -> bool:
        """Whether its wall-clock backstop ended it with CPU time left."""
        return self.over() and self.cpu_spent() < self.seconds
