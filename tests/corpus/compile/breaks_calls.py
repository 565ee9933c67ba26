"""Graph breaks at calls dynamo cannot follow: C functions outside torch, builtins it does not
model, and a compile error that is not a break."""

import copy
import logging
import os
import time
import zlib

import torch
from torch import nn

log = logging.getLogger(__name__)


class CleanAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return weights @ v


class CleanNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(x).clamp(min=0)


class TimeCall(nn.Module):
    def forward(self, x):
        started = time.perf_counter()
        return x * started


class DeepCopy(nn.Module):
    def forward(self, x):
        y = copy.deepcopy(x)
        return y + 1


class Logging(nn.Module):
    def forward(self, x):
        log.warning("shape %s", x.shape)
        return x * 3


class Nonzero(nn.Module):
    def forward(self, x):
        indices = torch.nonzero(x > 0.5)
        return indices.float().sum() + x.sum()


class TryExcept(nn.Module):
    def forward(self, x):
        try:
            y = x.view(-1, 3)
        except RuntimeError:
            y = x
        return y + 1


class Formatting(nn.Module):
    def forward(self, x):
        label = f"{x}"
        return x * len(label)


class Checksum(nn.Module):
    def forward(self, x):
        salt = zlib.crc32(b"fx-lsp")
        return x + salt % 7


class ProcessId(nn.Module):
    def forward(self, x):
        return x * (os.getpid() % 3)


class ShapeMismatch(nn.Module):
    """An error eager code raises too: compiling reports the operation's own message."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(8, 16)
        self.narrow = nn.Linear(8, 4)

    def forward(self, x):
        return self.narrow(self.wide(x))
