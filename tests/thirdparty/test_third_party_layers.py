"""A failure inside a library's layer (einops ``Rearrange``) names the layer and the
leaf-module configuration that fixes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

from engine_support import Workspace

pytest.importorskip("einops")
pytestmark = pytest.mark.thirdparty

MODEL = """
from einops.layers.torch import Rearrange
from torch import nn


class Patches(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_tokens = Rearrange("b c h w -> b (h w) c")

    def forward(self, x):
        return self.to_tokens(x)
"""


def check(root: Path) -> dict:
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", str(root)],
        capture_output=True, text=True, timeout=300)
    return parse_report(completed.stdout)


def test_failure_inside_a_library_layer_names_it_and_the_leaf_fix(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("patches.py", MODEL)
    (module,) = check(tmp_path)["modules"]
    (failure,) = module["failures"]
    assert failure["path"].endswith("patches.py") and failure["line"] == 11
    assert "inside the third-party layer `einops.layers.torch:Rearrange`" in failure["message"]
    assert 'leaf-modules = ["einops.layers.torch:Rearrange"]' in failure["message"]

    with (tmp_path / "pyproject.toml").open("a") as pyproject:
        pyproject.write('[tool.fx-lsp]\nleaf-modules = ["einops.layers.torch:Rearrange"]\n')
    (module,) = check(tmp_path)["modules"]
    assert module["status"] == "traceable"
