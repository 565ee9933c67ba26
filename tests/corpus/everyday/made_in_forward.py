import math

import torch
from torch import nn


class PlusZeros(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) + torch.zeros(8)


class Noise(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) + 0.1 * torch.randn(x.shape)


class EyePlusWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(8, 8))

    def forward(self, x):
        return x @ (torch.eye(8) + self.weight)


class Grid(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) * torch.linspace(-1, 1, 8)


class StoredDevice(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cpu")
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) + torch.ones(8, device=self.device)


class CausalMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(mask, float("-inf"))
        return scores.softmax(-1) @ v


class TimeEmbedding(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.lin = nn.Linear(dim, dim)

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half) / half)
        args = t[:, None].float() * freqs[None]
        return self.lin(torch.cat([args.sin(), args.cos()], dim=-1))


class TensorConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * torch.tensor([0.5, 1.0, 2.0])


class CountedZeros(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        count = (self.lin(x) > 0).sum().item()
        return torch.zeros(count, 8)
