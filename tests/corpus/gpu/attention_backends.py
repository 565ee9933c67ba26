"""Attention written for a GPU: ``sdpa_kernel`` choices of GPU-only backends, as people write
them (each takes float32[2, 8]; its queries, keys and values are [batch, 2 heads, 1 position,
4], made by one projection). Judged for a GPU (``device = "auto"``: the backends are a GPU's).
What an H100 gives, and why: tests/fxcore/worker/devices/test_gpu_attention.py's docstring."""

from torch import nn
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


class EfficientOrMath(nn.Module):
    """float32 with the memory-efficient kernel preferred: an H100 runs it."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
            out = F.scaled_dot_product_attention(q, k, v)
        return out.reshape(batch, 8)


class FlashInHalf(nn.Module):
    """Flash attention only, on half-precision inputs cast inside forward: an H100 runs it."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).half().view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v)
        return out.float().reshape(batch, 8)


class FlashInFloat32(nn.Module):
    """Flash attention only, on float32: no kernel on an H100 (flash takes 16-bit floats)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v)
        return out.reshape(batch, 8)
