"""A class written with a tensor made without a device (``torch.arange(n)``, on the CPU) beside
its CUDA weights fails on a GPU, eagerly and under export and compile (an H200 with torch 2.11:
benchmarks/gpu/answers/, ``export_traceable.py:PositionalEmbedding``). Judged for a GPU, fx-lsp
says so on every series: the capture's error is the one the class raises eagerly on any input,
so each mode gives "does not fit" (FX406, FX504) naming the two devices. Before, compile read
dynamo's page address (meta-pytorch.github.io) as the meta device ("not checkable", FX503), and
on torch 2.13 the eager run's ``FakeTensorDeviceMismatchError`` did not count as the
``RuntimeError`` compile named (FX502)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).resolve().parent / "corpus" / "export" / "export_traceable.py"


def test_a_cpu_tensor_beside_cuda_weights_does_not_fit_a_gpu(tmp_path: Path) -> None:
    shutil.copy(CORPUS, tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\ndevice = "cuda"\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    codes = {d["mode"]: (d["code"], d["line"]) for d in report["diagnostics"]
             if d["classes"] == ["PositionalEmbedding"]}
    # forward's last line: ``self.positions(positions)`` with the CPU positions.
    assert codes == {"export": ("FX406", 60), "compile": ("FX504", 60)}
    for module in report["modules"]:
        if module["class"] == "PositionalEmbedding":
            assert "cuda:0" in module["reason"] and "cpu" in module["reason"], module["reason"]
