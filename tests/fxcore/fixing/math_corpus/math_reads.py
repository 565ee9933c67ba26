"""Numbers read with ``.item()`` that only feed ``math`` functions, several spellings."""

import math
import math as m
from math import tanh

import torch
from torch import nn


class ExpOfLogScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.log_scale = nn.Parameter(torch.tensor(0.3))

    def forward(self, x):
        scale = self.log_scale.item()
        return self.proj(x) * math.exp(scale)


class InverseSqrtOfVariance(nn.Module):
    def forward(self, x):
        return x / math.sqrt(x.var().item())


class DampedByMean(nn.Module):
    def forward(self, x):
        t = x.mean().item()
        return x * m.exp(-t) * m.cos(t)


class ShiftByTanh(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.tensor([0.7]))

    def forward(self, x):
        return x + tanh(self.bias.item())


INPUTS = {
    "ExpOfLogScale": {"x": "float32[4, 8]"},
    "InverseSqrtOfVariance": {"x": "float32[4, 8]"},
    "DampedByMean": {"x": "float32[4, 8]"},
    "ShiftByTanh": {"x": "float32[4, 8]"},
}
