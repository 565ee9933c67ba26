"""Leaf-module advice (the message and the quick fix) names the innermost module the failure
is in whose forward a leaf makes opaque: the workspace's own class, or a library layer; never
a torch container, which torch.fx traces through only to run its children."""

from __future__ import annotations

import inspect
from pathlib import Path

from torch.nn.modules import container

from fxcore.fixing.fix_plan import plan
from fxcore.host.engine import Engine
from fxcore.model.results import Failure, Frame, ModuleResult
from fxcore.workspace.paths import source_text

from engine_support import Workspace

LAYERS = """
import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)

    def forward(self, x):
        if x.shape[-1] % 2 == 1:
            x = F.pad(x, (0, 1, 0, 1))
        return self.conv(x)


class Encoder(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.blocks = nn.Sequential(ConvBlock(channels), ConvBlock(channels))

    def forward(self, x):
        return self.blocks(x)
"""


def read(path: str) -> str | None:
    return source_text(path, {})


def test_a_workspace_block_inside_a_sequential_is_the_leaf_not_the_sequential(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("layers.py", LAYERS)
    modules = {m.class_name: m for m in workspace.check(engine, "layers.py").modules}
    encoder = modules["Encoder"]
    (failure,) = encoder.failures
    assert [frame.function for frame in failure.frames] == ["forward"] * 3
    assert "Sequential" not in failure.message and "leaf" not in failure.message
    assert failure.message == modules["ConvBlock"].failures[0].message
    titles = [fix.title for fix in plan(failure, encoder, read, lambda _: str(workspace.root))]
    assert titles == ["Treat ConvBlock as a leaf module (pyproject.toml)"]


def test_a_failure_in_a_torch_containers_forward_offers_no_container_leaf(
        tmp_path: Path) -> None:
    path = str(tmp_path / "layers.py")
    (tmp_path / "layers.py").write_text(LAYERS)
    lines, first = inspect.getsourcelines(container.Sequential.forward)
    loop = first + next(n for n, text in enumerate(lines) if "module(input)" in text)
    frames = [Frame(path, 23, 16, 23, 30, "forward"),
              Frame(container.__file__, loop, 21, loop, 34, "forward")]
    failure = Failure(path, 23, 16, 23, 30, code="FX199", kind="error", message="",
                      frames=frames)
    encoder = ModuleResult(path=path, class_name="Encoder", qualified_name="layers:Encoder",
                           line=18, column=7, end_line=18, end_column=14, status="failed")
    assert plan(failure, encoder, read, lambda _: str(tmp_path)) == []
