"""Everyday code whose values or sizes come from tensor data, written for any device (every
tensor it makes is on its input's device): judged for a GPU (``device = "cuda"``) it gets the
verdicts it gets judged for the CPU, on a CPU-only build of torch as on a CUDA build. Indexing,
``nonzero``, ``tolist`` and ``float(t)`` put a device guard on a fake CUDA tensor, which a
CPU-only build had none of; a size from ``nonzero`` or a mask was unknown on fake tensors."""

import torch
from torch import nn


class SliceAndIndex(nn.Module):
    def forward(self, x):
        return x[:, : x.shape[1] // 2].argmax(dim=-1) + x[0, 0]


class MaskedFill(nn.Module):
    def forward(self, x):
        y = x.clone()
        y[y < 0] = 0.0
        return y


class BooleanMaskSelect(nn.Module):
    def forward(self, x):
        return x[x > 0].sum()


class NonzeroRows(nn.Module):
    def forward(self, x):
        rows = torch.nonzero(x.sum(-1) > 0).squeeze(-1)
        return x[rows]


class NonzeroCountBranch(nn.Module):
    def forward(self, x):
        found = (x > 0.5).nonzero()
        if found.shape[0] > 3:
            return x * 2
        return x


class ToListSplit(nn.Module):
    def forward(self, x):
        sizes = torch.tensor([3, 5], device=x.device).tolist()
        a, b = x.split(sizes, dim=-1)
        return a.sum(-1) + b.sum(-1)


class FloatOfMax(nn.Module):
    def forward(self, x):
        return x / float(x.abs().max())


class LastTokenGather(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        last = (x.abs() > 0).sum(-1) - 1
        return h[torch.arange(h.shape[0], device=x.device), last]


class CausalDecoderBlock(nn.Module):
    """A Llama-style block: a causal mask made on the input's device, then attention."""

    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        mask = torch.full((n, n), float("-inf"), device=x.device).triu(1)
        attn = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5 + mask).softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, n, c))

