"""Graph breaks at calls made for their output only: ``print``, a logger, ``warnings.warn``."""

import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)

#: The example inputs of each class (fx-lsp's ``inputs`` option, the runner's tensors).
INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "Printed", "PrintedShape", "LoggedInfo", "LoggedByAttribute", "Warned")}


class Printed(nn.Module):
    def forward(self, x):
        y = x.relu()
        print("relu done")
        return y * 2


class PrintedShape(nn.Module):
    def forward(self, x):
        print(f"input {tuple(x.shape)}", flush=True)
        return x.tanh()


class LoggedInfo(nn.Module):
    def forward(self, x):
        logger.info("scaling %s", x.shape)
        return x * 3


class LoggedByAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.log = logging.getLogger("corpus")

    def forward(self, x):
        h = x.sigmoid()
        self.log.warning("gated")
        return h + x


class Warned(nn.Module):
    def forward(self, x):
        warnings.warn("deprecated path", stacklevel=2)
        return torch.exp(-x)
