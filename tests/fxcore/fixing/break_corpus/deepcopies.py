"""Graph breaks at ``copy.deepcopy`` of a tensor in ``forward``."""

import copy
from copy import deepcopy

import torch
from torch import nn

#: The example inputs of each class (fx-lsp's ``inputs`` option, the runner's tensors).
INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "CopiedInput", "CopiedActivation", "CopiedSum")}


class CopiedInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        kept = copy.deepcopy(x)
        return self.lin(x) + kept


class CopiedActivation(nn.Module):
    def forward(self, x):
        h = torch.tanh(x)
        snapshot = deepcopy(h)
        h.mul_(2)
        return h - snapshot


class CopiedSum(nn.Module):
    def forward(self, x):
        return copy.deepcopy(x + 1) * x
