"""A class written with a tensor made without a device (``torch.arange(n)``, on the CPU) beside
its CUDA weights fails on a GPU, eagerly and under export and compile (an H200 with torch 2.11:
benchmarks/gpu/answers/, ``export_traceable.py:PositionalEmbedding``). Judged for a GPU, fx-lsp
says so on every series: the capture's error is the one the class raises eagerly on any input,
so each mode gives "does not fit" (FX406, FX504) naming the two devices. Before, compile read
dynamo's page address (meta-pytorch.github.io) as the meta device ("not checkable", FX503), and
on torch 2.13 the eager run's ``FakeTensorDeviceMismatchError`` did not count as the
``RuntimeError`` compile named (FX502)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

pytestmark = pytest.mark.matrix

MODEL = """\
import torch
from torch import nn


class PositionalEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(100, 16)
        self.positions = nn.Embedding(32, 16)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1])
        return self.tokens(tokens) + self.positions(positions)
"""


def test_a_cpu_tensor_beside_cuda_weights_does_not_fit_a_gpu(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\ndevice = "cuda"\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    codes = {d["mode"]: (d["code"], d["line"]) for d in report["diagnostics"]}
    assert codes == {"export": ("FX406", 13), "compile": ("FX504", 13)}
    for module in report["modules"]:
        assert "cuda:0" in module["reason"] and "cpu" in module["reason"], module["reason"]
