"""Tensors turned into Python data under torch.export."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "ScaleByItem": {"x": "float32[2, 8]"},
    "ScaleByFloat": {"x": "float32[2, 8]"},
    "FlipIfAny": {"x": "float32[2, 8]"},
    "ThroughNumpy": {"x": "float32[2, 8]"},
    "EverySite": {"x": "float32[2, 8]"},
    "ListedValues": {"x": "float32[2, 8]"},
}


class ScaleByItem(nn.Module):
    def forward(self, x):
        n = int(x.sum().item())
        return x * n


class ScaleByFloat(nn.Module):
    def forward(self, x):
        return x * float(x.max())


class FlipIfAny(nn.Module):
    def forward(self, x):
        return x if bool((x > 3).any()) else -x


class ThroughNumpy(nn.Module):
    def forward(self, x):
        values = x.detach().numpy()
        return torch.from_numpy(values) + 1


class EverySite(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        n = int(x.max().item())
        y = x * n
        while y.sum() > 0:
            y = y - 1
        if y.mean() < 3:
            y = y * 2
        return y


class ListedValues(nn.Module):
    def forward(self, x):
        return torch.tensor(x.tolist()) + x
