"""Graph breaks at ``.tolist()`` of a boolean test whose flags filter rows in a
comprehension, the kept rows then stacked or concatenated, several spellings."""

import torch
from torch import nn


class StackKeptRows(nn.Module):
    def forward(self, x):
        scores = x.sum(-1)
        keep = (scores > 0).tolist()
        rows = [r for r, k in zip(x, keep, strict=True) if k]
        return torch.stack(rows)


class CatByNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        flags = h.norm(dim=-1).gt(1.0).tolist()
        return torch.cat([h[i] for i, f in enumerate(flags) if f], dim=0)


class InlineFlags(nn.Module):
    def forward(self, x):
        kept = [row for keep, row in zip(((x.mean(-1) < 0.5) & (x.amax(-1) > 0)).tolist(), x,
                                         strict=False) if keep]
        out = torch.stack(kept, 0)
        return out * 2


INPUTS = {name: {"x": "float32[6, 8]"} for name in (
    "StackKeptRows", "CatByNorm", "InlineFlags")}
