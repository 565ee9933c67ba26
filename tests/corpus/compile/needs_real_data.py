"""Classes that compile on the CPU with real tensors, but that fx-lsp, compiling them as built
on the meta device, cannot check past one line (FX503, marked): an operator without a meta
kernel, a CPU tensor against meta inputs. The graph breaks before that line are real
torch's. And a custom operator without a fake implementation, which real
torch.compile rejects too: FX502, a verdict."""

import torch
from torch import nn


@torch.library.custom_op("fxlsp_compile_corpus::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class Counts(nn.Module):
    """A graph break on either device (the output size depends on the data); then the eager
    run on meta meets an operator without a meta kernel."""

    def forward(self, x):
        counts = torch.bincount((x.abs() * 3).long().flatten())  # FX503
        return counts.float().sum() + x


class QrFactors(nn.Module):
    """No meta kernel: on the CPU, dynamo's fake tensors run the CPU kernel and no graph
    breaks; on meta its fake run fails, a break real torch does not make."""

    def forward(self, x):
        return torch.geqrf(x)[0] + 1  # FX503


class RepeatByCounts(nn.Module):
    def forward(self, x):
        counts = (x[0] > 0).long() + 1
        return torch.repeat_interleave(x, counts, dim=1).sum() + x  # FX503


class LookupTable(nn.Module):
    """A CPU tensor the code makes, against inputs on meta: compiled on fake CPU tensors, as
    real torch runs it, so checked."""

    def forward(self, x):
        return torch.searchsorted(torch.arange(4.0), x)


class PrintThenCounts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        print("counting")
        counts = torch.bincount((x.abs() * 3).long().flatten())  # FX503
        return self.proj(x) + counts.sum()


class CustomOpWithoutFake(nn.Module):
    def forward(self, x):
        return doubled(x) + 1
