"""torchvision optical flow (RAFT) builders, no weights."""

from torch import nn
from torchvision.models import optical_flow


class TvRAFTSmall(nn.Module):
    """RAFT, wrapped: ``forward(image1, image2)``."""

    def __init__(self):
        super().__init__()
        self.model = optical_flow.raft_small(weights=None)

    def forward(self, image1, image2):
        return self.model(image1, image2)


class TvRAFTLarge(nn.Module):
    """RAFT, wrapped: ``forward(image1, image2)``."""

    def __init__(self):
        super().__init__()
        self.model = optical_flow.raft_large(weights=None)

    def forward(self, image1, image2):
        return self.model(image1, image2)
