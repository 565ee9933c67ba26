"""Which tensors an instance built in a GPU's view holds on the GPU, and which ``model.to``
leaves on the CPU.

Built on meta, every tensor of an instance is alike. On a GPU, a tensor ``__init__`` asked for
CUDA (``torch.ones(8, device="cuda")``, ``.cuda()``, ``.to("cuda")``) is a CUDA tensor, and so
is what is computed from it; ``model.to("cuda")`` then moves parameters and buffers, and a
plain tensor attribute made on the default device stays on the CPU, where beside CUDA tensors
it is a device mismatch (but for a 0-dim one, a scalar to CUDA kernels). The view remembers the
first kind as they are made (``cuda_factories``, ``cuda_view``'s move of a meta tensor), and
fakes a plain attribute of the second kind on the CPU (``fake_device``, the export capture's
``fake``)."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._pytree import tree_flatten


class _Tensors:
    """A set of live tensors by identity (a ``WeakSet`` compares tensors with ``==``, which is
    elementwise)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}

    def add(self, tensor: torch.Tensor) -> None:
        key = id(tensor)
        self._refs[key] = weakref.ref(tensor, lambda _ref: self._refs.pop(key, None))

    def __contains__(self, tensor: object) -> bool:
        ref = self._refs.get(id(tensor))
        return ref is not None and ref() is tensor


_MADE_ON_CUDA = _Tensors()


def made_on_cuda(result: Any) -> Any:
    """``result``, its tensors remembered as made for CUDA."""
    for value in tree_flatten(result)[0]:
        if isinstance(value, torch.Tensor):
            _MADE_ON_CUDA.add(value)
    return result


def any_made_on_cuda(values: Any) -> bool:
    """Whether a tensor among ``values`` (a pytree) was made for CUDA."""
    return any(isinstance(value, torch.Tensor) and value in _MADE_ON_CUDA
               for value in tree_flatten(values)[0])


def held_on_cpu(tensor: torch.Tensor) -> bool:
    """Whether a tensor an instance holds outside its parameters and buffers stays on the CPU
    under ``model.to("cuda")`` and meets CUDA tensors as one: not made for CUDA, with at least
    one dimension."""
    return tensor.dim() > 0 and tensor not in _MADE_ON_CUDA
