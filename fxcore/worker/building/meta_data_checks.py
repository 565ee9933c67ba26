"""Tensors made from Python data on the meta device, checked as the CPU checks them.

On the meta device ``torch.tensor``, ``torch.as_tensor``, ``torch.asarray`` and
``Tensor.new_tensor`` take a shortcut (``internal_new_from_data`` in torch's
``tensor_new.cpp``: "If the device is Meta, take the shortcut" returns ``at::empty(sizes)``
before ``recursive_store``): the data's values are never read, so ``torch.as_tensor(None,
dtype=torch.float)`` or a ragged list make a meta tensor where the CPU raises ("must be real
number, not NoneType"). A constructor given such a value (a guessed or default ``sigma=None``)
would build on meta an instance that cannot exist, and its verdicts would be on nothing.

``DataCheckedOnCpu``, entered inside ``torch.device("meta")`` while a class is built, makes
each such tensor on the CPU first, from the same data, and lets the CPU's error through. No
weight is allocated: the data is Python's (a list, a number, a NumPy array, which
``as_tensor`` shares), already in memory, and the CPU copy is dropped at once. Data holding
tensors is left to torch: those are meta tensors, which the CPU cannot read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

#: The functions that build a tensor from their first argument's data.
_FROM_DATA: frozenset[Callable[..., Any]] = frozenset({torch.tensor, torch.as_tensor,
                                                       torch.asarray})
#: ``torch.as_tensor(data, dtype)`` may give its dtype by position; the others take it by name.
_POSITIONAL_DTYPE: frozenset[Callable[..., Any]] = frozenset({torch.as_tensor})
#: Options that say where, not what: the CPU copy is made without them.
_PLACEMENT = ("device", "pin_memory", "out")


class DataCheckedOnCpu(TorchFunctionMode):
    """Raises what the CPU raises for a tensor made from Python data the meta device would
    take without reading it."""

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _FROM_DATA and args and not _holds_tensor(args[0]):
            func(*args[:2 if func in _POSITIONAL_DTYPE else 1], **_on_cpu(kwargs))
        elif func is torch.Tensor.new_tensor and len(args) > 1 and not _holds_tensor(args[1]):
            torch.tensor(args[1], **{"dtype": args[0].dtype, **_on_cpu(kwargs)})
        return func(*args, **kwargs)


def _on_cpu(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**{name: value for name, value in kwargs.items() if name not in _PLACEMENT},
            "device": "cpu"}


def _holds_tensor(data: Any) -> bool:
    """Whether ``data`` is a tensor or a (nested) list or tuple holding one."""
    if isinstance(data, torch.Tensor):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_tensor(item) for item in data)
