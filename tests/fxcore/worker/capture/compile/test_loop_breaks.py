"""A graph break at the test of a ``while`` loop says what real data can make of it: real
torch.compile nests one resume frame per iteration, so a loop that runs about 1000 times ends
in RecursionError where it runs eagerly (a fixed-point iteration that never converges, as a
residual flow's inverse on an identity net). fx-lsp runs such a loop at most once on tensors
without data; its verdict stays the breaks, and the message says why real torch may differ.
Both halves are checked here: the note, and real torch's RecursionError on hand-written
inputs."""

from __future__ import annotations

import sys

import pytest
import torch

from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig

from engine_support import Workspace

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

SOURCE = '''
import torch
from torch import nn


class FixedPoint(nn.Module):
    def __init__(self, steps: int = 1200):
        super().__init__()
        self.steps = steps

    def forward(self, y):
        x, previous = y * 0, y
        i = 0
        while not torch.all((x - previous) ** 2 < 1e-10):
            x, previous = y - x, x
            i += 1
            if i > self.steps:
                break
        return x


class Branch(nn.Module):
    def forward(self, y):
        if y.sum() > 0:
            return y * 2
        return y
'''


@pytest.mark.slow
def test_a_break_at_a_while_test_says_how_real_data_may_end_it(engine: Engine,
                                                               workspace: Workspace) -> None:
    path = workspace.write("loops.py", SOURCE)
    result = workspace.check(engine, "loops.py", EngineConfig(modes=("compile",)))
    failures = {module.class_name: module.failures for module in result.modules}
    at_test = [failure for failure in failures["FixedPoint"] if failure.line == 13]
    assert at_test and "test of a `while` loop" in at_test[0].message, failures["FixedPoint"]
    assert "RecursionError" in at_test[0].message
    assert failures["Branch"] and not any("`while`" in failure.message
                                          for failure in failures["Branch"])
    # Real torch: eagerly the loop runs to its cap, compiled it nests past the recursion limit.
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    model = namespace["FixedPoint"]()  # type: ignore[operator]
    y = torch.ones(2, 8)
    model(y)
    torch._dynamo.reset()
    assert sys.getrecursionlimit() <= 1200
    with pytest.raises(RecursionError):
        torch.compile(model, backend="eager")(y)
    torch._dynamo.reset()
