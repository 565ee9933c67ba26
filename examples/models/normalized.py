"""A helper function with control flow, called from forward."""

import torch
from torch import nn

from .ops import clamp_norm


class NormalizedEmbedding(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return clamp_norm(self.embedding(ids))
