"""An export or compile error that comes from fx-lsp's own choices is a hint: on an
instance built from the class's defaults, where the module raises the same error eagerly, the
verdict is "does not fit" (FX406 under export, FX504 under compile), not FX499/FX502; on the
same code with the arguments and inputs given in the configuration the error stays the
mode's own. ``Head`` runs on no input with any number of classes but its weight's 12, so
that the next instance fx-lsp guesses does not fit either. Both
are checked against real torch.export and torch.compile on the CPU with the same arguments."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import torch
from source_modules import load_module

from fx_lsp.cli.output_formats.json_report import message_of, parse_report

import cli_support

BLOCKS = '''
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=16, classes=0):
        super().__init__()
        self.proj = nn.Linear(dim, 12)
        self.classes = classes

    def forward(self, x):
        return self.proj(x).view(-1, self.classes) @ self.proj.weight


class GivenHead(Head):
    def forward(self, x):
        return self.proj(x).view(-1, self.classes)
'''
PYPROJECT = '''
[tool.fx-lsp.modules."blocks:GivenHead"]
kwargs = {dim = 16, classes = 0}
inputs = {x = "float32[2, 16]"}
'''
VIEW_LINE = 12


def _real_failure(path: Path, name: str, mode: str) -> int | None:
    """The line of ``blocks.py`` where real torch.export / torch.compile of ``name()`` (its
    defaults, which the configuration repeats) fails on a real CPU tensor, or None."""
    module = load_module(path, f"real_{name}_{mode}")
    model, x = getattr(module, name)(), torch.randn(2, 16)
    try:
        if mode == "export":
            torch.export.export(model, (x,), strict=False)
        else:
            torch._dynamo.reset()
            torch.compile(model, backend="eager")(x)
    except Exception as error:
        frames = [frame for frame in _frames(error) if frame.filename == str(path)]
        return frames[-1].lineno if frames else -1
    return None


def _frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of the user code ``error`` came from: dynamo keeps them as its
    ``real_stack`` (its traceback is its own), other errors in their traceback."""
    return [*traceback.extract_tb(error.__traceback__), *getattr(error, "real_stack", [])]


@pytest.mark.parametrize(("mode", "hint", "error"), [("export", "FX406", "FX499"),
                                                     ("compile", "FX504", "FX502")])
def test_an_error_of_fx_lsps_own_instance_is_a_hint(tmp_path: Path, mode: str, hint: str,
                                                    error: str) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", mode, "--output-format",
                                   "json", ".", cwd=tmp_path)
    report = parse_report(completed.stdout)
    verdicts = {module["class"]: module for module in report["modules"]}

    guessed = verdicts["Head"]
    assert guessed["status"] == "not-traced", guessed
    assert [(f["code"], f["line"]) for f in guessed["failures"]] == [(hint, VIEW_LINE)]
    message = message_of(report, guessed["failures"][0])
    assert "the instance Head() (built with its defaults)" in message
    assert guessed["inputs"]["from"] == "inferred"

    given = verdicts["GivenHead"]
    assert given["status"] == "failed", given
    assert [(f["code"], f["line"]) for f in given["failures"]] == [(error, 17)]

    # Real torch fails at the same lines: the hint is about the instance, not a false error.
    assert _real_failure(tmp_path / "blocks.py", "Head", mode) == VIEW_LINE
    assert _real_failure(tmp_path / "blocks.py", "GivenHead", mode) == 17
    assert report["summary"]["instance_does_not_fit"] == 1
