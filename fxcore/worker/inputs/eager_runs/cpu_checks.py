"""Checks the CPU kernels make that their meta kernels lack, kept while a model runs on meta
or fake tensors to decide its inputs: an input accepted only there would give a verdict on
inputs real torch refuses on the CPU. An interpolation (linear, bilinear, bicubic, trilinear)
to an empty size runs on meta, on fake tensors too, and raises on the CPU; so does a
negative log-likelihood (``cross_entropy``, ``nll_loss``) whose target holds neither long nor
byte integers (a mask), or, per pixel, whose target is not the input's size without its class
dimension: a loss given labels of another shape."""

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
#: The negative log-likelihoods, whose CPU kernels take a target of long or byte integers.
_NLL = frozenset({_ATEN.nll_loss_forward, _ATEN.nll_loss2d_forward})
_TARGET_DTYPES = (torch.int64, torch.uint8)
_TYPE_NAMES = {torch.bool: "Bool", torch.int8: "Char", torch.int16: "Short",
               torch.int32: "Int", torch.float16: "Half", torch.bfloat16: "BFloat16",
               torch.float32: "Float", torch.float64: "Double"}


def _refused_target(func: Any, args: Any) -> str | None:
    """What the CPU kernel of a negative log-likelihood says of its target, where it refuses
    it; None where it takes it (or ``func`` is another operator)."""
    if func.overloadpacket not in _NLL or len(args) < 2:
        return None
    source, target = args[0], args[1]
    if not isinstance(source, torch.Tensor) or not isinstance(target, torch.Tensor):
        return None
    if target.dtype not in _TARGET_DTYPES:
        named = _TYPE_NAMES.get(target.dtype, str(target.dtype))
        return f"expected target dtype to be Long or Byte, but got {named}"
    if func.overloadpacket is _ATEN.nll_loss2d_forward and source.dim() == 4 and (
            target.dim() != 3 or tuple(target.shape) != (source.shape[0], *source.shape[2:])):
        return (f"size mismatch (got input: {list(source.shape)} , target: "
                f"{list(target.shape)}")
    return None


class _CpuChecks(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None
                           ) -> Any:
        refused = _refused_target(func, args)
        if refused is not None:
            raise RuntimeError(f"{refused} (the CPU kernel of {func.overloadpacket.__name__} "
                               "refuses it)")
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
