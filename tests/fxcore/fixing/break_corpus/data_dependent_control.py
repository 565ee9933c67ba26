"""Graph breaks at branches and loops on tensor data."""

import torch
from torch import nn


class ConditionalExpression(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y * 2 if y.sum() > 0 else y - 1


class ConditionalExpressionAssigned(nn.Module):
    def forward(self, x):
        scaled = x.relu() if (x.mean() > 0).item() else x.abs()
        return scaled + 1


class ConditionalReturn(nn.Module):
    def forward(self, x):
        if x.max() > 1:
            return x / torch.amax(x)
        return x


class BoundedLoopBreak(nn.Module):
    def forward(self, x):
        for _ in range(8):
            if (x.abs() < 1).all():
                break
            x = x * 0.5
        return x


class BoundedLoopNotBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        for _ in range(6):
            if not y.norm() > 1.0:
                break
            y = y * 0.7
            y = y - 0.01
        return y



class ConditionalExpressionAny(nn.Module):
    def forward(self, x):
        y = torch.tanh(x) if (x > 2).any() else torch.sigmoid(x)
        return y.sum(-1)


class BoundedLoopTwoNames(nn.Module):
    def forward(self, x):
        step = torch.ones_like(x)
        for _ in range(5):
            if (step.abs() < 0.1).all():
                break
            x = x - 0.3 * step
            step = step * 0.4
        return x + step


INPUTS = {
    "ConditionalExpression": {"x": "float32[4, 8]"},
    "ConditionalExpressionAssigned": {"x": "float32[4, 8]"},
    "ConditionalReturn": {"x": "float32[4, 8]"},
    "BoundedLoopBreak": {"x": "float32[4, 8]"},
    "BoundedLoopNotBreak": {"x": "float32[4, 8]"},
    "ConditionalExpressionAny": {"x": "float32[4, 8]"},
    "BoundedLoopTwoNames": {"x": "float32[4, 8]"},
}
