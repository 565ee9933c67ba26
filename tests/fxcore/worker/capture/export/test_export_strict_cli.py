"""``export-strict = true`` through the CLI and forked workers: the export mode also exports
each class with ``strict=True`` and reports FX405 at the line only strict export fails on;
nothing of it without the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import fx_lsp

MODELS = """\
import time

import torch
from torch import nn


class Timed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        started = time.perf_counter()
        y = self.proj(x)
        self.seconds = time.perf_counter() - started
        return y


class Gated(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.proj(x))
"""

PYPROJECT = """\
[tool.fx-lsp]
modes = ["export"]
{strict}
[tool.fx-lsp.modules.Timed]
inputs = {{x = "float32[2, 8]"}}

[tool.fx-lsp.modules.Gated]
inputs = {{x = "float32[2, 8]"}}

[tool.fx-lsp.modules.Plain]
inputs = {{x = "float32[2, 8]"}}
"""


def line_of(snippet: str) -> int:
    return MODELS.splitlines().index(snippet) + 1


def checked(root: Path, strict: str) -> tuple[int, dict[str, Any]]:
    """``fx-lsp check --output-format json`` of a workspace whose ``[tool.fx-lsp]`` has
    ``strict`` (an ``export-strict`` line, or nothing)."""
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT.format(strict=strict), encoding="utf-8")
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", ".", cwd=root)
    assert completed.stderr == "", completed.stderr
    return completed.returncode, json.loads(completed.stdout)


def problems(report: dict[str, Any]) -> list[tuple[str, int, str]]:
    return sorted((d["code"], d["line"], d["mode"]) for d in report["diagnostics"])


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("strict")


def test_strict_export_reports_what_fails_only_there(workspaces: Path) -> None:
    returncode, report = checked(workspaces / "on", "export-strict = true\n")
    assert returncode == 1
    # The `if` fails under both exports: FX401 once, no FX405 beside it.
    assert problems(report) == [
        ("FX401", line_of("        if x.sum() > 0:"), "export"),
        ("FX405", line_of("        started = time.perf_counter()"), "export")]
    (fx405,) = [d for d in report["diagnostics"] if d["code"] == "FX405"]
    assert fx405["severity"] == "error" and "time.perf_counter" in fx405["message"]
    status = {m["class"]: m["status"] for m in report["modules"]}
    assert status == {"Timed": "failed", "Gated": "failed", "Plain": "traceable"}
    (gated,) = [m for m in report["modules"] if m["class"] == "Gated"]
    assert gated["capture_notes"] == [
        f"Strict export stops at line {line_of('        if x.sum() > 0:')}, where non-strict "
        f"export fails too: what fails only under strict export after it is found once that "
        f"line is fixed."]


@pytest.mark.parametrize("strict", ["", "export-strict = false\n"])
def test_without_the_key_strict_export_does_not_run(workspaces: Path, strict: str) -> None:
    returncode, report = checked(workspaces / f"off{len(strict)}", strict)
    assert returncode == 1
    assert problems(report) == [("FX401", line_of("        if x.sum() > 0:"), "export")]
    status = {m["class"]: m["status"] for m in report["modules"]}
    assert status == {"Timed": "traceable", "Gated": "failed", "Plain": "traceable"}
    assert all(m["capture_notes"] == [] for m in report["modules"])
