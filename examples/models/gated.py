"""Data-dependent control flow: the branch depends on tensor values."""

import torch
from torch import nn


class GatedResidual(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        if y.abs().mean() > 1.0:
            y = y / y.abs().mean()
        return x + y
