"""A class whose export fails only in train mode: a data-dependent condition behind
``self.training``. fx-lsp exports in eval mode (``module-mode = "auto"``), as deployment does;
real torch's answer in train mode comes too (``MODULE_MODES``)."""

import torch
from torch import nn

MODULE_MODES = ("train", "eval")
EXAMPLE_INPUTS = {
    "TrainOnlyGuard": {"x": "float32[2, 8]"},
}


class TrainOnlyGuard(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(self.linear(x))
        if self.training and x.sum() > 0:
            x = x * 2
        return torch.relu(x)
