"""CUDA tensors that torch.fx makes eagerly, made on meta in a GPU's view (issue 47, item 6).

torch.fx runs a call none of whose arguments is traced (``torch.arange(8, device="cuda")``,
``torch.ones(8, device=self.device)`` with a device picked by ``torch.cuda.is_available()``)
as Python does and keeps its tensor as a constant of the graph. On a GPU that makes a CUDA
tensor; with no GPU, torch's CUDA kernel is the driver's (a CUDA build) or missing (a CPU
build), so the trace of a class written for a GPU stopped at its first such call (FX105).
While a class judged for a GPU is traced, a call that asks for a CUDA device by its
``device`` argument gets the meta device instead: the tensor has the shape and dtype the GPU's
would, no data, and the graph is the one a GPU's trace gives, its constant on meta where the
GPU's is on CUDA. The export and compile captures need none of this: they run in a fake mode
whose tensors are CUDA's already (``cuda_view``).

The same holds while the instance is built (``cuda_factories_at_build``): ``torch.ones(8,
device="cuda")`` or ``.cuda()`` in ``__init__`` made a real CUDA tensor, and the constructor
failed (FX101) where a GPU builds the class. Built on meta, every tensor is alike, so those
tensors, and what is computed from them, are remembered (``made_on_cuda``): a tensor held
outside parameters and buffers that is not one of them was made on the default device, the
CPU, and ``model.to("cuda")`` leaves it there (``held_on_cpu``); on a GPU it meets CUDA tensors
as a CPU tensor (a device mismatch, but for a 0-dim one).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from fxcore.worker.devices import cuda_view

META = torch.device("meta")


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


#: The tensors made for CUDA while an instance was built, and those computed from them.
_MADE_ON_CUDA = _Tensors()


class _CudaOnMeta(TorchFunctionMode):
    """Calls whose ``device`` keyword names a CUDA device run on meta; with ``made``, also
    ``.cuda()`` and ``.to(cuda)``, and the tensors they give, or that are computed from
    tensors in ``made``, are added to it."""

    def __init__(self, made: _Tensors | None = None) -> None:
        super().__init__()
        self.made = made

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        asked = _is_cuda(kwargs.get("device"))
        if asked:
            kwargs["device"] = META
        if self.made is None:
            return func(*args, **kwargs)
        if func is torch.Tensor.cuda or (func is torch.Tensor.to and any(
                _is_cuda(arg) for arg in args[1:])):
            asked, result = True, args[0]  # already on meta, as the GPU's copy would be
        else:
            flat, _ = tree_flatten((args, kwargs))
            asked = asked or any(isinstance(value, torch.Tensor) and value in self.made
                                 for value in flat)
            result = func(*args, **kwargs)
        if asked:
            for value in tree_flatten(result)[0]:
                if isinstance(value, torch.Tensor):
                    self.made.add(value)
        return result


def _is_cuda(device: Any) -> bool:
    if isinstance(device, str):
        return device.split(":")[0] == "cuda"
    return isinstance(device, torch.device) and device.type == "cuda"


@contextlib.contextmanager
def cuda_factories_on_meta() -> Iterator[None]:
    """The mode while the block runs, in a GPU's view (a class judged for one); nothing
    otherwise."""
    if not cuda_view.active():
        yield
        return
    with _CudaOnMeta():
        yield


@contextlib.contextmanager
def cuda_factories_at_build() -> Iterator[None]:
    """While an instance is built in a GPU's view: tensors asked for CUDA are made on meta and
    remembered (the module's docstring); nothing otherwise."""
    if not cuda_view.active():
        yield
        return
    with _CudaOnMeta(_MADE_ON_CUDA):
        yield


def held_on_cpu(tensor: torch.Tensor) -> bool:
    """Whether a tensor an instance holds outside its parameters and buffers stays on the CPU
    under ``model.to("cuda")`` and meets CUDA tensors as one: made on the default device, not
    for CUDA, with at least one dimension (a 0-dim CPU tensor is a scalar to CUDA kernels)."""
    return tensor.dim() > 0 and tensor not in _MADE_ON_CUDA
