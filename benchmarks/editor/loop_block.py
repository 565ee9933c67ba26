"""A transformer block for ``mode_latency.py``: compile mode's loop of calls
(``recompile_loop``) runs on it, as it reads no tensor data (``examples/models/gated.py``
does, and has no loop). Each mode reports something, so that each server's "every mode's
diagnostics" arrives with the loop on and off: fx fails on ``range(length)`` (FX004), export
finds a submodule forward never uses (FX200), compile breaks the graph at a debugging
``print`` (GB0059) and, with the loop, finds that each new sequence length compiles again
(FX506: position ids made in Python)."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.positions = nn.Embedding(512, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.gate = nn.Linear(dim, dim)  # left over: forward never uses it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        print("block input", batch, length)  # a debugging print left in: a graph break
        # Position ids made in Python: each sequence length is a new constant.
        x = x + self.positions(torch.tensor(list(range(length))))
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q = q.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        k = k.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.norm2(x))
