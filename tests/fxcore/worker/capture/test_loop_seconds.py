"""The JSON report gives, beside each verdict's capture seconds (``trace_seconds``), the part of
them that compile mode's loop of calls took (``loop_seconds``): the benchmarks hold a class's
capture without the loop to its earlier time, and measure the loop apart. Real CLI, real
worker, on a small class that compile mode judges with its loop."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fxcore.worker.capture.compile import recompile_loop

from cli_support import fx_lsp

pytestmark = [pytest.mark.skipif(not recompile_loop.can_observe(),
                                 reason="this torch reports no guard failures to a hook")]

MODEL = """\
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).relu()
"""


def verdicts(root: Path, modes: str,
             env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Small's verdict in each of ``modes``, from the JSON report."""
    completed = fx_lsp("check", "--no-cache", "--mode", modes,
                       "--output-format", "json", "small.py", cwd=root, env=env)
    modules = json.loads(completed.stdout)["modules"]
    assert {module["class"] for module in modules} == {"Small"}, completed.stderr
    return {module["mode"]: module for module in modules}


def test_the_loop_of_calls_seconds_are_a_part_of_compiles_capture(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(MODEL, encoding="utf-8")
    # The switch that turns the loop off reaches the worker as a workspace passes variables.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp]\npass-env = ["FX_LSP_NO_RECOMPILE_LOOP"]\n'
        '[tool.fx-lsp.modules."small:Small"]\ninputs = {x = "float32[2, 8]"}\n',
        encoding="utf-8")
    looped = verdicts(tmp_path, "fx,export,compile")
    assert {mode: module["status"] for mode, module in looped.items()} == {
        "fx": "traceable", "export": "traceable", "compile": "traceable"}
    compiled = looped["compile"]
    assert 0 < compiled["loop_seconds"] <= compiled["trace_seconds"]
    # fx and export make one capture, no loop of calls
    assert looped["fx"]["loop_seconds"] == looped["export"]["loop_seconds"] == 0

    alone = verdicts(tmp_path, "compile", {**os.environ, "FX_LSP_NO_RECOMPILE_LOOP": "1"})
    assert alone["compile"]["status"] == "traceable"
    assert alone["compile"]["loop_seconds"] == 0 < alone["compile"]["trace_seconds"]
