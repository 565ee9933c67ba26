"""Graph breaks from Python that dynamo cannot trace: printing, data-dependent branches,
scalars out of tensors, generators, try/except and the like."""

import torch
from torch import nn


class Clean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2


class CleanLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class Printing(nn.Module):
    def forward(self, x):
        y = x * 2
        print("y computed")
        return y + 1


class Branch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


class Item(nn.Module):
    def forward(self, x):
        scale = x.max().item()
        return x / scale


class ToList(nn.Module):
    def forward(self, x):
        values = x[0].tolist()
        return x + len(values)


class ToNumpy(nn.Module):
    def forward(self, x):
        array = x.numpy()
        return x + float(array.shape[0])


class Generator(nn.Module):
    def forward(self, x):
        parts = (x * k for k in range(3))
        total = sum(parts)
        return total


class LoopBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            if x.mean() > 0:
                x = x * 0.5
        return x


def noisy_helper(x):
    print("inside helper")
    return x + 1


class HelperBreak(nn.Module):
    def forward(self, x):
        y = noisy_helper(x)
        return noisy_helper(y) * 2


class TwoBreaks(nn.Module):
    def forward(self, x):
        print("start")
        x = x + 1
        n = x.sum().item()
        return x * n


class HalveUntilSmall(nn.Module):
    """A loop on tensor data: real data ends it; on meta it must end too, not time out."""

    def forward(self, x):
        x = x * 4  # real data (torch.rand) enters the loop
        while x.abs().max() > 1.0:
            x = x / 2
        return x


class RepeatItemTimes(nn.Module):
    """A loop bound taken from .item()."""

    def forward(self, x):
        for _ in range(int(x.sum().item())):
            x = x * 0.9
        return x


class LayerDrop(nn.Module):
    """A builtin over a tensor (CaiT's and XCiT's layer drop): dynamo runs its polyfill of
    ``all`` and breaks inside it, at the user's line."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x):
        keep = x.mean(0) > -1
        if all(keep):
            for layer in self.layers:
                x = layer(x)
        return x
