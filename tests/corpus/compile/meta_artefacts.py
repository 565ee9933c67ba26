"""Classes that compile whole on the CPU and that a model built on meta used to make fail:
a tensor made from Python data on the weights' device, and a weight a legacy constructor
leaves on the CPU."""

import torch
from torch import nn


class EmptyCache(nn.Module):
    """As a transformers ``DynamicCache`` layer starts: an empty tensor on the input's
    device, then concatenated with the new keys."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        keys = torch.tensor([], dtype=x.dtype, device=x.device)
        return torch.cat([keys, self.proj(x).flatten()])


class LegacyParameter(nn.Module):
    """As transformers' Wav2Vec2 ``masked_spec_embed``: ``torch.Tensor(n)`` ignores the
    default device."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.embed = nn.Parameter(torch.Tensor(8).uniform_())

    def forward(self, x):
        return self.proj(x) + self.embed
