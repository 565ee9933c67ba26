"""Constructors that need arguments: one built by a factory set in pyproject.toml, one not
configured (reported as not traced)."""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, num_classes: int, width: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, width), nn.GELU())
        self.head = nn.Linear(width, num_classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(features))


def build_classifier(num_classes: int) -> Classifier:
    return Classifier(num_classes=num_classes, width=64)


class Projection(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)
