"""A loss computed in the forward pass (a common cause of untraceable modules)."""

import torch
from torch import nn


class DetectionLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, pred, target):
        if pred.shape[0] != target.shape[0]:
            raise ValueError("batch mismatch")
        diff = (pred - target).abs()
        n_pos = int(target.gt(0).sum())
        diff[target < 0] = 0
        total = diff.sum() / max(n_pos, 1)
        per_class = {}
        for c in target.unique():
            per_class[c] = diff[target == c].mean()
        return total * self.weight.sum(), per_class
