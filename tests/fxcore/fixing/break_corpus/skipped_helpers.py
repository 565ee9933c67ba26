"""Graph breaks at calls dynamo skips inside a module-level helper: a C function of the
standard library (``zlib.crc32``) and frame inspection (``inspect.stack()``), both GB0007."""

import inspect
import zlib

from torch import nn

#: The example inputs of each class (fx-lsp's ``inputs`` option, the runner's tensors).
INPUTS = {name: {"x": "float32[4, 8]"} for name in ("SaltedHelper", "FrameNameHelper")}


def salted(x):
    salt = zlib.crc32(b"fx-lsp") % 7
    return x + salt


class SaltedHelper(nn.Module):
    def forward(self, x):
        return salted(x.relu()) * 2


def scaled_by_name(x):
    name = inspect.stack()[0].function
    return x * len(name)


class FrameNameHelper(nn.Module):
    def forward(self, x):
        return scaled_by_name(x) - 1
