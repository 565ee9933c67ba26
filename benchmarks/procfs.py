"""CPU time, memory and process trees read from Linux's /proc: the benchmarks run on shared
machines, so each figure of wall time comes with what the processes themselves used."""

from __future__ import annotations

import os
import resource

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def children_of(pid: int) -> list[int]:
    """Direct children of a process, whichever of its threads forked them."""
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


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending += children_of(current)
    return tree


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


def children_cpu_seconds() -> float:
    """User + system time of this process's waited-for descendants. The zygote reaps the
    job children and the CLI reaps the zygote, so a run's delta covers its whole tree."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def status_kib(pid: int, keys: tuple[str, ...]) -> dict[str, int]:
    """Fields of /proc/PID/status that are sizes in kB (VmRSS, VmHWM); none of a process
    that ended between listing and reading."""
    values: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in keys:
                    values[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return values


def pss_kib(pid: int) -> int:
    """Proportional set size: shared pages (torch's, inherited by fork) counted once over
    the processes that share them, so the sum over the tree is real memory."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


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
