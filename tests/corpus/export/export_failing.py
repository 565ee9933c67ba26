"""Export failures that are not about data: shapes that do not fit, a user check that fails,
an operator without a fake kernel, and an error met after a guessed condition."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "WrongProjection": {"x": "float32[2, 8]"},
    "CheckedWidth": {"x": "float32[2, 8]"},
    "ThroughSparse": {"x": "float32[2, 8]"},
    "BrokenBranch": {"x": "float32[2, 8]"},
}


class WrongProjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    def forward(self, x):
        return self.proj(x)


class CheckedWidth(nn.Module):
    def forward(self, x):
        if x.shape[1] != 16:
            raise ValueError(f"expected 16 features, got {x.shape[1]}")
        return x


class ThroughSparse(nn.Module):
    def forward(self, x):
        return x.to_sparse().to_dense() + 1


class BrokenBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x @ torch.ones(4, 4)
        return x
