"""Classes that real torch.export exports on the CPU, but that fx-lsp, exporting them as built
on the meta device, cannot check past one line (FX404, marked): a tensor held in a list stays
on meta, where fx-lsp fakes parameters, buffers and tensor attributes as CPU tensors. And
operators that real torch.export rejects too, on the fake tensors it makes of real inputs:
FX499, a verdict."""

import torch
from torch import nn

EXAMPLE_INPUTS = {
    "HeldQr": {"x": "float32[2, 8]"},
    "HeldTable": {"x": "float32[2, 8]"},
    "CustomOpWithoutFake": {"x": "float32[2, 8]"},
    "EqualCheck": {"x": "float32[2, 8]"},
    "LeastSquares": {"x": "float32[2, 8]"},
}


@torch.library.custom_op("fxlsp_export_corpus::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class HeldQr(nn.Module):
    """An operator without a meta kernel, on a tensor that stays on meta."""

    def __init__(self):
        super().__init__()
        self.tables = [torch.eye(4)]

    def forward(self, x):
        return x + torch.geqrf(self.tables[0])[0].sum()  # FX404


class HeldTable(nn.Module):
    """A tensor that stays on meta, beside the fake CPU input."""

    def __init__(self):
        super().__init__()
        self.tables = [torch.ones(8)]

    def forward(self, x):
        return x + self.tables[0]  # FX404


class CustomOpWithoutFake(nn.Module):
    def forward(self, x):
        return doubled(x) + 1


class EqualCheck(nn.Module):
    """DataDependentOutputException: a Python bool of the data."""

    def forward(self, x):
        if torch.equal(x, x.clone()):
            return x + 1
        return x


class LeastSquares(nn.Module):
    """DynamicOutputShapeException: the output's shape depends on the data."""

    def forward(self, x):
        square = x[:, :2]
        return torch.linalg.lstsq(square, square).solution
