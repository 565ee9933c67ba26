"""Which tensors an instance built in a GPU's view holds on the GPU, and which ``model.to``
leaves on the CPU.

Built on meta, every tensor of an instance is alike. On a GPU, a tensor ``__init__`` asked for
CUDA (``torch.ones(8, device="cuda")``, ``.cuda()``, ``.to("cuda")``) is a CUDA tensor, and so
is what is computed from it; ``model.to("cuda")`` then moves parameters and buffers, and a
plain tensor attribute made on the default device stays on the CPU, where beside CUDA tensors
it is a device mismatch (but for a 0-dim one, a scalar to CUDA kernels). The view remembers the
first kind as they are made (``cuda_factories``, ``cuda_view``'s move of a meta tensor), and
fakes a plain attribute of the second kind on the CPU (``fake_device``, the export capture's
``fake``). Where a run then fails with a CUDA tensor beside a CPU one, and fails otherwise with
those attributes taken as moved, they are the cause: the class fails so on a GPU whatever its
inputs (``fails_by_held_tensor``), and the failure names them."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorConverter
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

#: The tensors made for CUDA, by identity (a ``WeakSet`` would compare tensors with ``==``,
#: which is elementwise); the values say nothing.
_MADE_ON_CUDA: WeakIdKeyDictionary = WeakIdKeyDictionary()


def made_on_cuda(result: Any) -> Any:
    """``result``, its tensors remembered as made for CUDA."""
    for value in tree_flatten(result)[0]:
        if isinstance(value, torch.Tensor):
            _MADE_ON_CUDA[value] = True
    return result


def faked_on_cuda(stack: contextlib.ExitStack, device: torch.device) -> None:
    """While ``stack`` is open, a fake tensor mode fakes a meta tensor made for CUDA as a
    tensor of ``device``, where it fakes other meta tensors as meta ones: the tensors a module
    made for CUDA as it was imported (``cuda_factories.cuda_tensors_at_import``), which no
    instance holds and so nothing swaps, meet the run's CUDA tensors as on a GPU
    (``allow_non_fake_inputs``, dynamo's and torch.export's constants)."""
    original = FakeTensorConverter.from_real_tensor

    def from_real_tensor(self: FakeTensorConverter, fake_mode: Any, tensor: torch.Tensor,
                         *args: Any, **kwargs: Any) -> Any:
        fake = original(self, fake_mode, tensor, *args, **kwargs)
        if tensor.is_meta and tensor in _MADE_ON_CUDA and fake.device.type == "meta":
            fake.fake_device = device
        return fake

    stack.callback(setattr, FakeTensorConverter, "from_real_tensor", original)
    FakeTensorConverter.from_real_tensor = from_real_tensor  # type: ignore[method-assign]


def any_made_on_cuda(values: Any) -> bool:
    """Whether a tensor among ``values`` (a pytree) was made for CUDA."""
    return any(isinstance(value, torch.Tensor) and value in _MADE_ON_CUDA
               for value in tree_flatten(values)[0])


def held_on_cpu(tensor: torch.Tensor) -> bool:
    """Whether a tensor an instance holds outside its parameters and buffers stays on the CPU
    under ``model.to("cuda")`` and meets CUDA tensors as one: not made for CUDA, with at least
    one dimension."""
    return tensor.dim() > 0 and tensor not in _MADE_ON_CUDA


#: A device mismatch between a CUDA tensor and a CPU one, in torch's words (eager kernels'
#: "Expected all tensors to be on the same device", fake tensors' "found two different
#: devices").
_CUDA_BESIDE_CPU = re.compile(r"(same device|different devices).*(cuda.*cpu|cpu.*cuda)",
                              re.DOTALL)


def _held_on_cpu_by(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The plain tensor attributes of ``model`` and its submodules that ``model.to("cuda")``
    leaves on the CPU (``held_on_cpu``), by name (``table``, ``encoder.table``)."""
    return {f"{prefix}.{name}" if prefix else name: value
            for prefix, module in model.named_modules()
            for name, value in vars(module).items()
            if isinstance(value, torch.Tensor) and held_on_cpu(value)}


def fails_by_held_tensor(model: torch.nn.Module, error: BaseException,
                         again: Callable[[], object]) -> list[str]:
    """Where ``error`` (raised running ``model`` judged for a GPU) is a CUDA tensor meeting a
    CPU one, and ``again`` (the same run once more) does not raise such an error with
    ``model``'s CPU-held attributes taken as moved to the GPU: their names. Then they are the
    class's own failure on a GPU, on any inputs. Empty otherwise."""
    held = _held_on_cpu_by(model)
    if not held or not _CUDA_BESIDE_CPU.search(str(error)):
        return []
    for tensor in held.values():
        _MADE_ON_CUDA[tensor] = True
    try:
        again()
    except Exception as other:  # the model's own code may raise anything
        if _CUDA_BESIDE_CPU.search(str(other)):
            return []  # another tensor meets the CUDA ones on the CPU
    finally:
        for tensor in held.values():
            _MADE_ON_CUDA.pop(tensor, None)
    return list(held)


def held_note(held: list[str]) -> str:
    """What a failure of ``fails_by_held_tensor`` adds to torch's words, as fx-lsp's own
    (`` (fx-lsp: ...)``): which tensors, why, and the fix."""
    names = ", ".join(f"`{name}`" for name in held)
    return (f" (fx-lsp: {names} {'is a tensor' if len(held) == 1 else 'are tensors'} the "
            "module holds outside its parameters and buffers, which `model.to(\"cuda\")` "
            "leaves on the CPU: on a GPU this fails on any input; register each as a buffer, "
            "`self.register_buffer(name, tensor, persistent=False)`, so that it moves with "
            "the model)")
