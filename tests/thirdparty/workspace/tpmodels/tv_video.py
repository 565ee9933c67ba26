"""torchvision video classification builders, no weights."""

from torch import nn
from torchvision.models import video


class TvR3D18(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.r3d_18(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)


class TvMC318(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.mc3_18(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)


class TvR2Plus1D18(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.r2plus1d_18(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)


class TvS3D(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.s3d(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)


class TvMViTV2S(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.mvit_v2_s(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)


class TvSwin3DT(nn.Module):
    """Video model, wrapped: ``x`` is (N, C, T, H, W)."""

    def __init__(self):
        super().__init__()
        self.model = video.swin3d_t(weights=None, num_classes=5)

    def forward(self, x):
        return self.model(x)
