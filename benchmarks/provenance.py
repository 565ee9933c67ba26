"""What figures were measured on: the commit, the machine, Python and torch. Figures only
compare within one run (the machines are shared), so each printed run and each table written
into its page says where it came from."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata

from benchmarks.paths import REPOSITORY


def _git(*arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=REPOSITORY, capture_output=True,
                          text=True).stdout.strip()


def load_average() -> str:
    """Over 1, 5 and 15 minutes: the machines are shared, and wall times wait for a core."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return " ".join(f"{value:.2f}" for value in load)


def machine_line() -> str:
    """The line a benchmark prints first: time, Python, cores and the load at its start."""
    return (
        f"{time.strftime('%Y-%m-%d %H:%M')}  Python {platform.python_version()}  "
        f"{os.cpu_count()} cores  load average {load_average()}"
    )


def engine_version() -> str:
    """The commit and the state of fxcore/ and fx_lsp/: other developers commit to the same
    tree, and a change of fxcore between runs also changes the cache's key."""
    dirty = _git("status", "--porcelain", "--", "fxcore", "fx_lsp")
    # The last commit that changed the engine, not HEAD: others commit other files.
    last = _git("log", "-1", "--format=%h", "--", "fxcore", "fx_lsp")
    return last + (" + uncommitted changes in fxcore/fx_lsp" if dirty else "")


def commit() -> str:
    """HEAD, and whether the code measured differs from it (the pages the run writes into,
    under docs/, do not count)."""
    dirty = _git("status", "--porcelain", "--", "fxcore", "fx_lsp", "benchmarks")
    return _git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")


def cpu_model() -> str:
    """The processor's name as the kernel gives it; the architecture where it gives none."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_version() -> str:
    """The installed torch's version, read without importing torch (seconds, and memory)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "not installed"


def provenance_line(command: str, measured: str | None = None) -> str:
    """The line above a table in its page: when, at which commit, on what, how, and the
    load when it was written. ``measured``: ``commit()`` when the run began (others commit
    while a long run goes on); HEAD now when not given."""
    return (
        f"_Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M %Z')}: commit "
        f"{measured or commit()}, {cpu_model()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}, torch {torch_version()}; load average {load_average()}._"
    )
