"""Graph breaks at dynamic-shape operators: ``nonzero``, boolean-mask indexing, ``unique``."""

import torch
from torch import nn


class MaskedSum(nn.Module):
    def forward(self, x):
        return x[x > 0].sum()


class MaskedMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y[y > 0.1].mean()


class MaskedTorchSum(nn.Module):
    def forward(self, x):
        return torch.sum(x[x < 0.5])


class NonzeroRows(nn.Module):
    def forward(self, x):
        rows = torch.nonzero(x.sum(-1) > 0)
        return x[rows.squeeze(-1)] * 2


class UniqueCount(nn.Module):
    def forward(self, ids):
        return torch.unique(ids).float().sum()



class MaskedNonzeroMean(nn.Module):
    def forward(self, x):
        h = torch.relu(x)
        return h[h != 0].mean() * 2


INPUTS = {
    "MaskedSum": {"x": "float32[4, 8]"},
    "MaskedMean": {"x": "float32[4, 8]"},
    "MaskedTorchSum": {"x": "float32[4, 8]"},
    "NonzeroRows": {"x": "float32[6, 8]"},
    "UniqueCount": {"ids": "int64[12]"},
    "MaskedNonzeroMean": {"x": "float32[4, 8]"},
}
