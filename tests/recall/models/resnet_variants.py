"""Residual blocks with shape checks and a stem that inspects its input."""

import torch
from torch import nn


def same_pad(x, k):
    pad = max(k - x.shape[-1] % k, 0)
    return nn.functional.pad(x, (0, pad))


class Block(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        out = self.conv2(torch.relu(self.conv1(x)))
        if out.shape != x.shape:
            x = x[..., : out.shape[-1]]
        return torch.relu(out + x)


class ResNetVariant(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Block(), Block())
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        if x.dim() == 3:
            x = x.unsqueeze(0)
        x = same_pad(x, 4)
        x = self.blocks(self.stem(x))
        shape = list(x.shape)
        pooled = x.mean((2, 3))
        return self.fc(pooled), shape
