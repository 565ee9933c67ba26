"""Python numbers read from tensors (``.item()``, ``.tolist()``, ``int()``, ``float()``), which
break the graph, and what the code then says of them: a ``torch._check``, an ``assert``, an
``if``. Dynamo compiles the rest with the number as a constant. Real data passes the checks; on
meta, fx-lsp gives each number a value its checks accept (with the stand-in one, a check failed:
an "Observed exception" break and a compile error that real torch has not)."""

import torch
from torch import nn


class CheckedItem(nn.Module):
    def forward(self, x):
        n = x.sum().item()
        torch._check(n > 2)
        if n > 2:
            return x * 2
        return x


class AssertedItem(nn.Module):
    def forward(self, x):
        n = x.sum().item()
        assert n > 2
        return x * n


class CheckedCount(nn.Module):
    """An integer, checked, then a slice's end."""

    def forward(self, x):
        k = (x >= 0).sum().item()
        torch._check(k >= 8)
        return x.flatten()[:k] * 2


class BranchOnItem(nn.Module):
    """An if on the number takes the branch real data takes here: fx-lsp, which cannot know
    the data, assumes a condition on it true the first time it is met."""

    def forward(self, x):
        n = x.sum().item()
        if n > 2:
            print("many")
        return x * 2


class CheckedAgainstBranch(nn.Module):
    """The check decides the if after it: not taken."""

    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 4)
        if n < 4:
            print("few")
        return x + n


class CheckedPair(nn.Module):
    """Two numbers from .tolist(), checked together."""

    def forward(self, x):
        low, high = x.sum(1).tolist()
        torch._check(low + high > 4)
        return x * (low + high)


class HalveItem(nn.Module):
    """A loop on the number alone: plain Python, which ends on any value."""

    def forward(self, x):
        n = x.sum().item()
        while n > 1:
            n = n / 2
        return x * n


class IntOfSum(nn.Module):
    """``int()`` of a tensor: on meta, stood in as ``.item()`` is."""

    def forward(self, x):
        return x * int(x.sum() > 0)


class FloatOfMax(nn.Module):
    def forward(self, x):
        return x / float(x.abs().max())


class LookupTable(nn.Module):
    """A CPU tensor the code makes: meta inputs would meet it, so fx-lsp compiles the class on
    fake CPU tensors, as real torch runs it on the CPU."""

    def forward(self, x):
        return torch.searchsorted(torch.arange(4.0), x)
