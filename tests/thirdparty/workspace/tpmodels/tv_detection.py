"""torchvision detection builders, no weights (backbone weights neither)."""

from torch import nn
from torchvision.models import detection


class TvFasterRCNNMobileNet(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, images, targets):
        return self.model(images, targets)


class TvMaskRCNN(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.maskrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, images, targets):
        return self.model(images, targets)


class TvKeypointRCNN(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.keypointrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=2
        )

    def forward(self, images, targets):
        return self.model(images, targets)


class TvRetinaNet(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.retinanet_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, images, targets):
        return self.model(images, targets)


class TvFCOS(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.fcos_resnet50_fpn(weights=None, weights_backbone=None, num_classes=3)

    def forward(self, images, targets):
        return self.model(images, targets)


class TvSSDLite(nn.Module):
    """Training mode (the default): ``forward(images, targets)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, images, targets):
        return self.model(images, targets)


class TvFasterRCNNEval(nn.Module):
    """Inference mode: ``forward(images)``."""

    def __init__(self):
        super().__init__()
        self.model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=3
        ).eval()

    def forward(self, images):
        return self.model(images)
