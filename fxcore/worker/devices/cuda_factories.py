"""CUDA tensors that torch.fx makes eagerly, made on meta in a GPU's view: no CUDA runtime.

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

And while the file of such a class is imported (``cuda_tensors_at_import``): a module-level
``MASK = torch.ones(4, device="cuda")``, or a default argument ``bias=torch.zeros(2).cuda()``,
made a real CUDA tensor in the worker, which on a CUDA build loads and initialises the driver
("Found no NVIDIA driver") and on a CPU build has no kernel. They are made on meta and
remembered, as in ``__init__``, and a run's fake tensor mode fakes them as CUDA tensors
(``held_tensors.faked_on_cuda``), so that the class gets the verdicts a GPU gives. A CUDA
generator is the view's own (``cuda_generators``). Anything else that would initialise CUDA
during the import (``torch.cuda.FloatTensor(4)``, ``torch.set_default_device("cuda")`` then a
factory) is refused, with a reason, instead of reaching the driver.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fxcore.worker.devices import cuda_view
from fxcore.worker.devices.accelerator_guard import lazy_init_bindings
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


class CudaAtImportError(RuntimeError):
    """A module imported in a GPU's view asked for CUDA itself, past the factories made on
    meta."""


def _refuse_at_import() -> None:
    raise CudaAtImportError(
        "this file initialises CUDA as it is imported (a CUDA tensor made at module level "
        "other than by a factory's `device` argument, `.cuda()` or `.to(\"cuda\")`): fx-lsp "
        "judges code written for a GPU without one and never initialises CUDA in its "
        "processes; make the tensor with `device=\"cuda\"` or in the class's `__init__`")


@contextlib.contextmanager
def cuda_tensors_at_import() -> Iterator[None]:
    """While the file of a class judged for a GPU is imported in its view: tensors asked for
    CUDA are made on meta and remembered, and CUDA's initialisation is refused (the module's
    docstring); nothing otherwise."""
    if not cuda_view.active():
        yield
        return
    bindings = lazy_init_bindings("cuda")
    originals = [getattr(module, attribute) for module, attribute in bindings]
    for module, attribute in bindings:
        setattr(module, attribute, _refuse_at_import)
    try:
        with _CudaOnMeta(remember=True):
            yield
    finally:
        for (module, attribute), original in zip(bindings, originals, strict=True):
            setattr(module, attribute, original)
