"""Graph breaks whose only fix is a config option torch's hint names: a number read from a
tensor into Python, or an operator whose output shape depends on the data."""

import torch
from torch import nn


class ClampByItem(nn.Module):
    def forward(self, x):
        threshold = x.mean().item()
        return torch.clamp(x, min=threshold)


class FullOfMaxItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        peak = self._peak(x)
        return self.proj(x) + torch.full((8,), peak)

    def _peak(self, x):
        return x.abs().max().item()


class SplitByToList(nn.Module):
    def forward(self, x, lengths):
        first = lengths[0] + 1
        sizes = torch.stack([first, x.shape[0] - first])
        parts = torch.split(x, sizes.tolist())
        return torch.stack([part.sum(0) for part in parts])


class NonzeroCount(nn.Module):
    def forward(self, x):
        found = torch.nonzero(x > 0)
        return found.float().sum() + x.sum()


class UniqueSum(nn.Module):
    # the distinct rounded values' sum
    def forward(self, x):
        return torch.unique(torch.round(x)).sum() * x


INPUTS = {
    "ClampByItem": {"x": "float32[4, 8]"},
    "FullOfMaxItem": {"x": "float32[4, 8]"},
    "SplitByToList": {"x": "float32[10, 8]", "lengths": "int64[2]"},
    "NonzeroCount": {"x": "float32[4, 8]"},
    "UniqueSum": {"x": "float32[4, 8]"},
}
