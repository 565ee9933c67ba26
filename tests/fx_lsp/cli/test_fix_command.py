"""``fx-lsp check --fix`` and ``--diff`` on copies of the examples and of the recall corpus: the
editor's fixes, applied from the command line."""

from __future__ import annotations

import ast
import io
import json
import shutil
import subprocess
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from cli_support import fx_lsp
from engine_support import EXAMPLES, REPO_ROOT

RECALL_MODELS = REPO_ROOT / "tests" / "recall" / "models"


def cli(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", *arguments, ".", cwd=cwd)


def copy_of(corpus: str, tmp_path: Path) -> Path:
    root = tmp_path / corpus
    if corpus == "examples":
        shutil.copytree(EXAMPLES, root)
    else:
        shutil.copytree(RECALL_MODELS, root / "models")
        (root / "pyproject.toml").write_text("[project]\nname = 'recall'\n")
    return root


def problems(root: Path) -> list[dict]:
    completed = cli("--format", "json", cwd=root)
    return json.loads(completed.stdout)["diagnostics"]


def identity(problem: dict) -> tuple:
    """What a problem is, whatever line it moved to."""
    return problem["path"], problem["code"], problem["message"], tuple(problem["classes"])


def comments(text: str) -> list[str]:
    return [token.string for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type == tokenize.COMMENT]


@pytest.mark.parametrize("corpus", ["examples", "recall"])
def test_fix_removes_what_it_targets_and_nothing_else_changes(corpus: str,
                                                              tmp_path: Path) -> None:
    root = copy_of(corpus, tmp_path)
    before_texts = {path: path.read_text() for path in root.rglob("*.py")}
    before = problems(root)
    completed = cli("--fix", "--format", "json", cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    fixed_lines = [line.strip() for line in completed.stderr.splitlines()[1:]]
    assert completed.stderr.startswith(f"Fixed {len(fixed_lines)} problem")
    assert fixed_lines, "the corpus has failures the safe fixes handle"
    targeted = []
    for line in fixed_lines:
        where, code = line.split(": ")[0], line.split(": ")[1]
        path, number, column = where.rsplit(":", 2)
        targeted.append(next(p for p in before if (p["path"], p["line"], p["column"],
                                                   p["code"]) == (path, int(number),
                                                                  int(column), code)))
    after = json.loads(completed.stdout)["diagnostics"]
    remaining = Counter(map(identity, after))
    for problem in targeted:
        assert remaining[identity(problem)] == 0, problem
    # No new problem: what remains was there before.
    assert not remaining - Counter(map(identity, before)), remaining - Counter(map(identity,
                                                                                     before))
    changed = [path for path, text in before_texts.items() if path.read_text() != text]
    assert changed
    for path in changed:
        text = path.read_text()
        ast.parse(text)
        assert comments(before_texts[path]) == comments(text), path
        kept = [line for line in before_texts[path].splitlines() if line.strip()]
        assert all(line in text.splitlines() for line in kept), path  # only additions


def test_diff_prints_the_edits_and_writes_nothing(tmp_path: Path) -> None:
    root = copy_of("examples", tmp_path)
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    completed = cli("--diff", cwd=root)
    assert completed.returncode == 1
    assert "--- models/pooling.py\n+++ models/pooling.py\n" in completed.stdout
    assert '+torch.fx.wrap("len")' in completed.stdout
    assert "+autowrap-functions = [\"models.ops:clamp_norm\"]" in completed.stdout
    assert completed.stderr.startswith("Would fix 2 problems in 2 files.")
    assert {path: path.read_bytes() for path in root.rglob("*") if path.is_file()
            and ".fx-lsp-cache" not in path.parts} == {
        path: data for path, data in before.items() if ".fx-lsp-cache" not in path.parts}


def test_unsafe_fixes_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "flag.py").write_text(
        "from torch import nn\n\n\nclass Flagged(nn.Module):\n"
        "    def forward(self, x, double=False):\n"
        "        if double:\n            return x * 2\n        return x\n")
    safe = cli("--fix", cwd=tmp_path)
    assert safe.stderr.startswith("Fixed 0 problems") and safe.returncode == 1
    unsafe = cli("--fix", "--unsafe-fixes", cwd=tmp_path)
    assert unsafe.returncode == 0, unsafe.stdout + unsafe.stderr
    assert "concrete-args" in unsafe.stderr
    assert "double = false" in (tmp_path / "pyproject.toml").read_text()
