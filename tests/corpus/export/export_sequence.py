"""Classes whose sequence dimension (named in their inputs: ``seq``) ``torch.export`` with
``Dim.AUTO`` specialises, or keeps dynamic, without configuration (FX407 at the lines marked
``# FX407``). Each exports whole with static shapes."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "BranchOnLength": {"ids": "int64[batch=4, seq=16]"},
    "ViewToFixedLength": {"x": "float32[batch=4, seq=16, 8]"},
    "FixedPositions": {"ids": "int64[batch=4, seq=16]"},
    "FlattenedTokens": {"ids": "int64[batch=4, seq=16]"},
    "SequenceFirstAttention": {"x": "float32[seq=16, batch=4, 8]"},
    "PositionsUpToLength": {"ids": "int64[batch=4, seq=16]"},
    "Recurrent": {"x": "float32[batch=2, seq=3, 8]"},
}


class BranchOnLength(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)

    def forward(self, ids):
        h = self.embed(ids)
        if ids.shape[1] == 16:  # FX407
            return h + 1
        return h


class ViewToFixedLength(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        b = x.shape[0]
        return self.fc(x).view(b, 16, -1)  # FX407


class FixedPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.positions = nn.Parameter(torch.zeros(1, 32, 8))

    def forward(self, ids):
        return self.embed(ids) + self.positions[:, :16]  # FX407


class FlattenedTokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.head = nn.Linear(16 * 8, 4)

    def forward(self, ids):
        return self.head(self.embed(ids).flatten(1))  # FX407


class SequenceFirstAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2)

    def forward(self, x):
        out, _ = self.attention(x, x, x)
        return out.reshape(16, -1)  # FX407


class PositionsUpToLength(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.positions = nn.Parameter(torch.zeros(1, 32, 8))

    def forward(self, ids):
        return self.embed(ids) + self.positions[:, :ids.shape[1]]


class Recurrent(nn.Module):
    """torch's own LSTM: export runs its steps one by one, so many as the example has."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0].mean(1)  # FX407
