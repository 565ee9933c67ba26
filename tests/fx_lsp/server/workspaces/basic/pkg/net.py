import torch
from torch import nn

from .layers import Block


def helper(x):
    if x.mean() > 0:
        return x * 2
    return x


class Traceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        return torch.relu(y)


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)


class UsesFlag(nn.Module):
    def forward(self, x, flag: bool = False):
        if flag:
            return x + 1
        return x


class UsesHelper(nn.Module):
    def forward(self, x):
        return helper(x) + 1


class UsesBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) + 1


class NeedsArgs(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class Emoji(nn.Module):
    def forward(self, x):
        return x * ("😀 é", len(x))[1]
