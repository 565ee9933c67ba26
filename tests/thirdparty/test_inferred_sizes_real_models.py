"""Inferred inputs of real models that do not take fx-lsp's default 32x32:
torchvision's AlexNet needs at least 63 pixels, timm's LeViT exactly the 224 its
``pretrained_cfg`` declares. fx-lsp must find sizes they accept (no FX300), and plain torch on
the CPU must run them at those sizes."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.thirdparty

MODELS = '''
import timm
from torch import nn
from torchvision import models as tvm


class TvAlexNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = tvm.alexnet(weights=None, num_classes=10)

    def forward(self, x):
        return self.model(x)


class TimmLeViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = timm.create_model("levit_128s", pretrained=False, num_classes=10)

    def forward(self, x):
        return self.model(x)
'''

#: Builds each class on the CPU and runs it on random tensors of the inputs given on standard
#: input (``{"Class": {"x": "float32[...]"}}``); prints the output shapes.
REAL_RUN = '''
import json, sys
import torch
from fxcore.model.tensor_spec import parse_spec
import sized.models as models

shapes = {}
for name, inputs in json.load(sys.stdin).items():
    torch.manual_seed(0)
    model = getattr(models, name)().eval()
    arguments = {}
    for argument, text in inputs.items():
        spec = parse_spec(text)
        arguments[argument] = torch.randn(spec.shape, dtype=getattr(torch, spec.dtype))
    with torch.no_grad():
        shapes[name] = list(model(**arguments).shape)
json.dump(shapes, sys.stdout)
'''


def test_real_models_get_inputs_they_accept(tmp_path: Path) -> None:
    missing = [name for name in ("torchvision", "timm")
               if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'sized'\nversion = '0'\n"
                                             "[tool.fx-lsp]\ntimeout = 120\n")
    package = tmp_path / "sized"
    package.mkdir()
    # The workspace's shim makes torchvision importable next to the CPU torch.
    shutil.copy(HERE / "workspace" / "tpmodels" / "_shim.py", package / "_shim.py")
    (package / "__init__.py").write_text("from . import _shim  # noqa: F401\n")
    (package / "models.py").write_text(MODELS.lstrip("\n"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    checked = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json",
         str(package / "models.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=900)
    assert checked.returncode in (0, 1), checked.stderr[-3000:]
    modules = {m["class"]: m for m in json.loads(checked.stdout)["modules"]}
    assert set(modules) == {"TvAlexNet", "TimmLeViT"}
    for name, module in modules.items():
        assert module["status"] == "traceable", (name, module["failures"])
        assert module["shape_errors"] == [], (name, module["shape_errors"])
        assert module["inputs"]["from"] == "inferred", name
    assert modules["TvAlexNet"]["inputs"]["tensors"] == {"x": "float32[2, 3, 64, 64]"}
    assert modules["TvAlexNet"]["inputs"]["note"].startswith("64x64: the first size tried")
    assert modules["TimmLeViT"]["inputs"]["tensors"] == {"x": "float32[2, 3, 224, 224]"}
    assert "declared by the model (`model.pretrained_cfg['input_size'] = (3, 224, 224)`)" \
        in modules["TimmLeViT"]["inputs"]["note"]

    ran = subprocess.run(
        [sys.executable, "-c", REAL_RUN], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=900,
        input=json.dumps({name: m["inputs"]["tensors"] for name, m in modules.items()}))
    assert ran.returncode == 0, ran.stderr[-3000:]
    real = json.loads(ran.stdout)
    for name, module in modules.items():
        assert module["output_shape"] == f"float32{real[name]}", name
