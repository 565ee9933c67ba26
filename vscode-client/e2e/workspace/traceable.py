import torch
from torch import nn


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        hidden = torch.relu(self.fc1(x))
        return self.fc2(hidden)
