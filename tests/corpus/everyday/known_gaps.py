"""Everyday forward code fx-lsp cannot yet judge under torch.compile, kept out of
``test_everyday_blocks`` (which skips this file). In both, dynamo breaks the graph and runs the
rest of ``forward`` eagerly, and the next line there needs real data that neither a meta
tensor nor a fake CPU tensor has: the class is "not checked" (FX503) where real torch on the
CPU compiles it with graph breaks.

- ``ExpertCountsToList``: ``torch.bincount`` (no meta kernel; its output size depends on the
  data, which fake tensors do not have) and ``.tolist()`` of its counts.
- ``PackedByLengths``: ``pack_padded_sequence`` (a graph break, GB0007) reads the lengths'
  values, copied to the CPU.
"""

import torch
from torch import nn


class ExpertCountsToList(nn.Module):
    def __init__(self, dim=8, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = experts

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        counts = torch.bincount(choice, minlength=self.experts).tolist()
        order = choice.argsort()
        return [part.sum(0) for part in torch.split(x[order], counts)]


class PackedByLengths(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.rnn = nn.GRU(dim, hidden, batch_first=True)

    def forward(self, x):
        lengths = (x.abs().sum(-1) > 0).sum(-1).clamp(min=1)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, h = self.rnn(packed)
        return h[-1]
