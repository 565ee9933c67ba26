"""Graph breaks met in real models' training code: a random layer drop decided on tensor data
beside a Python flag (transformers' speech encoders), an input marked ``requires_grad`` in
``forward`` (for gradient checkpointing), a selection through ``nonzero(as_tuple=True)``."""

import torch
from torch import nn


class LayerDropOrSynced(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.synced = False

    def forward(self, x):
        for layer in self.layers:
            skip = torch.rand([]) < 0.5
            if not skip or self.synced:
                x = torch.relu(layer(x))
        return x


class LayerDropWhenTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            keep = torch.rand([]) > 0.3
            if keep and self.training:
                x = x + layer(x)
        return x


class MarksInputForCheckpointing(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3)

    def forward(self, x):
        hidden = x[:, None]
        hidden.requires_grad = True
        return self.conv(hidden)


class NonzeroTupleSum(nn.Module):
    def forward(self, x):
        return x[torch.nonzero(x > 0, as_tuple=True)].sum() * 2


INPUTS = {
    "LayerDropOrSynced": {"x": "float32[4, 8]"},
    "LayerDropWhenTraining": {"x": "float32[4, 8]"},
    "MarksInputForCheckpointing": {"x": "float32[2, 16]"},
    "NonzeroTupleSum": {"x": "float32[4, 8]"},
}
TRAINING = ("LayerDropWhenTraining",)
