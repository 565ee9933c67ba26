"""A model's tensors swapped for others while a capture runs, and put back after: other modes
capture the same instance. Export swaps its weights for fake tensors (``export/fake.py``),
compile a large CPU-built model's for meta copies (``compile/meta_weights.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

#: Given a tensor of the model and whether it is a plain attribute (not a parameter or a
#: buffer), the tensor to put in its place, or None to leave it.
Replacement = Callable[[torch.Tensor, bool], "torch.Tensor | None"]


@contextmanager
def swapped_tensors(model: torch.nn.Module, replacement: Replacement,
                    gradients: bool = True) -> Iterator[None]:
    """Every parameter, buffer and tensor attribute of ``model`` and its submodules that
    ``replacement`` gives another tensor for replaced by it (a parameter by a parameter, with
    the same ``requires_grad``, or none without ``gradients``) while the block runs."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for module in model.modules():
            for table, attribute in ((module._parameters, False), (module._buffers, False),
                                     (vars(module), True)):
                for name, value in list(table.items()):
                    if not isinstance(value, torch.Tensor):
                        continue
                    swapped = replacement(value, attribute)
                    if swapped is None:
                        continue
                    saved.append((table, name, value))
                    table[name] = torch.nn.Parameter(swapped, value.requires_grad and gradients) \
                        if isinstance(value, torch.nn.Parameter) else swapped
        yield
    finally:
        for table, name, value in reversed(saved):
            table[name] = value
