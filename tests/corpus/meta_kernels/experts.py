"""Operators whose meta kernel refuses what the CPU kernel accepts (torch 2.13): the grouped
matmul's meta kernel asks for bfloat16 where the CPU kernel takes float32 (the experts of
transformers' mixture-of-experts models), and ``geqrf`` has a CPU kernel and no meta kernel.
Each forward leaves its input's size to the first layer (the input search runs it)."""

import torch
from torch import nn


class GroupedExperts(nn.Module):
    """A grouped matmul in float32: the CPU kernel takes it, the meta kernel asks for
    bfloat16, and so do real export and compile, which run the meta kernel."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.experts = nn.Parameter(torch.randn(4, 16, 16))

    def forward(self, x):
        h = self.proj(x).reshape(-1, 16)
        offs = torch.tensor([4, 8, 12, 16], dtype=torch.int32, device=h.device)
        return torch._grouped_mm(h, self.experts, offs=offs)


class SwitchedExperts(GroupedExperts):
    """Grouped matmul when eager, one matmul per expert when compiling, as transformers'
    mixture-of-experts layers choose."""

    def forward(self, x):
        h = self.proj(x).reshape(-1, 16)
        if torch.compiler.is_compiling():
            return torch.cat([h[4 * i:4 * i + 4] @ self.experts[i] for i in range(4)])
        offs = torch.tensor([4, 8, 12, 16], dtype=torch.int32, device=h.device)
        return torch._grouped_mm(h, self.experts, offs=offs)


class SkippedExperts(nn.Module):
    """The grouped matmul in a function dynamo does not compile: it runs eagerly."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.experts = nn.Parameter(torch.randn(4, 16, 16))

    def forward(self, x):
        return _grouped(self.proj(x).reshape(-1, 16), self.experts)


@torch.compiler.disable
def _grouped(h, experts):
    offs = torch.tensor([4, 8, 12, 16], dtype=torch.int32, device=h.device)
    return torch._grouped_mm(h, experts, offs=offs)


class Householder(nn.Module):
    """``geqrf``: a CPU kernel and no meta kernel."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        reflectors, tau = torch.geqrf(self.proj(x))
        return reflectors.sum(-1) + tau
