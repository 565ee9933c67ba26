"""Classes written for a GPU, as people write them (each takes float32[2, 8]): judged for
one (``device = "auto"``) on any machine. On an H100 (torch 2.11, CUDA tensors, inductor)
real torch exports every one and compiles them whole, except the nvtx ranges (GB0208 at
each), ``synchronize`` (GB0007 on 2.11; an in-graph op from 2.13), the branch on
``device_count`` (GB0208) and the ``sdpa_kernel`` context (GB0006 on 2.11)."""

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class MovesInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = x.cuda()
        return self.proj(x)


class ArangeOnCuda(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) + torch.arange(8, device="cuda")


class DeviceFromAvailability(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) * torch.ones(8, device=DEVICE)


class StoredDevice(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cuda")
        self.proj = nn.Linear(8, 8).to(self.device)

    def forward(self, x):
        return self.proj(x) + torch.zeros(8, device=self.device)


class Synchronized(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        torch.cuda.synchronize()
        return y


class NvtxRanges(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        torch.cuda.nvtx.range_push("proj")
        y = self.proj(x)
        torch.cuda.nvtx.range_pop()
        return y


class DeviceCountBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if torch.cuda.device_count() > 1:
            y = y * 2
        return y


class CapabilityBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if torch.cuda.get_device_capability()[0] >= 8:
            y = y + 1
        return y


class MathAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        batch = x.shape[0]
        q, k, v = self.qkv(x).view(batch, 1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        with sdpa_kernel(SDPBackend.MATH):
            out = nn.functional.scaled_dot_product_attention(q, k, v)
        return out.reshape(batch, 8)
