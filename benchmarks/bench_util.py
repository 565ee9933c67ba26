"""Small helpers shared by the benchmark scripts (run as ``python benchmarks/NAME.py``, so
this folder is on ``sys.path``)."""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import time


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: with 30 samples, p95 is the 29th smallest, a real sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def describe(values: list[float]) -> str:
    """Median, p95, min and max of durations in seconds, printed in milliseconds."""
    return (
        f"median {statistics.median(values) * 1e3:8.1f} ms   "
        f"p95 {percentile(values, 0.95) * 1e3:8.1f} ms   "
        f"min {min(values) * 1e3:8.1f} ms   max {max(values) * 1e3:8.1f} ms   "
        f"(n={len(values)})"
    )


def machine_line() -> str:
    """What the figures were measured on: they only compare within one run."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (
        f"{time.strftime('%Y-%m-%d %H:%M')}  Python {platform.python_version()}  "
        f"{os.cpu_count()} cores  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def children_of(pid: int) -> list[int]:
    """Direct children of a process, whichever of its threads forked them (Linux /proc)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        except OSError:
            continue
    return found


def stat_cpu_seconds(pid: int, children: bool = False) -> float | None:
    """User + system CPU time from /proc/PID/stat: the process's own (fields 14, 15), or
    with ``children`` that of its children it has waited for (fields 16, 17)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # The command name (field 2) may hold spaces; the fields after it are plain.
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        return None
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / CLOCK_TICKS


def machine_cpu_times() -> tuple[float, float]:
    """(busy, idle) jiffies of all cores since boot, from /proc/stat."""
    with open("/proc/stat") as handle:
        values = [float(value) for value in handle.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, idle


def idle_fraction(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Share of the machine's CPU time left idle between two ``machine_cpu_times()``: near
    0 means other processes took every core, so no worker count can be faster."""
    busy, idle = after[0] - before[0], after[1] - before[1]
    return idle / (busy + idle) if busy + idle else float("nan")


REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def engine_version() -> str:
    """The commit and the state of fxcore/ and fx_lsp/: other developers commit to the same
    tree, and a change of fxcore between runs also changes the cache's key."""
    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=REPOSITORY, capture_output=True,
                              text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "fxcore", "fx_lsp")
    # The last commit that changed the engine, not HEAD: others commit other files.
    last = git("log", "-1", "--format=%h", "--", "fxcore", "fx_lsp")
    return last + (" + uncommitted changes in fxcore/fx_lsp" if dirty else "")
