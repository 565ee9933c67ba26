"""What a call of ``Tensor.to`` asks for, read the way torch reads it: for the stand-ins that
replace a tensor's move where the tensor has no data (``meta_values``: a meta tensor's copy to
the CPU) or the device has no hardware (``cuda_view``: a move to a GPU).

torch reads ``Tensor.to``'s arguments in C++; its Python reader of the same overloads is
``nn.Module.to``'s, ``torch._C._nn._parse_to``, which lacks ``copy`` (``Tensor.to``'s own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

_PARSE_TO = getattr(torch._C._nn, "_parse_to", None)
#: Why no move is read in this torch (each stand-in then leaves ``.to`` as torch's), or None.
MISSING = None if _PARSE_TO is not None else "torch._C._nn._parse_to is missing"


@dataclass(frozen=True)
class Move:
    """The arguments of one ``Tensor.to`` call; None where the call leaves them as they are."""

    device: torch.device | None
    dtype: torch.dtype | None
    non_blocking: bool
    memory_format: torch.memory_format | None
    copy: bool

    def goes_to(self, device_type: str) -> bool:
        """Whether the call moves the tensor to a device of ``device_type``."""
        return self.device is not None and self.device.type == device_type


def read_move(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Move | None:
    """``Tensor.to(*args, **kwargs)``'s arguments; None where ``MISSING`` says why, or where
    the reader refuses them: ones torch refuses too, and the few overloads ``Tensor.to`` has
    beyond ``nn.Module.to``'s (a device index alone, ``copy`` by position). A stand-in then
    leaves the call to torch's own ``to``, which moves the tensor or gives torch's own error."""
    if _PARSE_TO is None:
        return None
    try:
        device, dtype, non_blocking, memory_format = _PARSE_TO(
            *args, **{key: value for key, value in kwargs.items() if key != "copy"})
    except (TypeError, RuntimeError):
        return None
    return Move(device, dtype, bool(non_blocking), memory_format, bool(kwargs.get("copy")))
