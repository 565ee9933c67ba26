"""Classes whose batch dimension ``torch.export`` with ``Dim.AUTO`` specialises, or keeps
dynamic, without configuration (FX407 at the lines marked ``# FX407``). Each exports whole
with static shapes."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "BranchOnBatch": {"x": "float32[4, 8]"},
    "ViewToFixedShape": {"x": "float32[4, 8]"},
    "FixedInHelper": {"x": "float32[4, 8]"},
    "BroadcastWithConstant": {"x": "float32[4, 8]", "y": "float32[4, 8]"},
    "KeepsBatch": {"x": "float32[4, 8]"},
    "NarrowsBatch": {"x": "float32[4, 8]"},
    "RelatesInputs": {"x": "float32[4, 8]", "y": "float32[4, 8]"},
    "SingleSample": {"x": "float32[1, 8]"},
}


class BranchOnBatch(nn.Module):
    def forward(self, x):
        if x.shape[0] == 4:  # FX407
            return x + 1
        return x * 2


class ViewToFixedShape(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).view(4, 2, 4)  # FX407


def heads(x):
    return x.reshape(2, 2, 8)  # FX407


class FixedInHelper(nn.Module):
    def forward(self, x):
        return heads(x).sum(0)


class BroadcastWithConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.ones(4, 8))

    def forward(self, x, y):
        return x * self.table + y  # FX407


class KeepsBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x).reshape(x.shape[0], 2, 2)


class NarrowsBatch(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] <= 16)
        return x.relu()


class RelatesInputs(nn.Module):
    def forward(self, x, y):
        return torch.cat([x, y], dim=1) + x.repeat(1, 2)


class SingleSample(nn.Module):
    def forward(self, x):
        if x.shape[0] == 1:
            return x.squeeze(0)
        return x
