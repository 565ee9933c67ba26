"""A model whose compile mode shows a finding with one call and another only in its loop of
calls: the editor's staged publishes and MCP `check` without the loop test on it."""

#: A block whose compile breaks the graph at a ``print`` with one call (GB0059) and, in the
#: loop of calls, compiles again for each new sequence length (FX506).
RECOMPILES = '''\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.positions = nn.Embedding(64, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        print("block input", batch, length)
        x = x + self.positions(torch.tensor(list(range(length))))
        return self.proj(x)
'''
