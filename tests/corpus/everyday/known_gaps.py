"""Everyday forward code fx-lsp cannot yet judge under torch.compile, kept out of
``test_everyday_blocks`` (which skips this file).

- ``ExpertCountsToList``: dynamo breaks the graph at ``torch.bincount`` (its output size
  depends on the data) and runs it eagerly on meta, where it has no kernel; a fake CPU tensor
  has no data to size its output either. The class is "not checked" (FX503) where real torch
  on the CPU compiles it with graph breaks.
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


# torch 2.10 only: compiled on fake CPU tensors, nn.LSTM meets two more breaks at the class
# line (GB0291, GB0007) than real torch on the CPU, which breaks once (GB0014); 2.11 and
# later agree. Not found yet.
class LSTMZeroState(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)

    def forward(self, x):
        h0 = torch.zeros(1, x.shape[0], self.hidden)
        c0 = torch.zeros(1, x.shape[0], self.hidden)
        out, _ = self.lstm(x, (h0, c0))
        return out
