import torch
from torch import nn


class Mismatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h)
