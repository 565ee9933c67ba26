"""Graph breaks at ``while`` loops on tensor data, several spellings (a loop over a layer of
the module too: ``torch.while_loop`` lifts what its functions read)."""

import torch
from torch import nn


class HalveUntilSmall(nn.Module):
    def forward(self, x):
        while x.abs().max() > 1:
            x = x / 2
        return x


class ShrinkProjected(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        while not (y.norm(dim=-1) < 0.5).all():
            y = y * 0.8
        return y + 1


class DecayWithStep(nn.Module):
    def forward(self, x):
        step = torch.ones_like(x)
        while (step > 0.05).any():
            delta = step * 0.3
            x = x - delta
            step = step * 0.5
        return x + step


class CountedHalving(nn.Module):
    def forward(self, x):
        scale = x.abs().sum()
        count = torch.zeros(())
        while scale >= 1.0:
            scale = scale * 0.5
            count = count + 1
        return x * scale, count


class ProjectUntilSmall(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.decay = 0.5

    def forward(self, x):
        h = x
        while h.norm() > 1:
            h = self.proj(h).tanh() * self.decay
        return h


INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "HalveUntilSmall", "ShrinkProjected", "DecayWithStep", "CountedHalving",
    "ProjectUntilSmall")}
