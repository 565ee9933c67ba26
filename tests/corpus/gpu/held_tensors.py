"""Tensors a class holds outside its parameters and buffers, written for a GPU (each takes
float32[2, 8]): ``model.to("cuda")`` moves parameters and buffers, not a plain tensor attribute,
which stays where ``__init__`` made it. On a GPU a CPU tensor of one or more dimensions beside
CUDA tensors is a device mismatch; a 0-dim CPU tensor is allowed (a scalar)."""

import torch
from torch import nn


class HeldAttribute(nn.Module):
    """A table kept as a plain attribute, not ``register_buffer``: it stays on the CPU."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.table = torch.ones(8)

    def forward(self, x):
        return self.proj(x.cuda()) + self.table


class HeldScalar(nn.Module):
    """A 0-dim attribute: a CPU scalar beside CUDA tensors, which a GPU allows."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.scale = torch.tensor(2.0)

    def forward(self, x):
        return self.proj(x.cuda()) * self.scale
