"""Where the meta device and the CPU disagree on a class's inputs: an interpolation to an
empty size, which meta (and fake tensors) accept and the CPU refuses, is no input to give a
verdict on (``fxcore.worker.inputs.eager_runs.cpu_checks``), checked against real torch.export and
torch.compile on the CPU on real tensors of the inputs found; and a class that refuses meta
tensors on every input tried is reported so, not as having no example inputs, where fx-lsp cannot
see it ask (torch's own descriptor called past ``torch.Tensor``); where it can (``x.is_meta``),
the class is judged on fake CPU tensors instead and gets real torch's verdicts
(``fxcore.worker.devices.meta_branches``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from cli_support import fx_lsp

SHRINKING = '''import torch.nn.functional as F
from torch import nn


class Shrink(nn.Module):
    def __init__(self, channels: int = 3, factor: float = 0.01):
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 1)
        self.factor = factor

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=self.factor, mode="bilinear")
'''

META_GUARD = '''import torch
from torch import nn


class MetaGuard(nn.Module):
    def __init__(self, features: int = 6):
        super().__init__()
        self.proj = nn.Linear(features, 4)

    def forward(self, x):
        # torch's own descriptor, asked past torch.Tensor: a read fx-lsp does not see.
        if torch._C.TensorBase.is_meta.__get__(x):
            raise RuntimeError("meta tensors are not supported")
        return self.proj(x)


class AsksIsMeta(nn.Module):
    def __init__(self, features: int = 6):
        super().__init__()
        self.proj = nn.Linear(features, 4)

    def forward(self, x):
        if x.is_meta:
            raise RuntimeError("meta tensors are not supported")
        return self.proj(x)
'''


@pytest.mark.slow
def test_an_input_only_meta_accepts_is_not_given(tmp_path: Path) -> None:
    (tmp_path / "shrinking.py").write_text(SHRINKING)
    classes = checked_against_real_torch(tmp_path, ["shrinking.py"])
    tensors = classes["Shrink"]["export"]["inputs"]["tensors"]
    # 32 by 32 times 0.01 is empty, which the CPU's bilinear kernel refuses.
    assert tensors != {"x": "float32[2, 3, 32, 32]"}
    assert classes["Shrink"]["compile"]["inputs"]["tensors"] == tensors


def test_a_class_that_refuses_meta_tensors_is_reported_so(tmp_path: Path) -> None:
    (tmp_path / "guard.py").write_text(META_GUARD)
    completed = fx_lsp("check", "--no-cache", "--mode", "export,compile", "--output-format",
                       "json", "guard.py", cwd=tmp_path)
    modules = [module for module in json.loads(completed.stdout)["modules"]
               if module["class"] == "MetaGuard"]
    assert [module["status"] for module in modules] == ["not-traced", "not-traced"]
    for module in modules:
        assert "no example inputs" not in module["reason"]
        assert "the class refuses the meta tensors fx-lsp runs it on, on every input tried" \
            in module["reason"]
        assert "meta tensors are not supported at guard.py:13" in module["reason"]


@pytest.mark.slow
def test_a_class_that_asks_whether_it_is_on_meta_gets_real_torchs_verdicts(
        tmp_path: Path) -> None:
    (tmp_path / "guard.py").write_text(META_GUARD[:META_GUARD.index("class MetaGuard")]
                                       + META_GUARD[META_GUARD.index("class AsksIsMeta"):])
    classes = checked_against_real_torch(tmp_path, ["guard.py"])
    assert {mode: module["status"] for mode, module in classes["AsksIsMeta"].items()} \
        == {"export": "traceable", "compile": "traceable"}
