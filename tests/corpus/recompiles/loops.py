"""Classes written as sequence and vision code is, which a training loop (batch and sequence
length or image size changing between calls, module state kept) recompiles beyond automatic
dynamic shapes. ``# recompiles`` marks the line of each recompilation's cause.
Real torch names the line of each guard it can (a list's length at the list's first use), and
the line where the value a size guard pins is used where it names none.
``EXAMPLE_INPUTS``: each class's inputs, shapes the usual guesses also find (a list or tuple
of per-step tensors from ``forward``'s annotation)."""

import torch
from torch import nn


class RotaryCache(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.tables: dict[int, torch.Tensor] = {}

    def forward(self, x):
        length = x.shape[1]
        if length not in self.tables:  # recompiles
            self.tables[length] = torch.arange(length, dtype=torch.float32)
        return self.lin(x) + self.tables[length][:, None]


class AlternatingHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_a = nn.Linear(8, 8)
        self.head_b = nn.Sequential(nn.Linear(8, 8))
        self.head = self.head_a

    def forward(self, x):
        self.head = self.head_b if self.head is self.head_a else self.head_a  # recompiles
        return self.head(x)


class DeepHead(nn.Module):
    """Variants of different structure: a Linear and a Sequential of three layers."""

    def __init__(self) -> None:
        super().__init__()
        self.shallow = nn.Linear(8, 8)
        self.deep = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
        self.head = self.shallow

    def forward(self, x):
        self.head = self.deep if self.head is self.shallow else self.shallow  # recompiles
        return self.head(x)


class HeadOfABlock(nn.Module):
    """A submodule's own attribute swapped: the guard names the path of submodules."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Module()
        self.block.shallow = nn.Linear(8, 8)
        self.block.deep = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 8))
        self.block.head = self.block.shallow

    def forward(self, x):
        block = self.block
        block.head = block.deep if block.head is block.shallow else block.shallow  # recompiles
        return block.head(x)


class StepwiseCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, steps: list[torch.Tensor]):
        state = torch.zeros_like(steps[0])  # recompiles
        for step in steps:
            state = torch.tanh(self.cell(step) + state)
        return state


class StepwiseTuple(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, steps: tuple[torch.Tensor, ...]):
        outputs = []
        for step in steps:  # recompiles
            outputs.append(torch.relu(self.cell(step)))
        return torch.stack(outputs)


class GridFromShape(nn.Module):
    def forward(self, x):
        grid = (torch.tensor(x.shape[-1]) // 4).tolist()
        total = x.sum(-1)
        for i in range(grid):  # recompiles
            total = total + i
        return total


class PatchesFromWidth(nn.Module):
    def forward(self, x):
        patches = int(torch.tensor(x.size(2)).div(8, rounding_mode="floor").item())
        out = x.mean(-1)
        for _ in range(patches):  # recompiles
            out = out * 2
        return out


class ThresholdBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        if x.shape[0] > 4:
            return self.lin(x) * 2
        return self.lin(x)


EXAMPLE_INPUTS = {"RotaryCache": (2, 4, 8), "AlternatingHeads": (2, 8), "DeepHead": (2, 8),
                  "HeadOfABlock": (2, 8),
                  "StepwiseCell": "[float32[2, 8], float32[2, 8], float32[2, 8]]",
                  "StepwiseTuple": "(float32[2, 8], float32[2, 8], float32[2, 8])",
                  "GridFromShape": (2, 8, 8), "PatchesFromWidth": (2, 8, 16),
                  "ThresholdBranch": (2, 8)}
