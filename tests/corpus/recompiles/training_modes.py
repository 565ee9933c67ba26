"""Classes whose forward reads ``training`` and recompiles across calls: compile mode judges
them in both ``nn.Module`` modes. A line ending with ``# FX505`` is where the recompilation's
cause is, in the modes the class's docstring names."""

import torch.nn.functional as F
from torch import nn


class CountedDropout(nn.Module):
    """Recompiles in both modes; ``training`` only picks dropout: the loop runs once."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1  # FX505
        if self.training:
            x = F.dropout(x, 0.1)
        return self.lin(x) * (0.5 if self.step % 2 else 1.0)


class TrainStepCounter(nn.Module):
    """Recompiles in train mode alone: the loop runs in both modes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        if self.training:
            self.step += 1  # FX505
        return self.lin(x) * (0.5 if self.step % 2 else 1.0)


class CountedWithModeSwitch(nn.Module):
    """Recompiles in both modes; ``training`` is read only by methods no call runs (a
    ``predict`` that switches to eval mode, a ``train`` override): compiled, and looped, once."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1  # FX505
        return self.lin(x) * (0.5 if self.step % 2 else 1.0)

    def predict(self, x):
        if self.training:
            self.eval()
        return self(x)

    def train(self, mode: bool = True):
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self
