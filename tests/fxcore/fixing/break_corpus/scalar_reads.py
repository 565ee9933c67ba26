"""Graph breaks at ``.item()`` and ``.tolist()``: a tensor's value read into Python."""

import torch
from torch import nn


class ScaleByItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        scale = x.abs().max()
        return self.proj(x) * scale.item()


class ShiftByMeanItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x):
        y = self.proj(x)
        return y - y.mean().item()


class DivideByNormItem(nn.Module):
    def forward(self, x):
        norm = torch.linalg.vector_norm(x)
        return x / norm.item()


class ItemAsPythonNumber(nn.Module):
    def forward(self, x):
        threshold = x.mean().item()
        return torch.clamp(x, min=threshold)


class SplitByToList(nn.Module):
    def forward(self, x, lengths):
        first = lengths[0] + 1
        sizes = torch.stack([first, x.shape[0] - first])
        parts = torch.split(x, sizes.tolist())
        return torch.stack([part.sum(0) for part in parts])



class ScaleByParameterItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        return torch.tanh(x) + self.scale.item()


INPUTS = {
    "ScaleByItem": {"x": "float32[4, 8]"},
    "ShiftByMeanItem": {"x": "float32[4, 8]"},
    "DivideByNormItem": {"x": "float32[4, 8]"},
    "ItemAsPythonNumber": {"x": "float32[4, 8]"},
    "SplitByToList": {"x": "float32[10, 8]", "lengths": "int64[2]"},
    "ScaleByParameterItem": {"x": "float32[4, 8]"},
}
