"""``fx-lsp check --fix --unsafe-fixes`` on the commonest ways to write a branch on tensor data:
the early return (``if ...: return a`` then ``return b``) and ``if``/``elif`` chains whose
branches each return, rewritten as (nested) ``torch.cond``, on real files. The CLI checks again
after fixing; then REAL torch.export and torch.compile run on CPU with real tensors on the fixed
code and on the original (which they must refuse), and the fixed code gives the original's
outputs on an input taking each branch. What the rewrite must not take stays as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_pt2_guard_fixes import cli, codes, real_torch

# Real torch beside fx-lsp on whole workspaces, about 20 s: the slow tier.
pytestmark = pytest.mark.slow

RETURNS = '''\
from torch import nn


class EarlyReturn(nn.Module):
    def __init__(self):
        super().__init__()
        self.left = nn.Linear(8, 8)
        self.right = nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:
            return self.left(x)
        # the other side
        return self.right(x)


class Chain(nn.Module):
    def forward(self, x):
        if x.min() > 0:
            return x * 2
        elif x.max() < 0:  # all negative
            return -x
        else:
            return x + 1


class EarlyChain(nn.Module):
    def forward(self, x):
        if x.min() > 0:
            return x * 2
        elif x.max() < 0:
            return x
        return x + 1
'''

#: Early returns the rewrite must leave alone: a statement between the ``if`` and the
#: ``return`` that is not one, and a branch with an effect of its own.
UNTOUCHED = '''

class Between(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        y = x - 1
        return y


class InPlace(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.add_(1)
        return x + 1
'''

REWRITTEN = ["EarlyReturn", "Chain", "EarlyChain"]
#: The line of each class's ``if``.
IF_LINES = {"EarlyReturn": 11, "Chain": 19, "EarlyChain": 29, "Between": 38, "InPlace": 46}


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "returns.py").write_text(RETURNS + UNTOUCHED)
    tables = [f'[tool.fx-lsp.modules."returns:{name}"]\ninputs = {{x = "float32[4, 8]"}}\n'
              for name in IF_LINES]
    (root / "pyproject.toml").write_text('[project]\nname = "ws"\n\n' + "".join(tables))
    return root


def test_early_returns_and_elif_chains_become_torch_cond_that_really_exports_and_compiles(
        tmp_path: Path) -> None:
    root = workspace(tmp_path)
    original = tmp_path / "original"
    shutil.copytree(root, original)
    assert codes(root, "export", "returns.py") == [(line, "FX401")
                                                   for line in IF_LINES.values()]
    completed = cli(root, "compile", "returns.py", "--fix", "--unsafe-fixes")
    assert completed.stderr.startswith("Fixed "), completed.stderr
    fixed_titles = {line.split(": ", 2)[2] for line in completed.stderr.splitlines()[1:]}
    assert fixed_titles == {
        "Rewrite the if and the return after it as torch.cond (the graph keeps both branches; "
        "it returns from lambdas)",
        "Rewrite the if/elif as torch.cond (the graph keeps all 3 branches; it returns from "
        "lambdas)",
        "Rewrite the if/elif and the return after it as torch.cond (the graph keeps all 3 "
        "branches; it returns from lambdas)"}
    text = (root / "returns.py").read_text()
    assert text.startswith("from torch import nn\nimport torch\n")
    for rewritten in (
            "        # the other side\n        return torch.cond(x.sum() > 0, lambda: "
            "self.left(x), lambda: self.right(x))\n\n",
            "        # all negative\n        return torch.cond(x.min() > 0, lambda: x * 2, "
            "lambda: torch.cond(x.max() < 0, lambda: -x, lambda: x + 1))\n\n",
            "        return torch.cond(x.min() > 0, lambda: x * 2, lambda: torch.cond("
            "x.max() < 0, lambda: x.clone(), lambda: x + 1))\n\n"):
        assert rewritten in text
    assert text.endswith(UNTOUCHED)
    # The CLI traced the changed file again: only what it left alone is reported.
    left = [number for number, line in enumerate(text.splitlines(), 1)
            if line == "        if x.sum() > 0:"]
    assert len(left) == 2
    assert codes(root, "compile", "returns.py") == [(line, "GB0170") for line in left]
    assert codes(root, "export", "returns.py") == [(line, "FX401") for line in left]
    found = real_torch(tmp_path, root, original, "returns", REWRITTEN)
    for name in REWRITTEN:
        assert found[name] == {
            "eager_equal": True, "original_export": "GuardOnDataDependentSymNode",
            "fixed_export": "ok", "exported_equal": True,
            "original_compile": {"breaks": [[IF_LINES[name], "GB0170"]], "graphs": 2},
            "fixed_compile": {"breaks": [], "graphs": 1}, "fixed_fullgraph": "ok"}, name
