"""Attention on a GPU with torch's math fallback turned off, as people do to be sure a fused
kernel runs (each class takes float32[2, 8]; ``torch.backends.cuda`` makes it judged for a
GPU). What an H100 gives: tests/fxcore/worker/devices/test_gpu_attention.py's docstring."""

import torch
from torch import nn
from torch.nn import functional as F


class FusedOnly(nn.Module):
    """Head dim 4 in float32: the memory-efficient kernel runs it on an H100."""

    def __init__(self):
        super().__init__()
        torch.backends.cuda.enable_math_sdp(False)
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return out.reshape(batch, 8)


class FusedOnlyInDouble(nn.Module):
    """float64: no fused kernel takes it on an H100, and math is off."""

    def __init__(self):
        super().__init__()
        torch.backends.cuda.enable_math_sdp(False)
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).double().view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return out.float().reshape(batch, 8)
