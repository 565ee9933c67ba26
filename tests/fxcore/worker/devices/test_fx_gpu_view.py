"""torch.fx in the GPU view. A class written for a GPU that makes CUDA
tensors from constants (``torch.arange(8, device="cuda")``, ``torch.ones(8,
device=self.device)`` with the device picked by ``torch.cuda.is_available()``) is traced as on
a GPU, where torch.fx runs such a call eagerly and keeps its tensor as a constant of the
graph; with no GPU the call's tensor is made on meta (``fxcore.worker.devices
.cuda_factories``). On the branch's base both were FX105 ("Could not run
'aten::empty.memory_format' with arguments from the 'CUDA' backend" on a CPU build, "Found no
NVIDIA driver" on a CUDA build); a class judged for the CPU is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import fx_lsp

#: A CPU build and PyPI's CUDA builds (no GPU) reach different CUDA kernels: every series.
pytestmark = pytest.mark.matrix

CLASSES = '''import torch
from torch import nn


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) + torch.arange(8, device="cuda")


class Picked(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x.to(self.device)) * torch.ones(8, device=self.device)
'''


def test_cuda_constants_are_traced_as_on_a_gpu(tmp_path: Path) -> None:
    (tmp_path / "gpu.py").write_text(CLASSES)
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", "gpu.py",
                       cwd=tmp_path)
    modules = {m["class"]: m for m in json.loads(completed.stdout)["modules"]}
    assert {name: m["status"] for name, m in modules.items()} == {
        "Positions": "traceable", "Picked": "traceable"}, modules


def test_a_class_judged_for_the_cpu_still_meets_torch_s_cuda(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\ndevice = "cpu"\n')
    (tmp_path / "gpu.py").write_text(CLASSES)
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", "gpu.py",
                       cwd=tmp_path)
    positions = next(m for m in json.loads(completed.stdout)["modules"]
                     if m["class"] == "Positions")
    assert positions["status"] != "traceable", positions
