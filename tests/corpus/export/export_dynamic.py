"""Classes exported with dynamic dimensions (``DYNAMIC_SHAPES``, spelled as the
``dynamic`` option of ``[tool.fx-lsp.modules]``): code that keeps them dynamic, code that
specialises one to a constant, code that allows only a narrower range. Each exports whole
with static shapes."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "KeepsBatch": {"x": "float32[4, 8]"},
    "SpecialisesBatch": {"x": "float32[4, 8]"},
    "NarrowsBatch": {"x": "float32[4, 8]"},
    "SpecialisesInHelper": {"x": "float32[4, 8]", "y": "float32[4, 8]"},
}

DYNAMIC_SHAPES = {
    "KeepsBatch": {"x": {"0": {"name": "batch", "min": 2, "max": 64}}},
    "SpecialisesBatch": {"x": {"0": "batch"}},
    "NarrowsBatch": {"x": {"0": {"name": "batch", "min": 2, "max": 64}}},
    "SpecialisesInHelper": {"x": {"0": "batch"}, "y": {"0": "batch"}},
}


class KeepsBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x).reshape(x.shape[0], 2, 2)


class SpecialisesBatch(nn.Module):
    def forward(self, x):
        if x.shape[0] == 4:  # FX403
            return x + 1
        return x * 2


class NarrowsBatch(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] <= 16)  # FX403
        return x.relu()


def pair_up(a, b):
    return a.view(2, 2, -1) + b.view(2, 2, -1)  # FX403


class SpecialisesInHelper(nn.Module):
    def forward(self, x, y):
        return pair_up(x, y)
