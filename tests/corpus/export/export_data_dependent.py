"""Control flow on tensor data: each condition is a data-dependent guard under torch.export."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "PositiveShift": {"x": "float32[2, 8]"},
    "TwoConditions": {"x": "float32[2, 8]"},
    "HalveWhileLarge": {"x": "float32[2, 8]"},
    "GateInHelper": {"x": "float32[2, 8]"},
    "GatedChild": {"x": "float32[2, 8]"},
    "ManyDetections": {"x": "float32[2, 8]"},
    "NestedConditions": {"x": "float32[2, 8]"},
    "TwoGuardsOnALine": {"x": "float32[2, 8]"},
    "LoopTimesFromItem": {"x": "float32[2, 8]"},
}


class PositiveShift(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class TwoConditions(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = self.proj(x)
        if x.mean() > 0:
            x = x.relu()
        if x.max() > 10:
            x = x / 10
        return x


class HalveWhileLarge(nn.Module):
    def forward(self, x):
        while x.abs().max() > 1:
            x = x / 2
        return x


def gate(x):
    if x.norm() > 1:
        return x / x.norm()
    return x


class GateInHelper(nn.Module):
    def forward(self, x):
        return gate(x) * 2


class Gate(nn.Module):
    def forward(self, x):
        if x.min() < 0:
            return x.clamp(min=0)
        return x


class GatedChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        return self.out(self.gate(x))


class ManyDetections(nn.Module):
    def forward(self, x):
        found = torch.nonzero(x > 0.5)
        if found.shape[0] > 3:
            return x * 2
        return x


class NestedConditions(nn.Module):
    def forward(self, x):
        if x.abs().sum() > 0:
            x = x * 2
            if x.max() > 100:
                return x / 100
        return x


class TwoGuardsOnALine(nn.Module):
    def forward(self, x):
        if x.sum() > 0 and x.max() > 2:
            return x + 1
        return x


class LoopTimesFromItem(nn.Module):
    """A loop bound taken from ``.item()``: export's data-dependent error at the loop's line,
    as real export reports it, not a time-out or an internal error."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = self.proj(x)
        for _ in range(int(x.abs().sum().item()) % 3):
            x = x * 2
        return x
