"""Consecutive print and logging calls in a forward, several spellings: each breaks the graph,
each is kept out of compiled code, and consecutive ones under one guard."""

import logging
import sys

import torch
from torch import nn

logger = logging.getLogger(__name__)


class TwoPrints(nn.Module):
    def forward(self, x):
        y = x.relu()
        print("relu done")
        print("shape", tuple(y.shape))
        return y * 2


class PrintThenLog(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        print("projected", file=sys.stderr)
        # then the logger
        logger.info("hidden %s", h.shape)
        logger.debug("done")
        return h.tanh()


class LogsAroundWork(nn.Module):
    def forward(self, x):
        logger.warning("start")
        y = torch.sigmoid(x)
        logger.warning("end")

        print("returned")
        return y + x


INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "TwoPrints", "PrintThenLog", "LogsAroundWork")}
