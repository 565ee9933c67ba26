"""Graph breaks at element-wise calls of C extensions on a tensor through numpy: scipy's
ufuncs (GB0156) and numpy functions ``torch._numpy`` lacks (GB0294). The one file of the corpus
that imports outside torch and the standard library (numpy and scipy: the runner skips it
where they are missing), since a C extension is what it is about."""

import numpy as np
import scipy.special
import scipy.special as sps
import torch
from scipy import special
from torch import nn

#: The example inputs of each class (fx-lsp's ``inputs`` option, the runner's tensors).
INPUTS = {name: {"x": "float32[4, 8]"} for name in (
    "ExpitFromNumpy", "ErfTensorAlias", "ExpitAssigned", "InterpCast", "InterpFloat64")}


class ExpitFromNumpy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.from_numpy(scipy.special.expit(self.proj(x).detach().numpy())) * 2


class ErfTensorAlias(nn.Module):
    def forward(self, x):
        y = x * 3
        return torch.tensor(special.erf(y.numpy())) + y


class ExpitAssigned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((8,), 0.5))

    def forward(self, x):
        gate = torch.as_tensor(sps.expit(x.detach().cpu().numpy()))
        return gate * self.scale + x


class InterpCast(nn.Module):
    def forward(self, x):
        x = x.sigmoid()
        curve = torch.from_numpy(np.interp(x.numpy(), [0.0, 1.0], [1.0, 3.0]).astype(np.float32))
        return curve - x


class InterpFloat64(nn.Module):
    def forward(self, x):
        curve = torch.from_numpy(np.interp(x.numpy(), [0.0, 0.5, 1.0], [0.0, 2.0, 1.0]))
        return curve.float() + x
