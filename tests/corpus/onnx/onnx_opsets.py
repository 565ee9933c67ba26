"""Operators whose translation depends on the opset (gelu from 20, group_norm from 21,
rms_norm and scaled_dot_product_attention from 23; decomposed below those)."""

from torch import nn

EXAMPLE_INPUTS = {"Normed": {"x": "float32[2, 4, 8]"}, "Attention": {"q": "float32[1, 2, 4, 8]"}}


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.group = nn.GroupNorm(2, 4)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = nn.functional.gelu(self.fc(self.group(x)), approximate="tanh")
        return nn.functional.rms_norm(y, (8,))


class Attention(nn.Module):
    def forward(self, q):
        return nn.functional.scaled_dot_product_attention(q, q.flip(-1), q, is_causal=True)
