"""A small text encoder that takes a dict batch."""

import torch
from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, vocab=100, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, 64, dim))
        self.out = nn.Linear(dim, dim)

    def forward(self, batch):
        ids = batch["input_ids"]
        h = self.embed(ids)
        if "attention_mask" in batch:
            h = h * batch["attention_mask"].unsqueeze(-1)
        seq_len = ids.shape[1]
        h = h + self.pos[:, :seq_len]
        steps = range(ids.size(0))
        pooled = h.mean(1)
        assert pooled.dim() == 2, "pooled must be 2-d"
        return self.out(pooled), steps
