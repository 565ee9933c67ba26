"""Classes torch.export captures whole: static shape logic, buffers, constants made in
forward, submodules."""

import math

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "Mlp": {"x": "float32[2, 16]"},
    "ConvBlock": {"x": "float32[2, 3, 16, 16]"},
    "SelfAttention": {"x": "float32[2, 6, 16]"},
    "PositionalEmbedding": {"tokens": "int64[2, 6]"},
    "ShapeBranch": {"x": "float32[2, 8]"},
    "ArgmaxSlice": {"x": "float32[2, 8]"},
}


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.register_buffer("mask", torch.tril(torch.ones(6, 6)).bool())

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~self.mask[: x.shape[1], : x.shape[1]], float("-inf"))
        return scores.softmax(-1) @ v


class PositionalEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(100, 16)
        self.positions = nn.Embedding(32, 16)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1])
        return self.tokens(tokens) + self.positions(positions)


class ShapeBranch(nn.Module):
    def forward(self, x):
        if x.shape[-1] > 4:
            return x[..., :4]
        return x


class ArgmaxSlice(nn.Module):
    def forward(self, x):
        return x[:, : x.shape[1] // 2].argmax(dim=-1)
