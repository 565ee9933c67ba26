"""Classes that compile on the CPU with real tensors, but that fx-lsp, compiling them as built
on the meta device, cannot check past one line (FX503, marked): an operator without a meta
kernel whose output its data decides, a CPU tensor against meta inputs. The graph breaks
before that line are real torch's. An operator without a meta kernel whose output its
data does not decide is compiled on fake CPU tensors, which run its CPU kernel, as real
torch's do (no mark). And a custom operator without a fake implementation, which real
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
    breaks; on meta its fake run fails, a break real torch does not make, so fx-lsp
    compiles it on fake CPU tensors."""

    def forward(self, x):
        return torch.geqrf(x)[0] + 1


class RepeatByCounts(nn.Module):
    def forward(self, x):
        counts = (x[0] > 0).long() + 1
        return torch.repeat_interleave(x, counts, dim=1).sum() + x  # FX503


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
