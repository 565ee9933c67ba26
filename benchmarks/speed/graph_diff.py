"""``fx-lsp diff HEAD~1 HEAD`` of a one-file commit against a cached ``fx-lsp check .``.

Each command is a fresh ``python3 -m fx_lsp`` process, so both pay the interpreter, torch and
zygote start. The diff runs twice: first tracing the changed file (and the files importing
it) at both revisions, then from the cache.

The repository is generated (``--files`` small files), or with ``--timm-layers`` a real
library: timm's layers, 158 classes in 70 files whose ``__init__`` imports every one
(``benchmarks/speed/timm_layers_repository.py``), the commit a graph break in one class.

    python3 -m benchmarks run speed graph_diff -- [--files 20] [--timm-layers] [--mode M]

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
    completed = subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=root,
                               capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):  # 1: problems found, as a library has
        sys.exit(f"fx-lsp {' '.join(arguments)} exited {completed.returncode}: "
                 f"{completed.stderr[-2000:]}")
    return seconds


def generated(root: Path, files: int) -> tuple[str, Path]:
    """``files`` small model files, the last commit a data-dependent ``if`` in one; what
    they are, and the changed file."""
    root.mkdir()
    git(root, "init", "-q")
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n[tool.fx-lsp]\n")
    for i in range(files):
        (root / f"model_{i}.py").write_text(MODEL.format(i=i))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    changed = root / "model_0.py"
    changed.write_text(changed.read_text().replace(
        "return x.softmax(-1) * 0", "if x.sum() > 0:\n            x = -x\n"
        "        return x.softmax(-1)"))
    git(root, "commit", "-qam", "two")
    return f"{files} generated files", changed


def timm_layers(root: Path) -> tuple[str, Path]:
    from benchmarks.speed import timm_layers_repository as layers

    layers.build(root)
    layers.graph_change(root, (layers.BREAK,))
    return "timm's layers, 70 files", root / layers.PACKAGE / layers.BREAK[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--timm-layers", action="store_true",
                        help="timm's layers as the repository, not generated files")
    parser.add_argument("--mode", default=None, help="capture modes of both commands")
    arguments = parser.parse_args()
    modes = ("--mode", arguments.mode) if arguments.mode else ()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repository"
        what, changed = (timm_layers(root) if arguments.timm_layers
                         else generated(root, arguments.files))
        timed(root, "check", "--quiet", *modes, ".")  # fills the cache
        diff = ("diff", "--quiet", *modes, "HEAD~1", "HEAD")
        rows = [[f"check . ({what}, cache warm)",
                 f"{timed(root, 'check', '--quiet', *modes, '.'):.2f} s"],
                ["diff HEAD~1 HEAD, first run (1 changed file)", f"{timed(root, *diff):.2f} s"],
                ["diff HEAD~1 HEAD, again (from the cache)", f"{timed(root, *diff):.2f} s"]]
        # The pull request's next push: the changed file edited again, BASE from the cache.
        changed.write_text(changed.read_text() + "# edited again\n")
        git(root, "commit", "-qa", "--amend", "--no-edit")
        rows.append(["diff HEAD~1 HEAD, the file edited again (BASE from the cache)",
                     f"{timed(root, *diff):.2f} s"])
    print(machine_line())
    name = "graph_diff_timm_layers" if arguments.timm_layers else "graph_diff"
    emit(name, markdown(["command", "wall time"], rows))


if __name__ == "__main__":
    main()
