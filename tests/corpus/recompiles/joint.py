"""Classes a loader of variable-length batches recompiles beyond automatic dynamic shapes only
when what it varies changes together: a number argument that says how many steps a tensor
holds, a list of per-step tensors beside a mask of as many columns. Changed one at a time, as
the loop's other phases change them, ``forward`` refuses the call (a view that no longer fits,
a mask column past the end). ``# FX50N`` marks the line of each recompilation's cause: a
number tied to a dimension recompiles on that dimension's guard (dynamo checks a tensor's sizes
first), at the line that pins it.
``EXAMPLE_INPUTS``: each class's arguments (a shape for a tensor, a list of tensors as the CLI
takes it, numbers as given)."""

import torch
from torch import nn


class PositionsByLength(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.tables: dict[int, torch.Tensor] = {}

    def forward(self, x: torch.Tensor, length: int = 4):
        steps = x.view(x.shape[0], length, x.shape[-1])
        if length not in self.tables:  # FX506
            self.tables[length] = torch.arange(length, dtype=x.dtype, device=x.device)
        return self.lin(steps) + self.tables[length][:, None]


class MaskedSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, steps: list[torch.Tensor], mask: torch.Tensor):
        state = mask.new_zeros(mask.shape[0], 8)
        for index, step in enumerate(steps):  # FX508
            state = torch.tanh(self.cell(step) + state) * mask[:, index:index + 1]
        return state


class ScaledByLength(nn.Module):
    """A number that tells the length, used only as arithmetic: automatic dynamic makes both
    dynamic, and no recompilation follows."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, length: int = 4):
        steps = x.view(x.shape[0], length, x.shape[-1])
        return self.lin(steps).sum(1) / length


EXAMPLE_INPUTS = {
    "PositionsByLength": {"x": (2, 4, 8), "length": 4},
    "MaskedSteps": {"steps": "[float32[2, 8], float32[2, 8], float32[2, 8]]", "mask": (2, 3)},
    "ScaledByLength": {"x": (2, 4, 8), "length": 4},
}
