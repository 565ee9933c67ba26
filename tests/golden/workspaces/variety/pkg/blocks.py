import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        if x.sum() > 0:
            return self.lin(x)
        return x


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Scaled(8)

    def forward(self, x):
        return self.first(x) * 2


class Skipped(nn.Module):  # fx-lsp: skip
    def forward(self, x):
        return x


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("no weights here")

    def forward(self, x):
        return x


class Quiet(nn.Module):
    def forward(self, x):
        return x * len(x)  # noqa: FX002


class Loud(nn.Module):
    def forward(self, x):
        y = torch.relu(x)  # noqa: FX001
        return y.view(len(y), -1)
