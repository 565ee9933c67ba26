import torch
from torch import nn


class ScaleOnFirstCall(nn.Module):
    """Works its scale out on the first call and keeps it (torchvision's box pooler): under
    torch.compile that first call reads a value (a break), a later call does not."""

    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = torch.tensor(float(x.shape[-1])).rsqrt().item()
        return self.fc(x) * self.scale
