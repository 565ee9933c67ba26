"""Parallel speed-up of ``fx-lsp check`` over a folder of generated model files.

Generates 60 small model files (MLPs, conv nets, residual blocks, attention; some with
data-dependent control flow, ``len()`` or iteration over a tensor, one constructor that
needs arguments, one file that fails to import) in a temporary workspace, then runs
``fx-lsp check --workers 1`` and ``--workers 2`` as subprocesses, alternating, so that both
see the same machine load. Each run also pays the fixed start-up (interpreter, the zygote's
torch import) that no worker count shortens; it is measured separately with a one-file run
and the speed-up is printed with and without it.

    python3 -m benchmarks run scale parallel_speedup -- [--files 60] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

from benchmarks.procfs import children_cpu_seconds, idle_fraction, machine_cpu_times
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

HEADER = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"

TEMPLATES: dict[str, str] = {
    "mlp": """
        class MLP{n}(nn.Module):
            def __init__(self, width: int = {width}):
                super().__init__()
                self.layers = nn.Sequential(
                    nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
                )
                self.norm = nn.LayerNorm(width)

            def forward(self, x):
                return self.norm(x + self.layers(x))
    """,
    "conv": """
        class ConvNet{n}(nn.Module):
            def __init__(self, channels: int = {width}):
                super().__init__()
                self.stem = nn.Conv2d(3, channels, 3, padding=1)
                self.blocks = nn.ModuleList(
                    nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1),
                                  nn.BatchNorm2d(channels), nn.ReLU())
                    for _ in range({depth})
                )
                self.head = nn.Linear(channels, 10)

            def forward(self, x):
                x = self.stem(x)
                for block in self.blocks:
                    x = x + block(x)
                return self.head(x.mean(dim=(2, 3)))
    """,
    "attention": """
        class Attention{n}(nn.Module):
            def __init__(self, dim: int = {width}, heads: int = 4):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, 3 * dim)
                self.out = nn.Linear(dim, dim)

            def forward(self, x):
                batch, length, dim = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(batch, length, self.heads, -1).transpose(1, 2)
                k = k.view(batch, length, self.heads, -1).transpose(1, 2)
                v = v.view(batch, length, self.heads, -1).transpose(1, 2)
                y = F.scaled_dot_product_attention(q, k, v)
                return self.out(y.transpose(1, 2).reshape(batch, length, dim))
    """,
    "control_flow": """
        class Gated{n}(nn.Module):
            def __init__(self, dim: int = {width}):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                y = self.proj(x)
                if y.sum() > 0:
                    y = torch.relu(y)
                return x + y
    """,
    "length": """
        class Pool{n}(nn.Module):
            def __init__(self, dim: int = {width}):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x).sum(dim=0) / len(x)
    """,
    "iteration": """
        class Rows{n}(nn.Module):
            def __init__(self, dim: int = {width}):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return torch.stack([self.proj(row) for row in x])
    """,
}

#: Files that are not plain templates: one class needing arguments, one failing import.
SPECIAL_FILES: dict[str, str] = {
    "needs_arguments.py": HEADER + textwrap.dedent("""
        class NeedsArguments(nn.Module):
            def __init__(self, width: int):
                super().__init__()
                self.proj = nn.Linear(width, width)

            def forward(self, x):
                return self.proj(x)
    """),
    "broken_import.py": HEADER + "from a_package_that_does_not_exist import Layer\n",
}


def generate_workspace(folder: str, file_count: int) -> dict[str, int]:
    """Write the model files; returns how many of each kind were written."""
    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write('[project]\nname = "generated-models"\nversion = "0"\n')
    counts: dict[str, int] = {}
    kinds = list(TEMPLATES)
    for index in range(file_count - len(SPECIAL_FILES)):
        kind = kinds[index % len(kinds)]
        # Vary sizes so files are not identical; two classes in every third file.
        body = TEMPLATES[kind].format(n=index, width=16 * (1 + index % 4), depth=2 + index % 3)
        if index % 3 == 0:
            other = kinds[(index + 1) % len(kinds)]
            body += TEMPLATES[other].format(n=f"{index}b", width=32, depth=2)
        with open(os.path.join(folder, f"model_{index:03d}_{kind}.py"), "w",
                  encoding="utf-8") as handle:
            handle.write(HEADER + textwrap.dedent(body))
        counts[kind] = counts.get(kind, 0) + 1
    for name, text in SPECIAL_FILES.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
        counts[name] = 1
    return counts


@dataclass
class Run:
    seconds: float
    #: User + system time of the whole ``fx-lsp check`` process tree.
    cpu_seconds: float
    #: Share of the machine's CPU left idle during the run (other users take the rest).
    machine_idle: float
    summary: str


def run_check(paths: list[str], workers: int) -> Run:
    """One ``fx-lsp check`` run."""
    cpu_before = children_cpu_seconds()
    machine_before = machine_cpu_times()
    # --no-cache: a repetition must trace again, not read the previous run's results.
    command = [sys.executable, "-m", "fx_lsp", "check", *paths, "--workers", str(workers),
               "--no-cache"]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    cpu = children_cpu_seconds() - cpu_before
    machine_idle = idle_fraction(machine_before, machine_cpu_times())
    if completed.returncode not in (0, 1):  # 1: some module failed, as intended
        raise RuntimeError(f"{command} exited {completed.returncode}: {completed.stderr}")
    lines = completed.stdout.strip().splitlines()
    return Run(seconds, cpu, machine_idle, lines[-1] if lines else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--repetitions", type=int, default=3)
    arguments = parser.parse_args()
    print(f"parallel speed-up: {machine_line()}")

    with tempfile.TemporaryDirectory(prefix="fx-lsp-bench-") as folder:
        counts = generate_workspace(folder, arguments.files)
        print(f"generated {arguments.files} files in {folder}: "
              + ", ".join(f"{kind} {count}" for kind, count in counts.items()))
        one_file = os.path.join(folder, sorted(f for f in os.listdir(folder)
                                               if f.startswith("model_"))[1])
        times: dict[int, list[float]] = {1: [], 2: []}
        startup: list[float] = []
        runs: dict[str, list[Run]] = {"`--workers 1`": [], "`--workers 2`": [],
                                      "one file (start-up)": []}
        summaries: set[str] = set()
        for repetition in range(arguments.repetitions):
            # Alternate so that a change of machine load hits both worker counts alike.
            for workers in (1, 2):
                run = run_check([folder], workers)
                times[workers].append(run.seconds)
                runs[f"`--workers {workers}`"].append(run)
                summaries.add(run.summary)
                # CPU / wall: how many cores the run kept busy (at most 2 here).
                print(f"  repetition {repetition + 1}, --workers {workers}: "
                      f"{run.seconds:6.2f} s wall, {run.cpu_seconds:6.2f} s CPU "
                      f"({run.cpu_seconds / run.seconds:.2f} cores busy; machine "
                      f"{run.machine_idle:.0%} idle)")
            run = run_check([one_file], 1)
            startup.append(run.seconds)
            runs["one file (start-up)"].append(run)
            print(f"  repetition {repetition + 1}, one file (start-up cost): "
                  f"{run.seconds:6.2f} s wall, {run.cpu_seconds:6.2f} s CPU "
                  f"(machine {run.machine_idle:.0%} idle)")
        for summary in sorted(summaries):
            print(f"  fx-lsp said: {summary}")
        if len(summaries) != 1:
            print("  warning: the runs disagree on the summary")

    print()
    rows = [[label, *(f"{run.seconds:.2f} s ({run.cpu_seconds:.2f} s CPU, "
                      f"{run.machine_idle:.0%} idle)" for run in done)]
            for label, done in runs.items()]
    # Other processes only ever add time, so the minimum is the least disturbed figure; the
    # median is given too.
    for label, pick in (("median", statistics.median), ("minimum", min)):
        one, two, fixed = pick(times[1]), pick(times[2]), pick(startup)
        speedup = f"**{one / two:.2f}x**"
        if one > fixed and two > fixed:
            speedup += (f" ({(one - fixed) / (two - fixed):.2f}x without the one-file "
                        f"start-up of {fixed:.2f} s)")
        rows.append([f"speed-up of 2 workers, {label}s", speedup,
                     *[""] * (arguments.repetitions - 1)])
    emit("parallel_speedup", markdown(
        [f"{arguments.files} files, `--no-cache`",
         *(f"repetition {number + 1}" for number in range(arguments.repetitions))], rows))
    print("(ideal on 2 cores: 2x for the tracing part; the start-up is serial)")


if __name__ == "__main__":
    main()
