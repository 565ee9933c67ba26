"""How many cores stood idle lately: jobs run side by side only pay when each gets a core of
its own; on cores that other work holds they only share them, and each extra child adds its
own start-up (fork, import, build, example inputs) to the work.

``IdleCores.look()`` reads the machine's idle and total CPU time (``/proc/stat``, Linux) and
gives the cores' worth left idle since the previous look, when that was recent (an editor
trace's stages look at each start, so the window is the stage before). Without a recent
look, or without ``/proc/stat``, the load average of the last minute stands in.

Measured with benchmarks/editor/mode_latency.py on 2 cores (a small module, export and compile):
with another process holding one core, side by side took 585 ms from a save to every mode's
diagnostics against 513 ms one after the other in one child; with the machine saturated
(load average 5), 1.44 s against 1.08 s. Where the other core is idle, each child has a core
of its own, and the two take as long as the slower.
"""

from __future__ import annotations

import os
import threading
import time

STAT_FILE = "/proc/stat"
#: A look further back than this says nothing about now: the load average answers instead.
MAX_WINDOW_SECONDS = 2.0


def _cpu_times(path: str) -> tuple[float, float] | None:
    """(idle, total) clock ticks of all cores since boot, or None when unreadable."""
    try:
        with open(path, encoding="ascii") as handle:
            fields = handle.readline().split()
        values = [float(value) for value in fields[1:]]
    except (OSError, ValueError):
        return None
    if not fields or fields[0] != "cpu" or len(values) < 4:
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    return idle, sum(values)


def _idle_by_load_average(cores: int) -> float | None:
    try:
        return max(0.0, cores - os.getloadavg()[0])
    except (OSError, AttributeError):  # no load average (Windows)
        return None


class IdleCores:
    """Looks at the machine's CPU time; each look says how many cores stood idle since the
    one before (``path``: the stat file, for tests)."""

    def __init__(self, path: str = STAT_FILE) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._last: tuple[float, float, float] | None = None  # (time, idle, total)

    def look(self) -> float | None:
        """The cores' worth left idle since the previous look, or by the load average when
        that was not recent; None when neither can be known."""
        cores = os.cpu_count() or 1
        times = _cpu_times(self._path)
        now = time.monotonic()
        with self._lock:
            last, self._last = self._last, (now, *times) if times is not None else None
        if times is None or last is None or now - last[0] > MAX_WINDOW_SECONDS:
            return _idle_by_load_average(cores)
        idle, total = times[0] - last[1], times[1] - last[2]
        if total <= 0:  # under a clock tick since: as good as no look
            with self._lock:
                self._last = last
            return _idle_by_load_average(cores)
        return cores * idle / total
