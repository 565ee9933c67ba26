"""Classes that export to ONNX cleanly, and one torch.export already refuses (the export
mode's failure where that mode runs too, else the onnx mode's verdict)."""

import torch
from torch import nn

EXAMPLE_INPUTS = {"ConvNet": {"x": "float32[1, 3, 16, 16]"}, "Mlp": {"x": "float32[2, 8]"},
                  "DataBranch": {"x": "float32[2, 8]"}}


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = nn.functional.adaptive_avg_pool2d(self.bn(self.conv(x)).relu(), 1)
        return self.head(torch.flatten(y, 1))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Dropout(0.1), nn.Linear(16, 2))

    def forward(self, x):
        return self.layers(x).log_softmax(-1)


class DataBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x
