"""Classes that step through a sequence in Python: a loop over a tensor's first dimension (``for
step in x`` with ``x`` of shape [T, batch, features], alone or beside a state of shape [batch,
features]), over the tensors ``unbind`` gives (of dimension 0, or 1 for a batch-first
sequence), and over a tuple of per-step tensors. Dynamo unrolls such a loop, so it pins the
number of steps: real torch compiles again for every new T (a size guard on the dimension the
loop runs over) and every new length of the tuple (a guard on its length), far past automatic
dynamic shapes.
``# FX50N`` marks the line of each recompilation's cause: the ``for`` line, where the number
of steps is pinned, or the tuple's first use, where dynamo guards its length.
``EXAMPLE_INPUTS``: each class's arguments (a shape for a tensor, a tuple of tensors as the CLI
takes it)."""

import torch
from torch import nn


class StepsOfTensor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        outputs = []
        for step in x:  # FX506
            outputs.append(torch.relu(self.cell(step)) * 2)
        return torch.stack(outputs)


class RecurrenceOverTensor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        state = torch.zeros_like(x[0])
        for index, step in enumerate(x):  # FX506
            state = torch.tanh(self.cell(step) + state) * (index + 1)
        return state


class UnboundSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        total = torch.zeros_like(x[0])
        for step in x.unbind(0):  # FX506
            total = total + self.cell(step)
        return total


class BatchFirstSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        outputs = [torch.relu(self.cell(step)) for step in x.unbind(1)]  # FX506
        return torch.stack(outputs, 1)


class StateBesideSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, state: torch.Tensor, x: torch.Tensor):
        for step in x:  # FX506
            state = torch.tanh(self.cell(step) + state)
        return state


class StepsOfTuple(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, steps: tuple[torch.Tensor, ...]):
        outputs = []
        for step in steps:  # FX508
            outputs.append(torch.relu(self.cell(step)))
        return torch.stack(outputs)


EXAMPLE_INPUTS = {
    "StepsOfTensor": {"x": (3, 2, 8)},
    "RecurrenceOverTensor": {"x": (3, 2, 8)},
    "UnboundSteps": {"x": (3, 2, 8)},
    "BatchFirstSteps": {"x": (2, 3, 8)},
    "StateBesideSteps": {"state": (2, 8), "x": (3, 2, 8)},
    "StepsOfTuple": {"steps": "(float32[2, 8], float32[2, 8], float32[2, 8])"},
}
