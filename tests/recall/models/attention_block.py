"""A self-attention block with several independent torch.fx problems."""

import torch.nn.functional as F
from torch import nn


class AttentionBlock(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        b = len(x)
        scale = float(x.shape[-1]) ** -0.5
        qkv = self.qkv(self.norm(x))
        q, k, v = qkv.chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * 0.125
        if attn.max() > 50:
            attn = attn - attn.max()
        attn = F.softmax(attn, dim=-1)
        out = self.proj(attn @ v)
        return out * scale + x[:b]
