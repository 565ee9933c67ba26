import math

import torch
import torch.nn.functional as F
from torch import nn


class ImageNetNormalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        return self.conv((x - mean) / std)


class FullBias(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x) + torch.full((x.shape[-1],), 0.5)


class IdentityAffineGrid(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        theta = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).expand(x.shape[0], 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(self.conv(x), grid, align_corners=False)


class BufferDeviceArange(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        ramp = torch.arange(x.shape[-1], device=self.scale.device, dtype=self.scale.dtype)
        return self.fc(x) * self.scale + ramp


class StoredDeviceString(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.device = "cpu"
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        bias = torch.zeros(x.shape[-1], device=self.device)
        return self.fc(x) + bias


class WeightDeviceOnes(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        w = self.fc.weight
        return self.fc(x) + torch.ones(x.shape[-1], device=w.device, dtype=w.dtype)


class NewZerosPadding(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        pad = h.new_zeros(h.shape[0], 1, h.shape[2])
        return torch.cat([pad, h[:, :-1]], dim=1)


class ClassTokenZeros(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        cls = torch.zeros(h.shape[0], 1, h.shape[2])
        return torch.cat([cls, h], dim=1)


class GRUCellLoop(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(dim, hidden)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.hidden)
        for _ in range(3):
            h = self.cell(x, h)
        return h


class ZerosLikeAccumulator(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        total = torch.zeros_like(x)
        h = x
        for _ in range(2):
            h = self.fc(h)
            total = total + h
        return total


class TensorScaleFromShape(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qk = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        scale = torch.tensor(q.shape[-1], dtype=torch.float32).sqrt()
        return (q @ k.transpose(-2, -1)) / scale


class EyeIdentityInit(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.delta = nn.Linear(dim, dim * dim)
        self.dim = dim

    def forward(self, x):
        transform = self.delta(x).view(-1, self.dim, self.dim) + torch.eye(self.dim)
        return torch.bmm(transform, x.unsqueeze(-1)).squeeze(-1)


class CoordConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(5, 8, 3, padding=1)

    def forward(self, x):
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h).view(1, 1, h, 1).expand(b, 1, h, w)
        xs = torch.linspace(-1, 1, w).view(1, 1, 1, w).expand(b, 1, h, w)
        return self.conv(torch.cat([x, ys, xs], dim=1))


class TimestepConditionedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        args = t.float()[:, None] * freqs[None]
        return self.fc(x) + torch.cat([args.sin(), args.cos()], dim=-1)


class LengthsPaddingMask(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, lengths):
        max_len = x.shape[1]
        mask = torch.arange(max_len).expand(len(lengths), max_len) < lengths.unsqueeze(1)
        return self.proj(x).masked_fill(~mask.unsqueeze(-1), 0.0)
