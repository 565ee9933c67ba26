"""Classes torch.export already refuses, each at a line of its own: with ONNX the only mode
asked, their failures are the ONNX verdict (torch.onnx.export(..., dynamo=True) stops there)."""

from torch import nn

EXAMPLE_INPUTS = {"DataLoop": {"x": "float32[2, 8]"},
                  "HelperBranch": {"x": "float32[2, 8]"}}


class DataLoop(nn.Module):
    def forward(self, x):
        steps = int(x.abs().max().ceil())
        for _ in range(steps):
            x = x * 0.5
        return x


def _clamped(x):
    if x.mean() > 0:
        return x.clamp(max=1.0)
    return x


class HelperBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return _clamped(self.fc(x))

