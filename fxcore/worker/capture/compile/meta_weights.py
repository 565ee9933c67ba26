"""A large model built on the CPU compiled with its weights on meta.

A class whose constructor needs real values (``[x.item() for x in torch.linspace(...)]``) is
built on the CPU. Compiling calls the model, and the recording backend runs each captured
graph: on real weights that is the model's real computation, which for a large model takes
most of a class's time limit (vit-pytorch's CCT, 22 M weights on a 224-pixel image: 47 of
52 s on 2 cores). Above ``LARGEST_REAL_RUN`` weights, its parameters, buffers and tensor
attributes are meta copies while it compiles, and are put back after: the run is then one on
meta, with meta's stand-ins for values and its limits (FX503). A small model keeps its real
weights, and the values its forward reads from them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

#: The most weight elements a model built on the CPU is compiled with for real.
LARGEST_REAL_RUN = 1 << 20


def is_large(model: torch.nn.Module) -> bool:
    weights = (*model.parameters(), *model.buffers())
    return sum(tensor.numel() for tensor in weights if not tensor.is_meta) > LARGEST_REAL_RUN


@contextmanager
def weights_on_meta(model: torch.nn.Module) -> Iterator[None]:
    """``model``'s CPU parameters, buffers and tensor attributes replaced by meta copies of
    the same dtype and shape while the block runs."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for module in model.modules():
            for table in (module._parameters, module._buffers, vars(module)):
                for name, value in list(table.items()):
                    if not isinstance(value, torch.Tensor) or value.is_meta:
                        continue
                    saved.append((table, name, value))
                    meta = torch.empty_like(value, device="meta")
                    table[name] = torch.nn.Parameter(meta, value.requires_grad) \
                        if isinstance(value, torch.nn.Parameter) else meta
        yield
    finally:
        for table, name, value in reversed(saved):
            table[name] = value
