"""Graph breaks at C-extension calls on values that depend on shapes only (a cache key, a
salt), several spellings."""

import binascii
import hashlib
import zlib
from zlib import adler32

import torch
from torch import nn


class CrcOfShape(nn.Module):
    def forward(self, x):
        key = zlib.crc32(str(x.shape).encode())
        return x + key % 5


class DigestOfSizes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        salt = int(hashlib.md5(repr(tuple(x.size())).encode()).hexdigest(), 16) % 11
        return self.proj(x) * salt


class AdlerOfRank(nn.Module):
    def forward(self, x):
        return torch.tanh(x) + adler32(bytes([x.ndim, x.size(1)])) % 3


class CrcOfWidth(nn.Module):
    def forward(self, x):
        scale = binascii.crc32(b"width=%d" % x.shape[-1]) % 7 + 1
        y = x * scale
        return y - x.mean()


INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "CrcOfShape", "DigestOfSizes", "AdlerOfRank", "CrcOfWidth")}
