"""The device a class is judged for, per class (``[tool.fx-lsp.modules.
"pkg.mod:Class"] device``) and per file (``per-file-device``, globs as ``per-file-ignores``),
over the workspace's ``device``: a repository with GPU kernels in one package and CPU
preprocessing in another says so. Classes whose code names no device, so that only the
setting decides; the verdict's note says when a class was judged for a GPU. With ``auto``, the
detection of GPU code also reads GPU-only attention backends and cuDNN settings."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from fxcore.worker.devices.device_choice import judged_device
from fxcore.worker.pipeline.capturing import GPU_NOTE
from fxcore.workspace.config import parse_config

from cli_support import fx_lsp

BLOCK = '''import torch
from torch import nn


class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).relu()
'''

PYPROJECT = '''[tool.fx-lsp]
modes = ["export"]
device = "cpu"
per-file-device = {"kernels/*.py" = "cuda"}

[tool.fx-lsp.modules."prep.steps:OnGpu"]
device = "cuda"

[tool.fx-lsp.modules."kernels.fused:BackOnCpu"]
device = "cpu"
'''


def test_a_class_and_a_file_choose_their_device(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    for package, names in (("prep", ("Steps", "OnGpu")), ("kernels", ("Fused", "BackOnCpu"))):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        module = "steps" if package == "prep" else "fused"
        (tmp_path / package / f"{module}.py").write_text(
            "\n\n".join(BLOCK.format(name=name) for name in names))
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    modules = {m["class"]: m for m in json.loads(completed.stdout)["modules"]}
    judged_for_gpu = {name for name, module in modules.items()
                      if GPU_NOTE in module["capture_notes"]}
    assert judged_for_gpu == {"OnGpu", "Fused"}, modules
    assert all(module["status"] == "traceable" for module in modules.values()), modules


def test_the_per_class_and_per_file_devices_are_validated() -> None:
    config, problems = parse_config({
        "per-file-device": {"gpu/*": "cuda", "x.py": "tpu"},
        "modules": {"m:A": {"device": "cuda"}, "m:B": {"device": "gpu"}}})
    assert config.per_file_device == {"gpu/*": "cuda"}
    assert (config.modules["m:A"].device, config.modules["m:B"].device) == ("cuda", None)
    assert problems == [
        "[tool.fx-lsp]: per-file-device.x.py must be one of 'auto', 'cpu', 'cuda'; ignored",
        "[tool.fx-lsp] modules.'m:B': 'device' must be one of 'auto', 'cpu', 'cuda'; ignored"]


@pytest.mark.parametrize(("body", "device"), [
    ("with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):\n"
     "            return F.scaled_dot_product_attention(x, x, x)", "cuda"),
    ("with sdpa_kernel(SDPBackend.MATH):\n"
     "            return F.scaled_dot_product_attention(x, x, x)", "cpu"),
    ("torch.backends.cudnn.benchmark = True\n        return x", "cuda"),
    ("with torch.cuda.amp.autocast():\n            return x", "cuda"),
])
def test_gpu_attention_backends_and_cudnn_settings_are_gpu_code(body: str, device: str) -> None:
    source = f"class M:\n    def forward(self, x):\n        {body}\n"
    assert judged_device("auto", ast.parse(source), "M") == device
