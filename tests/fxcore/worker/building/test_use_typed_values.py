"""Constructor values typed by their use in ``__init__`` (``fxcore.worker.building.use_kinds``),
norm factories left at ``None``, configuration objects and loss modules: small classes written
for each, checked by the real CLI in fx mode, and every verdict compared with plain
``torch.fx.symbolic_trace`` on the instance rebuilt from the report's arguments
(``benchmarks/fidelity/plain_fx_check.py``)."""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path

import pytest

from fxcore.worker.building.check_solver import solutions
from fxcore.worker.building.init_checks import init_checks

from cli_support import fx_lsp
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

BLOCKS = '''
"""Blocks whose constructor values are typed by their use."""
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import nn

MODES = ("sum", "mean")
UNITS = "steps"


class Horizon(nn.Module):
    """A forecasting head.

    Args:
        horizon: how far ahead, counted in 'steps'.
    """

    def __init__(self, width: int, horizon):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(width, 1) for _ in range(horizon))
        self.out = nn.Linear(width, horizon * 2)

    def forward(self, x):
        return self.out(x) + torch.cat([head(x) for head in self.heads], -1).sum()


class Pooled(nn.Module):
    def __init__(self, dim: int, mode: str):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode = mode
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.proj(x)
        return y.sum(1) if self.mode == "sum" else y.mean(1)


class Patches(nn.Module):
    def __init__(self, size):
        super().__init__()
        if isinstance(size, (tuple, list)):
            self.h, self.w = size
        else:
            raise TypeError("size must be a pair")
        self.conv = nn.Conv2d(3, 8, (self.h, self.w), stride=(self.h, self.w))

    def forward(self, x):
        return self.conv(x).flatten(2)


class UpBlock(nn.Module):
    def __init__(self, in_channels, prev_output_channel, out_channels, groups=32):
        super().__init__()
        self.norm = nn.GroupNorm(groups, prev_output_channel + in_channels)
        self.conv = nn.Conv2d(prev_output_channel + in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(self.norm(x))


class Bottleneck(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None, **_):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.conv2 = nn.Conv2d(planes, inplanes, 3, stride, 1, bias=False)
        self.bn2 = norm_layer(inplanes)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


@dataclass
class LayerCfg:
    hidden: int = 32
    act: type = nn.GELU


class Configured(nn.Module):
    def __init__(self, dim: int, cfg: Optional[LayerCfg] = None):
        super().__init__()
        assert cfg is not None
        self.fc = nn.Linear(dim, cfg.hidden)
        self.act = cfg.act()

    def forward(self, x):
        return self.act(self.fc(x))


class WithLoss(nn.Module):
    def __init__(self, dim: int, loss: nn.MSELoss):
        super().__init__()
        self.proj = nn.Linear(dim, 1)
        self.loss = loss

    def forward(self, x):
        y = self.proj(x)
        return self.loss(y, y.detach() * 0.5)


class Critic(nn.Module):
    def __init__(self, dim: int, criterion):
        super().__init__()
        self.proj = nn.Linear(dim, 1)
        self.criterion = criterion

    def forward(self, x):
        y = self.proj(x)
        return self.criterion(y, y.detach() * 0.5)
'''

#: What each class's arguments must be: of the kind its use asks for.
EXPECTED = {
    # Used in range() and arithmetic: a number, not the docstring's quoted 'steps'.
    "Horizon": lambda a: type(a["horizon"]) is int,
    # Checked against the module-level MODES: one of them, never None.
    "Pooled": lambda a: a["mode"] in ("sum", "mean"),
    # isinstance(size, (tuple, list)): a tuple.
    "Patches": lambda a: isinstance(a["size"], tuple),
    # nn.GroupNorm(32, prev + in): their sum divides by 32.
    "UpBlock": lambda a: (a["prev_output_channel"] + a["in_channels"]) % 32 == 0,
    # norm_layer=None called as norm_layer(planes): a norm class.
    "Bottleneck": lambda a: "BatchNorm2d" in a["norm_layer"],
    # cfg: Optional[LayerCfg] = None, then assert cfg is not None: the config's defaults.
    "Configured": lambda a: "LayerCfg(" in a["cfg"],
    "WithLoss": lambda a: "MSELoss()" in a["loss"],
    "Critic": lambda a: "MSELoss()" in a["criterion"],
}


def _only(classes: tuple[str, ...]) -> str:
    """The workspace's source with only the modules ``classes`` (and everything else)."""
    source = textwrap.dedent(BLOCKS)
    lines = source.splitlines(keepends=True)
    left_out = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)
                and node.name not in classes and "nn.Module" in map(ast.unparse, node.bases)]
    for node in reversed(left_out):
        del lines[node.lineno - 1:node.end_lineno]
    return "".join(lines)


def _values(kwargs: dict[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name, source in kwargs.items():
        try:
            values[name] = ast.literal_eval(source)
        except ValueError:
            values[name] = source
    return values


@pytest.mark.parametrize("classes", [
    ("Horizon", "Pooled", "Patches", "UpBlock"),  # typed by their use
    ("Bottleneck", "Configured", "WithLoss", "Critic"),  # factories, configs, losses
], ids=["use", "objects"])
@pytest.mark.slow
def test_each_class_gets_arguments_of_the_kind_its_use_asks_and_plain_fx_agrees(
        tmp_path: Path, classes: tuple[str, ...]) -> None:
    (tmp_path / "blocks.py").write_text(_only(classes))
    completed = fx_lsp("check", "--no-cache", "--mode", "fx", "--output-format", "json",
                       "blocks.py", cwd=tmp_path)
    modules = [module for module in json.loads(completed.stdout)["modules"]
               if module["mode"] == "fx"]
    by_class = {module["class"]: module for module in modules}
    for name in classes:
        check = EXPECTED[name]
        module = by_class[name]
        assert module["status"] == "traceable", (name, module["reason"])
        assert check(_values(module["arguments"]["kwargs"])), (name, module["arguments"])
    plain = plain_verdicts(str(tmp_path), modules)
    assert [disagreement(module, outcome, str(tmp_path))
            for module, outcome in zip(modules, plain, strict=True)] == [None] * len(modules)


def test_the_solver_sees_a_group_norm_s_divisibility(tmp_path: Path) -> None:
    (tmp_path / "up_blocks.py").write_text(textwrap.dedent(BLOCKS))
    sys.path.insert(0, str(tmp_path))
    try:
        from up_blocks import UpBlock
    finally:
        sys.path.remove(str(tmp_path))
    found = solutions(init_checks(UpBlock), {"in_channels": 3, "prev_output_channel": 2,
                                             "out_channels": 16}, {"groups": 32})
    assert found and all((f["in_channels"] + f["prev_output_channel"]) % 32 == 0
                         for f in found)
