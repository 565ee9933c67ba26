"""A mixture-of-experts layer with data-dependent routing."""

import torch
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.fc(x))


class MixtureOfExperts(nn.Module):
    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.gate = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(Expert(dim) for _ in range(experts))

    def forward(self, x):
        scores = self.gate(x).softmax(-1)
        top = scores.argmax(-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            if (top == i).any():
                out = out + expert(x) * scores[..., i : i + 1]
        load = float(scores.sum())
        tokens = [t for t in top]
        capacity = max(x.size(0) // 2, 1)
        return out, load, tokens, capacity
