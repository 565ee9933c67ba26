"""Strict export (strict=True: dynamo traces forward) against non-strict export: classes
only strict export fails on (a C builtin dynamo cannot trace, a context manager it does not
support, a standard-library call it cannot follow, such a call in a helper, one before a
data-dependent branch both fail on), one whose strict failure is hidden behind a line both
fail on, and one both export."""

import functools
import json
import math
import threading
import time
import zlib

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "TimedForward": {"x": "float32[2, 8]"},
    "LockedScale": {"x": "float32[2, 8]"},
    "ParsedConfig": {"x": "float32[2, 8]"},
    "SaltInHelper": {"x": "float32[2, 8]"},
    "TimedGate": {"x": "float32[2, 8]"},
    "GateThenTimer": {"x": "float32[2, 8]"},
    "StrictFriendly": {"x": "float32[2, 8]"},
}


class TimedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.last_seconds = 0.0

    def forward(self, x):
        started = time.perf_counter()
        y = self.proj(x)
        self.last_seconds = time.perf_counter() - started
        return y


class LockedScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
        self.scale = nn.Parameter(torch.ones(8))

    def forward(self, x):
        with self.lock:
            return x * self.scale


class ParsedConfig(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = '{"scale": 2.0}'

    def forward(self, x):
        scale = json.loads(self.config)["scale"]
        return x * scale


def salted(x):
    return x + zlib.crc32(b"fx-lsp") % 7


class SaltInHelper(nn.Module):
    def forward(self, x):
        return salted(x) * 2


class TimedGate(nn.Module):
    def forward(self, x):
        self.started = time.perf_counter()
        if x.sum() > 0:
            x = x * 2
        return x


class GateThenTimer(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        self.stamp = time.perf_counter()
        return x


@functools.cache
def widths(count):
    return tuple(8 for _ in range(count))


class StrictFriendly(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(width, 8) for width in widths(2))

    def forward(self, x):
        parts = (block(x) for block in self.blocks)
        return sum(parts) / math.sqrt(len(widths(4)))
