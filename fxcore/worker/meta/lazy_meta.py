"""Meta values known by dtype and shape alone, and their short descriptions: what the shape
rules compute and what a graph's shape facts show."""

from __future__ import annotations

from typing import Any

import torch

from fxcore.model.tensor_spec import TensorSpec


class LazyMetaTensor:
    """A meta tensor known by its dtype and shape alone: what an operation computed from shapes
    returns. Making a real meta tensor costs more than the rest of a node's bookkeeping (about
    5 us); one is made only when an operation without a shape rule takes this value. Has the
    few members of ``torch.Tensor`` the shape rules read."""

    __slots__ = ("_tensor", "dtype", "shape")
    is_meta = True

    def __init__(self, shape: Any, dtype: torch.dtype) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self._tensor: torch.Tensor | None = None

    def dim(self) -> int:
        return len(self.shape)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def tensor(self) -> torch.Tensor:
        if self._tensor is None:
            self._tensor = torch.empty(self.shape, dtype=self.dtype, device="meta")
        return self._tensor


#: What the shape rules read shapes and dtypes from.
MetaValue = torch.Tensor | LazyMetaTensor


def real(value: Any) -> Any:
    return value.tensor() if type(value) is LazyMetaTensor else value


def is_meta(value: Any) -> bool:
    return type(value) is LazyMetaTensor or (isinstance(value, torch.Tensor) and value.is_meta)


_DESCRIBED: dict[tuple[torch.dtype, tuple[int, ...]], str] = {}


def describe(value: Any) -> str | None:
    """``float32[2, 64]``, ``(float32[2], int64[2, 3])`` for tuples; None without tensors."""
    if isinstance(value, (torch.Tensor, LazyMetaTensor)):
        key = (value.dtype, tuple(value.shape))
        text = _DESCRIBED.get(key)
        if text is None:  # a graph repeats a few shapes many times over
            text = _DESCRIBED[key] = str(TensorSpec(str(value.dtype).removeprefix("torch."),
                                                    tuple(value.shape)))
        return text
    if isinstance(value, (tuple, list)) and value:
        parts = [describe(item) for item in value]
        if any(parts):
            return "(" + ", ".join(part or "-" for part in parts) + ")"
    return None
