"""Dynamic dimensions: kept dynamic through the ONNX export, or specialised by the exporter's
own fix of torch.export's refusal (FX603)."""

from torch import nn

EXAMPLE_INPUTS = {"Batched": {"x": "float32[3, 4]"}, "FixedBatch": {"x": "float32[4, 4]"}}
DYNAMIC = {"Batched": {"x": {0: "batch"}}, "FixedBatch": {"x": {0: "batch"}}}


class Batched(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x).softmax(-1) * x.shape[0]


class FixedBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(x.reshape(1, 16))
