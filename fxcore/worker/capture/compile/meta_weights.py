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

from contextlib import AbstractContextManager

import torch

from fxcore.worker.meta.swapped_tensors import swapped_tensors

#: The most weight elements a model built on the CPU is compiled with for real.
LARGEST_REAL_RUN = 1 << 20


def is_large(model: torch.nn.Module) -> bool:
    weights = (*model.parameters(), *model.buffers())
    return sum(tensor.numel() for tensor in weights if not tensor.is_meta) > LARGEST_REAL_RUN


def weights_on_meta(model: torch.nn.Module) -> AbstractContextManager[None]:
    """``model``'s CPU parameters, buffers and tensor attributes replaced by meta copies of
    the same dtype and shape while the block runs."""
    return swapped_tensors(model, lambda value, _attribute: None if value.is_meta
                           else torch.empty_like(value, device="meta"))
