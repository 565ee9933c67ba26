"""Python numbers taken from tensors with int() and float(): each a place where torch.export
needs real data (an int tensor's ``.item()`` is the bare unbacked symbol ``u0``)."""

from torch import nn

EXAMPLE_INPUTS = {
    "CountAndScale": {"x": "float32[2, 8]"},
}


class CountAndScale(nn.Module):
    def forward(self, x):
        n = int((x > 0).sum().item())
        m = float(x.max().item())
        return x[:, :n] * m
