"""Classes that torch.compile compiles again across calls, and classes that recompile only as
automatic dynamic shapes do (one recompile per new dimension or number, then dynamic). A line
ending with ``# FX505`` / ``# FX506`` / ``# FX507`` / ``# FX508`` / ``# FX510`` is where the
recompilation's cause is; a class without one gets no recompile diagnostic.
``EXAMPLE_INPUTS``: each class's inputs."""

import torch
import torch.nn.functional as F
from torch import nn


class StepCounter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1  # FX505
        return self.lin(x) * (0.5 if self.step % 2 else 1.0)


class CallCounterOnSelf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1  # FX505
        return x[:, : self.calls % 8 + 1]


class ToggledFlag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flip = False

    def forward(self, x):
        self.flip = not self.flip
        return x * 2 if self.flip else x - 2


class SwappedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 4)
        self.second = nn.Linear(8, 4)
        self.head = self.first

    def forward(self, x):
        self.head = self.second if self.head is self.first else self.first  # FX510
        return self.head(x)


class DepthSwap(nn.Module):
    """Variants of one type and different depth: dynamo guards which one by identity."""

    def __init__(self) -> None:
        super().__init__()
        self.short = nn.Sequential(nn.Linear(8, 4))
        self.long = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
        self.head = self.short

    def forward(self, x):
        self.head = self.long if self.head is self.short else self.short  # FX510
        return self.head(x)


class LoopOverSize(nn.Module):
    def forward(self, x):
        total = x[:, 0]
        for i in range(x.shape[1]):  # FX506
            total = total + x[:, i]
        return total


class TensorOfRange(nn.Module):
    def forward(self, x):
        positions = torch.tensor(list(range(x.shape[0])), dtype=x.dtype)  # FX506
        return x + positions[:, None]


class SizeAsKey(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scales: dict[int, float] = {}

    def forward(self, x):
        n = x.shape[0]
        if n not in self.scales:  # FX506
            self.scales[n] = 1.0 / n
        return x * self.scales[n]


class ListOfSize(nn.Module):
    def forward(self, x):
        sizes = list(x.shape)
        return x.reshape(sizes[0] * sizes[1]).view(*[s for s in sizes])


class BranchOnSize(nn.Module):
    def forward(self, x):
        if x.shape[0] > 3:
            return x.sum(0)
        return x.mean(0)


class ItemShape(nn.Module):
    def forward(self, x):
        n = int(x.abs().sum().item()) % 4 + 1
        return x[:, :n] * 2


class ScaledUp(nn.Module):
    def forward(self, x, scale: float = 2.0):
        return F.interpolate(x, scale_factor=scale)  # FX507


class RepeatedSteps(nn.Module):
    def forward(self, x, steps: int = 2):
        for _ in range(steps):  # FX507
            x = x * 2
        return x


class Tempered(nn.Module):
    def forward(self, x, temperature: float = 1.0):
        return torch.softmax(x / temperature, dim=-1)


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x))


class ChunkSum(nn.Module):
    def forward(self, x):
        out = x[0]  # FX508
        for chunk in x[1:]:
            out = out + chunk
        return out


class CatTuple(nn.Module):
    def forward(self, x):
        return torch.cat(x, dim=1)  # FX508


class LevelsDict(nn.Module):
    def forward(self, x):
        return sum(level.mean() for level in x.values())  # FX508


class FixedPair(nn.Module):
    def forward(self, x):
        first, second = x
        return first * second + x[-1]


#: Each class's ``x``: a shape, or a container of tensors as fx-lsp's ``inputs`` spell it.
EXAMPLE_INPUTS = {name: (2, 4, 8) if name == "ScaledUp" else (2, 8) for name in [
    "StepCounter", "CallCounterOnSelf", "ToggledFlag", "SwappedHead", "DepthSwap", "LoopOverSize",
    "TensorOfRange", "SizeAsKey", "ListOfSize", "BranchOnSize", "ItemShape", "ScaledUp",
    "RepeatedSteps", "Tempered", "Plain"]} | {
    "ChunkSum": "[float32[2, 8], float32[2, 8]]",
    "CatTuple": "(float32[2, 8], float32[2, 8])",
    "LevelsDict": "{'p3': float32[2, 8], 'p4': float32[2, 8]}",
    "FixedPair": "[float32[2, 8], float32[2, 8]]"}
