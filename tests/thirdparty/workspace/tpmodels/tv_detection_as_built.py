"""A torchvision detection model left in train mode, as built, called as for inference."""

from torch import nn
from torchvision.models import detection


class TvFasterRCNNAsBuilt(nn.Module):
    """``forward(images)`` without ``.eval()``: in train mode torchvision asks for targets
    ("targets should not be none when in training mode"), so fx-lsp judges it in eval mode."""

    def __init__(self):
        super().__init__()
        self.model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=3
        )

    def forward(self, images):
        return self.model(images)
