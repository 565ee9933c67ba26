"""Output shapes of common ``torch.nn`` layers computed from their sizes: faster than their
meta kernels, with the error torch raises when an input does not fit."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from fxcore.worker.meta.lazy_meta import MetaValue

_SAME_SHAPE = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.ReLU,
               nn.ReLU6, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.LeakyReLU, nn.Hardswish,
               nn.Hardsigmoid, nn.ELU, nn.Mish, nn.Softplus)
_BATCH_NORMS = {nn.BatchNorm1d: (2, 3), nn.BatchNorm2d: (4,), nn.BatchNorm3d: (5,)}
_CONVOLUTIONS = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
_POOLS = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3, nn.AvgPool1d: 1, nn.AvgPool2d: 2,
          nn.AvgPool3d: 3}
_ADAPTIVE_POOLS = {nn.AdaptiveAvgPool1d: 1, nn.AdaptiveAvgPool2d: 2, nn.AdaptiveAvgPool3d: 3,
                   nn.AdaptiveMaxPool1d: 1, nn.AdaptiveMaxPool2d: 2, nn.AdaptiveMaxPool3d: 3}


def _convolution(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    if x.dim() != dims + 2 or not isinstance(module.padding, (tuple, str)):
        return None
    if x.shape[1] != module.in_channels:
        raise RuntimeError(
            f"Given groups={module.groups}, weight of size {list(module.weight.shape)}, expected "
            f"input{list(x.shape)} to have {module.in_channels} channels, but got "
            f"{x.shape[1]} channels instead")
    if module.padding == "same":
        return (x.shape[0], module.out_channels, *x.shape[2:])
    padding = (0,) * dims if module.padding == "valid" else module.padding
    spatial = [
        (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        for size, pad, dilation, kernel, stride in zip(
            x.shape[2:], padding, module.dilation, module.kernel_size, module.stride,
            strict=True)
    ]
    if any(size <= 0 for size in spatial):
        return None  # the kernel says why, in its own words
    return (x.shape[0], module.out_channels, *spatial)


def _per_dimension(value: Any, dims: int) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


def _pooling(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    """Max and average pooling: torch's ``pooling_output_shape``, for the settings every
    kernel accepts (anything else goes to the kernel, which says why)."""
    if x.dim() not in (dims + 1, dims + 2) or getattr(module, "return_indices", False) \
            or not all(size > 0 for size in x.shape):
        return None
    kernel = _per_dimension(module.kernel_size, dims)
    stride = _per_dimension(module.kernel_size if module.stride is None else module.stride,
                            dims)
    padding = _per_dimension(module.padding, dims)
    dilation = _per_dimension(getattr(module, "dilation", 1), dims)
    settings = (*kernel, *stride, *padding, *dilation)
    if not all(len(part) == dims for part in (kernel, stride, padding, dilation)) \
            or not all(type(value) is int for value in settings) \
            or not all(value > 0 for value in (*kernel, *stride, *dilation)) \
            or not all(0 <= pad <= size // 2 for pad, size in zip(padding, kernel, strict=True)):
        return None
    sizes = []
    for size, k, step, pad, dilate in zip(x.shape[-dims:], kernel, stride, padding, dilation,
                                          strict=True):
        if size < dilate * (k - 1) + 1:
            return None  # a window larger than the input: some kernels refuse it
        span = size + 2 * pad - dilate * (k - 1) - 1
        out = (span + (step - 1 if module.ceil_mode else 0)) // step + 1
        if module.ceil_mode and (out - 1) * step >= size + pad:
            out -= 1  # the last window must start inside the input or its left padding
        sizes.append(out)
    return (*x.shape[:-dims], *sizes)


def _adaptive_pooling(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    """Adaptive pooling: the configured output size, ``None`` keeping the input's (2d and 3d
    only)."""
    wanted = _per_dimension(module.output_size, dims)
    if x.dim() not in (dims + 1, dims + 2) or getattr(module, "return_indices", False) \
            or len(wanted) != dims or not all(size > 0 for size in x.shape) \
            or not all((size is None and dims > 1) or (type(size) is int and size > 0)
                       for size in wanted):
        return None
    return (*x.shape[:-dims], *(size if out is None else out
                                for size, out in zip(x.shape[-dims:], wanted, strict=True)))


def module_output_shape(module: nn.Module, x: MetaValue) -> tuple[int, ...] | None:
    """The output shape of common ``torch.nn`` layers computed from their sizes, with the
    error torch raises when the input does not fit; None to run the layer's meta kernel.
    (Meta kernels of convolutions, batch norm and adaptive pooling are Python: up to several
    milliseconds a call.)"""
    kind = type(module)
    weight = module._parameters.get("weight")  # no ``nn.Module.__getattr__`` call
    if isinstance(weight, torch.Tensor) and weight.dtype != x.dtype:
        return None
    if kind in _SAME_SHAPE:
        return tuple(x.shape)
    if kind in _BATCH_NORMS:
        if x.dim() not in _BATCH_NORMS[kind]:
            return None
        if x.shape[1] != module.num_features:
            raise RuntimeError(f"running_mean should contain {x.shape[1]} elements not "
                               f"{module.num_features}")
        return tuple(x.shape)
    if kind is nn.LayerNorm:
        normalized = tuple(module.normalized_shape)
        if tuple(x.shape[x.dim() - len(normalized):]) != normalized:
            return None
        return tuple(x.shape)
    if kind is nn.Linear and x.dim() >= 1:
        if x.shape[-1] != module.in_features:
            rows = math.prod(x.shape[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} "
                               f"and {module.in_features}x{module.out_features})")
        return (*x.shape[:-1], module.out_features)
    if kind in _CONVOLUTIONS:
        return _convolution(module, x, _CONVOLUTIONS[kind])
    if not x.is_floating_point():
        return None  # pooling kernels reject integers; meta kernels do not check
    if kind in _POOLS:
        return _pooling(module, x, _POOLS[kind])
    if kind in _ADAPTIVE_POOLS:
        return _adaptive_pooling(module, x, _ADAPTIVE_POOLS[kind])
    return None
