"""Operators without an ONNX translation in torch's exporter (FX601)."""

import torch
from torch import nn

EXAMPLE_INPUTS = {"Bessel": {"x": "float32[2, 4]"}, "TwoSpecials": {"x": "float32[2, 4]"}}


class Bessel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return torch.special.bessel_j0(y).relu()


class TwoSpecials(nn.Module):
    def forward(self, x):
        a = x.sigmoid()
        b = torch.special.i1e(a)
        return torch.special.bessel_j1(b) + a
