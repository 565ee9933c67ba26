import torch
from torch import nn


class SignGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:
            return self.proj(x)
        return torch.zeros_like(x)
