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
failed (FX101) where a GPU builds the class. Those tensors, and what is computed from them,
are remembered (``held_tensors``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fxcore.worker.devices import cuda_view
from fxcore.worker.devices.held_tensors import any_made_on_cuda, made_on_cuda

META = torch.device("meta")


class _CudaOnMeta(TorchFunctionMode):
    """Calls whose ``device`` keyword names a CUDA device run on meta; with ``remember``, the
    tensors they give, and those computed from tensors made for CUDA, are remembered
    (``held_tensors``; ``.cuda()`` and ``.to("cuda")`` are ``cuda_view``'s to remember)."""

    def __init__(self, remember: bool = False) -> None:
        super().__init__()
        self.remember = remember

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        asked = _is_cuda(kwargs.get("device"))
        if asked:
            kwargs["device"] = META
        if not self.remember:
            return func(*args, **kwargs)
        asked = asked or any_made_on_cuda((args, kwargs))
        result = func(*args, **kwargs)
        return made_on_cuda(result) if asked else result


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
    with _CudaOnMeta(remember=True):
        yield
