"""``fx-lsp check`` over 1,000 and over 3,000 tiny files, in one run: how its time grows.

Each workspace holds a ``pyproject.toml``, a README with a constructor call, and N tiny Python
files (a function each, no class: no worker imports them, so what is timed is fx-lsp's own
per-file work, the call-site index included). Each size is checked ``--repeat`` times with
``fx-lsp check --no-cache`` in a fresh process; the ratio of the medians is printed.
Target: 3,000 files take at most 3.5 times as long as 1,000 (linear would be 3x).

    python3 -m benchmarks run scale check_scaling --
        [--sizes 1000 3000] [--repeat 1] [--repository PATH]

``--repository``: the fx-lsp checkout to run (default this one), to measure another branch.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.paths import REPOSITORY, child_environment
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

#: The target: 3,000 files take at most 3.5 times as long as 1,000 (linear would be 3x).
TARGET_RATIO = 3.5


def make_workspace(root: str, files: int) -> None:
    with open(os.path.join(root, "pyproject.toml"), "w") as handle:
        handle.write("[project]\nname = 'scaling'\n")
    with open(os.path.join(root, "README.md"), "w") as handle:
        handle.write("```python\nmodel = Net(width=8)\n```\n")
    for number in range(files):
        folder = os.path.join(root, f"package_{number // 100}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"tiny_{number}.py"), "w") as handle:
            handle.write(f"def tiny_{number}(x):\n    return x + {number}\n")


def time_check(root: str, repository: str) -> float:
    env = child_environment(repository=repository)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", root],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"fx-lsp check failed ({completed.returncode}):\n{completed.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 3000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--repository", default=REPOSITORY)
    arguments = parser.parse_args()
    print(machine_line())
    print(f"fx-lsp from {arguments.repository}")
    medians, rows = [], []
    for size in arguments.sizes:
        with tempfile.TemporaryDirectory(prefix=f"fx-lsp-scaling-{size}-") as root:
            make_workspace(root, size)
            times = [time_check(root, arguments.repository) for _ in range(arguments.repeat)]
        medians.append(statistics.median(times))
        rows.append([f"{size:,}", ", ".join(f"{t:.2f} s" for t in times),
                     f"{medians[-1]:.2f} s"])
    small, large = arguments.sizes
    ratio = medians[1] / medians[0]
    rows.append([f"{large:,} vs {small:,}", f"files {large / small:.1f}x",
                 f"**{ratio:.2f}x** (target at most {TARGET_RATIO}x: "
                 f"{'met' if ratio <= TARGET_RATIO else 'missed'})"])
    emit("check_scaling", markdown(["files", "runs", "median"], rows))


if __name__ == "__main__":
    main()
