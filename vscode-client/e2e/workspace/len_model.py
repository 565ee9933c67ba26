import torch
from torch import nn


class LenScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        batch = len(x)
        return self.proj(x) / batch
