"""Peak memory of ``fx-lsp check --no-cache`` over 1,000, 3,000 and 10,000 one-line files and
one model: how the host's memory grows with the workspace.

Each workspace holds a ``pyproject.toml``, one model file (a class the workers trace) and N
one-line Python files. The real command line runs on each in a fresh process; its own peak
resident set (``VmHWM`` of /proc/PID/status, read every 20 ms while it runs: it only grows)
is what the host keeps, and beside it the largest peak of its children (zygote and workers),
which do not grow with the workspace. Targets: 3,000 files cost at most 3.5x the memory of
1,000 (linear in the files with a fixed start-up cost is less than 3x), and 10,000 stay under
1 GB.

    python3 -m benchmarks run scale host_memory -- [--sizes 1000 3000 10000]
        [--repository PATH]

``--repository``: the fx-lsp checkout to run (default this one), to measure another branch.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.paths import REPOSITORY, child_environment
from benchmarks.procfs import process_tree, status_kib
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown, met

#: 3,000 files cost at most this many times the memory of 1,000.
TARGET_RATIO = 3.5
#: 10,000 files stay under this many MiB (1 GB).
TARGET_MIB = 1000 * 1000 * 1000 / 2**20

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))
"""


def make_workspace(root: str, files: int) -> None:
    """``pyproject.toml``, ``model.py`` and ``files`` - 1 one-line files, 100 a folder."""
    with open(os.path.join(root, "pyproject.toml"), "w") as handle:
        handle.write("[project]\nname = 'host-memory'\n")
    with open(os.path.join(root, "model.py"), "w") as handle:
        handle.write(MODEL)
    for number in range(files - 1):
        folder = os.path.join(root, f"package_{number // 100}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"line_{number}.py"), "w") as handle:
            handle.write(f"VALUE_{number} = {number}\n")


def peak_memory(root: str, repository: str) -> tuple[float, float, float]:
    """(the command line's own peak RSS in MiB, its children's largest peak RSS in MiB, wall
    seconds) of ``fx-lsp check --no-cache root``."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", root], cwd=root,
        env=child_environment(repository=repository), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    own, children = 0, 0
    while process.poll() is None:
        for pid in process_tree(process.pid):
            peak = status_kib(pid, ("VmHWM",)).get("VmHWM", 0)
            if pid == process.pid:
                own = max(own, peak)
            else:
                children = max(children, peak)
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    stderr = process.stderr.read() if process.stderr else ""
    if process.returncode not in (0, 1):
        raise SystemExit(f"fx-lsp check failed ({process.returncode}):\n{stderr}")
    return own / 1024, children / 1024, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=3, default=[1000, 3000, 10000])
    parser.add_argument("--repository", default=REPOSITORY)
    arguments = parser.parse_args()
    print(machine_line())
    print(f"fx-lsp from {arguments.repository}")
    peaks, rows = [], []
    for size in arguments.sizes:
        with tempfile.TemporaryDirectory(prefix=f"fx-lsp-memory-{size}-") as root:
            make_workspace(root, size)
            own, children, elapsed = peak_memory(root, arguments.repository)
        peaks.append(own)
        rows.append([f"{size:,}", f"{own:.0f} MiB", f"{children:.0f} MiB", f"{elapsed:.1f} s"])
        print(f"{size} files: CLI {own:.0f} MiB, largest child {children:.0f} MiB, "
              f"{elapsed:.1f} s", flush=True)
    small, middle, large = arguments.sizes
    ratio = peaks[1] / peaks[0]
    rows.append([f"{middle:,} vs {small:,}", f"**{ratio:.2f}x**",
                 met(f"at most {TARGET_RATIO}x", ratio <= TARGET_RATIO), ""])
    rows.append([f"{large:,}", f"**{peaks[2]:.0f} MiB**",
                 met("under 1 GB", peaks[2] < TARGET_MIB), ""])
    emit("host_memory", markdown(
        ["files (one model, the rest one line)", "CLI peak RSS (VmHWM)",
         "largest child's peak RSS", "wall"], rows))


if __name__ == "__main__":
    main()
