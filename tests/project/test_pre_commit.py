"""The repository's pre-commit hook, run by the real ``pre-commit try-repo`` on a scratch git
repository with one traceable and one failing model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_support import REPO_ROOT

GOOD = ("import torch\nfrom torch import nn\n\n\nclass Good(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(4, 4)\n"
        "\n    def forward(self, x):\n        return torch.relu(self.lin(x))\n")
BAD = ("from torch import nn\n\n\nclass Bad(nn.Module):\n    def forward(self, x):\n"
       "        if x.sum() > 0:\n            return x\n        return -x\n")


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if shutil.which("pre-commit") is None:
        pytest.fail("pre-commit is not installed (it is in the test extra)")
    if not (REPO_ROOT / ".git").exists():
        pytest.fail(f"{REPO_ROOT} is not a git checkout: pre-commit try-repo needs one")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'scratch'\n")
    (repo / "good.py").write_text(GOOD)
    (repo / "bad.py").write_text(BAD)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    for command in (["init", "-q"], ["config", "user.email", "t@example.com"],
                    ["config", "user.name", "t"], ["add", "-A"]):
        subprocess.run(["git", *command], cwd=repo, check=True, env=env)
    return repo, env


def try_repo(scratch: tuple[Path, dict[str, str]], *files: str) -> subprocess.CompletedProcess:
    repo, env = scratch
    selection = ["--all-files"] if not files else ["--files", *files]
    return subprocess.run(["pre-commit", "try-repo", str(REPO_ROOT), "fx-lsp", *selection],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_the_hook_passes_a_traceable_file(scratch: tuple[Path, dict[str, str]]) -> None:
    completed = try_repo(scratch, "good.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "fx-lsp" in completed.stdout and "Passed" in completed.stdout


def test_the_hook_fails_on_a_failing_file(scratch: tuple[Path, dict[str, str]]) -> None:
    completed = try_repo(scratch, "bad.py")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "bad.py:6:12: FX001 [Bad]" in completed.stdout
    assert "good.py" not in completed.stdout  # only the files pre-commit passes are checked
    # pre-commit also exits 1 on its own errors (a missing or invalid manifest), so the exit
    # status alone does not show the hook ran: --all-files passes both Python files to fx-lsp.
    everything = try_repo(scratch)
    assert everything.returncode == 1, everything.stdout + everything.stderr
    assert "bad.py:6:12: FX001 [Bad]" in everything.stdout
    assert "Checked 2 files: 2 modules traced, 1 traceable, 1 failed" in everything.stdout
