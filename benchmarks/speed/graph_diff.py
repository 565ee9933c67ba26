"""``fx-lsp diff HEAD~1 HEAD`` where the last commit changed one file of a generated
repository, against ``fx-lsp check .`` of the same repository with its cache warm: each a
fresh ``python3 -m fx_lsp`` process, so both pay the interpreter, torch and zygote start.
The diff runs twice: first tracing the changed file at both revisions, then from the cache.

    python3 -m benchmarks run speed graph_diff -- [--files 20]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

MODEL = '''import torch
from torch import nn


class Block{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x)) + {i}


class Head{i}(nn.Module):
    def forward(self, x):
        return x.softmax(-1) * {i}
'''


def git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b",
                    *arguments], check=True, capture_output=True)


def timed(root: Path, *arguments: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=root,
                   capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        git(root, "init", "-q")
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n[tool.fx-lsp]\n")
        for i in range(arguments.files):
            (root / f"model_{i}.py").write_text(MODEL.format(i=i))
        git(root, "add", "-A")
        git(root, "commit", "-qm", "one")
        changed = root / "model_0.py"
        changed.write_text(changed.read_text().replace(
            "return x.softmax(-1) * 0", "if x.sum() > 0:\n            x = -x\n"
            "        return x.softmax(-1)"))
        git(root, "commit", "-qam", "two")
        timed(root, "check", "--quiet", ".")  # fills the cache
        rows = [[f"check . ({arguments.files} files, cache warm)",
                 f"{timed(root, 'check', '--quiet', '.'):.2f} s"],
                ["diff HEAD~1 HEAD, first run (1 changed file)",
                 f"{timed(root, 'diff', '--quiet', 'HEAD~1', 'HEAD'):.2f} s"],
                ["diff HEAD~1 HEAD, again (from the cache)",
                 f"{timed(root, 'diff', '--quiet', 'HEAD~1', 'HEAD'):.2f} s"]]
    print(machine_line())
    emit("graph_diff", markdown(["command", "wall time"], rows))


if __name__ == "__main__":
    main()
