"""Classes a training loop recompiles (sizes changing between calls, module state kept), for
the recompile fixes' tests: those with ``# fixed`` get a fix that keeps their outputs, those
with ``# no fix`` get none, and the diagnostic says why. ``CALLS``: each class's inputs, by
call (``"steps"``: a list of that many ``[2, 8]`` tensors, else a tensor's shape)."""

import torch
from torch import nn


class PositionTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))
        self.tables = {}

    def forward(self, x):
        length = x.shape[1]
        if length not in self.tables:  # fixed
            self.tables[length] = torch.arange(length, dtype=torch.float32)[:, None] * self.scale
        return self.lin(x) + self.tables[length]


class RotaryTables(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.cache = {}

    def forward(self, x):
        seq_len = x.shape[1]
        if seq_len not in self.cache:  # fixed
            t = torch.arange(seq_len, device=x.device, dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.cache[seq_len] = (emb.cos(), emb.sin())
        cos, sin = self.cache[seq_len]
        return self.lin(x) * cos + x * sin


class LearnedTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.weight = nn.Parameter(torch.ones(8))
        self.tables = {}

    def forward(self, x):
        length = x.shape[1]
        if length not in self.tables:  # no fix: reads a parameter
            self.tables[length] = torch.arange(length, dtype=torch.float32)[:, None] * self.weight
        return self.lin(x) + self.tables[length]


class AlternatingHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_a = nn.Linear(8, 8)
        self.head_b = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.head = self.head_a

    def forward(self, x):
        self.head = self.head_b if self.head is self.head_a else self.head_a  # fixed
        return self.head(x) * 2


class HeadWeightRead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_a = nn.Linear(8, 8)
        self.head_b = nn.Sequential(nn.Linear(8, 8))
        self.head = self.head_a

    def forward(self, x):
        self.head = self.head_b if self.head is self.head_a else self.head_a  # no fix
        return self.head(x) + self.head_a.bias * (self.head is self.head_a)


class DeepHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shallow = nn.Linear(8, 8)
        self.deep = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
        self.head = self.shallow

    def forward(self, x):
        self.head = self.deep if self.head is self.shallow else self.shallow  # fixed
        return self.head(x)


class DepthHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.short = nn.Sequential(nn.Linear(8, 8))
        self.long = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.head = self.short

    def forward(self, x):
        self.head = self.long if self.head is self.short else self.short  # fixed
        return self.head(x).relu()


class Stack(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class OwnStackHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.short = Stack(1)
        self.long = Stack(3)
        self.head = self.short

    def forward(self, x):
        self.head = self.long if self.head is self.short else self.short  # no fix
        return self.head(x)


class StepMap(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x):
        outputs = []
        for step in x:  # fixed
            outputs.append(torch.relu(self.cell(step)) * 2)
        return torch.stack(outputs)


class StepRecurrence(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x):
        state = torch.zeros_like(x[0])
        for step in x:  # no fix: carries a state
            state = torch.tanh(self.cell(step) + state)
        return state


class StepListMap(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, steps: list[torch.Tensor]):
        outputs = []
        for step in steps:  # no fix: a list's length is guarded
            outputs.append(torch.relu(self.cell(step)))
        return torch.stack(outputs)


EXAMPLE_INPUTS = {"PositionTable": (2, 4, 8), "RotaryTables": (2, 4, 8), "LearnedTable": (2, 4, 8),
                  "AlternatingHeads": (2, 8), "HeadWeightRead": (2, 8), "DeepHead": (2, 8),
                  "DepthHeads": (2, 8), "OwnStackHeads": (2, 8),
                  "StepMap": (3, 2, 8), "StepRecurrence": (3, 2, 8),
                  "StepListMap": "[float32[2, 8], float32[2, 8], float32[2, 8]]"}
