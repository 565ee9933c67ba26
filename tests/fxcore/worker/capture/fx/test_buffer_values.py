"""A branch on a buffer's value takes the way plain ``torch.fx.symbolic_trace`` takes on the
CPU: fx-lsp builds the instance on meta, where a buffer holds no data, and a stand-in's "true"
for ``if not self.initialized:`` skipped the branch the CPU takes (a flow layer that fills its
spatial dims from ``torch.tensor(input.shape[2:4])`` on its first call was called traceable;
plain torch.fx on the CPU fails there). Each spelling below is checked against plain
torch.fx on an instance built on the CPU, in the test."""

from __future__ import annotations

import pytest
from plain_tracing import plain_failure_frame, plain_trace

from fxcore.host.engine import Engine

from engine_support import Workspace

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

#: Classes that branch on the data of a buffer their constructor made; the failing branch
#: builds a tensor from a traced shape, which plain torch.fx refuses.
CORPUS = '''
import torch
from torch import nn


class NotInitialized(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.register_buffer("initialized", torch.tensor(0))
        self.register_buffer("spatial_dims", torch.tensor([1.0, 1.0]))

    def forward(self, x):
        if not self.initialized:
            self.spatial_dims.copy_(torch.tensor(x.shape[2:4]).to(self.spatial_dims))
        return self.conv(x)


class FlagSet(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("flag", torch.tensor(1))

    def forward(self, x):
        if self.flag:
            return x.relu()
        return torch.tensor(x.shape[2:4]).sum() + x


class ItemOfFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("initialized", torch.tensor(False))

    def forward(self, x):
        if not self.initialized.item():
            return torch.tensor(x.shape[2:4]).sum() + x
        return x.relu()


class FlagSetOnFirstCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("initialized", torch.zeros(()))

    def forward(self, x):
        if self.initialized == 0:
            self.initialized.fill_(1)
            return torch.tensor(x.shape[2:4]).sum() + x
        return x.relu()


class CountAbove(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        if self.count > 0:
            return x.relu()
        return torch.tensor(x.shape[2:4]).sum() + x


class CallsCounted(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.tensor(0))

    def forward(self, x):
        self.calls += 1
        if self.calls > 1:
            return torch.tensor(x.shape[2:4]).sum() + x
        return x.relu()


class StepsLeft(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.full((), 3, dtype=torch.long))

    def forward(self, x):
        for _ in range(int(self.steps)):
            x = x + 1
        if (self.steps < 2).all():
            return torch.tensor(x.shape[2:4]).sum() + x
        return x
'''


@pytest.mark.slow
def test_branches_on_buffers_agree_with_plain_fx_on_the_cpu(engine: Engine,
                                                            workspace: Workspace) -> None:
    path = workspace.write("flags.py", CORPUS)
    result = workspace.check(engine, "flags.py")
    statuses = {module.class_name: module for module in result.modules}
    assert len(statuses) == 7
    for name, module in statuses.items():
        error, code = plain_trace(path, workspace.root, name, module.arguments, device="cpu")
        if error is None:
            assert module.status == "traceable", (name, module.failures)
            assert module.generated_code.strip() == code.strip(), name
            continue
        assert module.status == "failed", (name, error)
        plain_here = plain_failure_frame(error, workspace.root)
        assert plain_here is not None
        assert module.failures[0].line == plain_here.line, (name, module.failures[0], error)
    # Both ways are taken: the corpus is not all of one kind.
    assert {module.status for module in statuses.values()} == {"traceable", "failed"}
