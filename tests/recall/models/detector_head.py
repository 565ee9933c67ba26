"""A detection head over a list of feature maps."""

from torch import nn


def count_boxes(scores):
    total = 0
    for s in scores:
        total = total + s.sum()
    return total


class DetectorHead(nn.Module):
    def __init__(self, channels=8, anchors=3):
        super().__init__()
        self.cls = nn.Conv2d(channels, anchors, 1)
        self.box = nn.Conv2d(channels, anchors * 4, 1)
        self.anchors = anchors

    def forward(self, features):
        logits = self.cls(features)
        boxes = self.box(features)
        n = boxes.size(1)
        if n % 4 != 0:
            boxes = boxes[:, : n - n % 4]
        boxes[:, 0] = boxes[:, 0].clamp(min=0)
        keep = count_boxes(logits)
        level = int(features.shape[2])
        return logits.sigmoid(), boxes, keep, level
