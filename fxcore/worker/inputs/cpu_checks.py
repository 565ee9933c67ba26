"""Checks the CPU kernels make that their meta kernels lack, kept while a model runs on meta
or fake tensors to decide its inputs: an input accepted only there would give a verdict on
inputs real torch refuses on the CPU. An interpolation (linear, bilinear, bicubic, trilinear)
to an empty size runs on meta, on fake tensors too, and raises on the CPU."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_ATEN = torch.ops.aten
#: Interpolations whose CPU kernel refuses an empty output from a non-empty input.
_UPSAMPLING = frozenset({_ATEN.upsample_linear1d, _ATEN.upsample_bilinear2d,
                         _ATEN.upsample_bicubic2d, _ATEN.upsample_trilinear3d,
                         _ATEN._upsample_bilinear2d_aa, _ATEN._upsample_bicubic2d_aa})


class _CpuChecks(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None
                           ) -> Any:
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in _UPSAMPLING and isinstance(out, torch.Tensor) \
                and out.numel() == 0 and args[0].numel() > 0:
            raise RuntimeError(
                f"Input and output sizes should be greater than 0, but got input size "
                f"{tuple(args[0].shape)} and output size {tuple(out.shape)} (the CPU kernel "
                f"of {func.overloadpacket.__name__} refuses it)")
        return out


@contextlib.contextmanager
def cpu_checks() -> Iterator[None]:
    """While active, an operation the CPU refuses raises as it does there."""
    with _CpuChecks():
        yield
