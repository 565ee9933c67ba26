"""A submodule from another file of the package (relative import)."""

from torch import nn

from .layers import ConvBlock


class Encoder(nn.Module):
    def __init__(self, channels: int = 8, depth: int = 2):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, kernel_size=3, padding=1)
        self.blocks = nn.Sequential(*[ConvBlock(channels) for _ in range(depth)])

    def forward(self, images):
        return self.blocks(self.stem(images))
