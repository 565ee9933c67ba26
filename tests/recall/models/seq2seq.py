# ruff: noqa: RUF059  (unpacked values left unused on purpose: the corpus is about tracing)
"""An encoder-decoder with greedy decoding written in Python."""

import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.decoder = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, max_len):
        enc, h = self.encoder(self.embed(src))
        state = h[0]
        token = src[:, 0]
        outputs = []
        for _ in range(max_len):
            state = self.decoder(self.embed(token), state)
            logits = self.out(state)
            token = logits.argmax(-1)
            outputs.append(logits)
        if token.eq(1).all():
            state = state * 0
        lengths = [len(o) for o in outputs]
        return torch.stack(outputs, 1), lengths, state
