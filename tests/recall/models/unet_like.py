"""A tiny U-Net-like network with a decoder submodule."""

import torch
import torch.nn.functional as F
from torch import nn


class Up(nn.Module):
    def __init__(self, cin=16, cout=8):
        super().__init__()
        self.conv = nn.Conv2d(cin + cout, cout, 3, padding=1)

    def forward(self, x, skip):
        x = F.interpolate(x, scale_factor=2.0)
        if x.shape[-1] != skip.shape[-1]:
            x = F.pad(x, (0, 1, 0, 1))
        return self.conv(torch.cat([x, skip], dim=1))


class UNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, padding=1)
        self.mid = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = Up()
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, image):
        skip = self.down(image)
        h = self.mid(skip)
        h = self.up(h, skip)
        channels = len(h)
        while h.abs().max() > 10:
            h = h / 2
        logits = self.head(h)
        logits[:, 1] = 0.0
        return logits, channels
