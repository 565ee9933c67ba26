"""Custom operators: one without an ONNX translation (FX601), and one that gives ONNX its own
operator while torch.onnx.export runs (torch.onnx.ops.symbolic)."""

import torch
from torch import nn

EXAMPLE_INPUTS = {"CustomScale": {"x": "float32[2, 3]"}, "OnnxAware": {"x": "float32[2, 3]"}}


@torch.library.custom_op("fxlsp_onnx_corpus::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


class CustomScale(nn.Module):
    def forward(self, x):
        y = x + 1
        return scale(y).tanh()


class OnnxAware(nn.Module):
    def forward(self, x):
        x = x + 1
        if torch.onnx.is_in_onnx_export():
            x = torch.onnx.ops.symbolic("::Erf", (x,), {}, dtype=x.dtype, shape=x.shape,
                                        version=18)
        else:
            x = torch.erf(x)
        return x * 2
