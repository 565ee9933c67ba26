"""Whether the machine's CPUs are contended: then jobs run side by side only share the same
cores, and each extra child adds its own start-up (fork, import, build, example inputs) to
the work.

Linux's pressure stall information says it directly (``/proc/pressure/cpu``, Linux 4.20+):
the share of the last 10 seconds in which some runnable task waited for a CPU. Without it
(another OS, a kernel without PSI), the load average of the last minute stands in: fewer
than one core's worth of it left idle counts as contended.

Measured with benchmarks/mode_latency.py on 2 cores shared with other work (``avg10`` 75 to
90 %, load average 5): export and compile side by side took 1.44 s from a save to their
diagnostics against 1.08 s in one child after the other, and 650 against 520 ms of the
workers' CPU; on an idle machine, side by side is the faster.
"""

from __future__ import annotations

import os

PRESSURE_FILE = "/proc/pressure/cpu"
#: Above this share (percent) of the last 10 s in which a task waited for a CPU, the CPUs
#: count as contended. Alone on an idle machine, fx-lsp's own jobs stay well below it.
CONTENDED_PERCENT = 20.0


def _waiting_percent(path: str) -> float | None:
    """``some avg10`` of a PSI file, or None when it cannot be read."""
    try:
        with open(path, encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except (OSError, ValueError):
        return None
    for line in lines:
        fields = line.split()
        if fields and fields[0] == "some":
            for field in fields[1:]:
                name, _, value = field.partition("=")
                if name == "avg10":
                    try:
                        return float(value)
                    except ValueError:
                        return None
    return None


def cpu_contended(path: str = PRESSURE_FILE) -> bool:
    """The CPUs are busy enough that one more job running beside another would only slow
    both (``path``: the PSI file, for tests)."""
    waiting = _waiting_percent(path)
    if waiting is not None:
        return waiting > CONTENDED_PERCENT
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average (Windows): assume free cores
        return False
    return load > (os.cpu_count() or 1) - 1
