"""Building blocks shared by the encoders."""

import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.norm = nn.BatchNorm2d(channels)

    def forward(self, x):
        if x.shape[-1] % 2 == 1:
            x = F.pad(x, (0, 1, 0, 1))
        return F.relu(self.norm(self.conv(x)))
