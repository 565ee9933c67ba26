"""torchvision segmentation builders, no weights."""

from torch import nn
from torchvision.models import segmentation


class TvFCN(nn.Module):
    """Segmentation model, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=3)

    def forward(self, x):
        return self.model(x)


class TvDeepLabV3MobileNet(nn.Module):
    """Segmentation model, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, x):
        return self.model(x)


class TvDeepLabV3Aux(nn.Module):
    """Segmentation model, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = segmentation.deeplabv3_resnet50(
            weights=None, weights_backbone=None, num_classes=3, aux_loss=True
        )

    def forward(self, x):
        return self.model(x)


class TvLRASPP(nn.Module):
    """Segmentation model, wrapped."""

    def __init__(self):
        super().__init__()
        self.model = segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, x):
        return self.model(x)
