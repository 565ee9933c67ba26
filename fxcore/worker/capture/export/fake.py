"""Fake CPU tensors for export: the built model's parameters, buffers and tensor attributes
and its example inputs, as tensors with a dtype, a shape and the device ``cpu`` but no data
(a class judged for a GPU has them on that device, attributes too: ``devices``).

Not meta tensors: a model built on meta mixes them with the CPU tensors its own code makes
(``torch.arange(n)``, ``torch.tensor([...])``), and torch.export then fails on a device
mismatch that real CPU inputs never meet. Faking the weights as CPU tensors keeps the run as
the user's, at the cost of no memory.

A plain tensor attribute (a table computed in ``__init__``, not a buffer) is a constant to
torch.export, which takes constants as they are instead of faking them in its own mode: a fake
tensor of fx-lsp's mode there fails export's check that every fake input shares one mode
(vit-pytorch's SimpleViT, whose sin-cos position table is such an attribute). Those become
zero-filled CPU tensors, as small as a table, and only a constant larger than
``LARGEST_REAL_CONSTANT`` elements stays fake.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import torch

from fxcore.model.container_spec import InputSpec, materialized
from fxcore.worker.capture.export.torch_hooks import FakeTensorMode, ShapeEnv
from fxcore.worker.devices.fake_device import judged_device, no_gradients
from fxcore.worker.devices.held_tensors import held_on_cpu
from fxcore.worker.meta.swapped_tensors import swapped_tensors

#: The most elements a meta tensor attribute is made real with (64 MB of float32).
LARGEST_REAL_CONSTANT = 1 << 24


def fake_inputs(mode: FakeTensorMode, specs: dict[str, InputSpec]) -> dict[str, Any]:
    """A fake tensor per input spec (a container of them for a container spec: torch.export
    takes it as a pytree), on the CPU or the GPU the class is judged for."""
    device = judged_device() or torch.device("cpu")
    with mode:
        return {name: materialized(spec, lambda leaf: torch.empty(
            leaf.shape, dtype=getattr(torch, leaf.dtype), device=device))
            for name, spec in specs.items()}


def new_mode() -> FakeTensorMode:
    """A fake mode with a shape environment, as torch.export makes its own."""
    return FakeTensorMode(shape_env=ShapeEnv())


def faked_weights(model: torch.nn.Module, mode: FakeTensorMode) -> AbstractContextManager[None]:
    """``model``'s parameters and buffers replaced by fake CPU tensors of the same dtype and
    shape, its meta tensor attributes by CPU tensors (see the module's docstring), and all put
    back after (other modes capture the same instance)."""

    device = judged_device()

    def fake(value: torch.Tensor, on: torch.device | None) -> torch.Tensor:
        with mode:
            return torch.empty(value.shape, dtype=value.dtype, device=on or "cpu")

    def replacement(value: torch.Tensor, attribute: bool) -> torch.Tensor | None:
        # On a GPU no real constant can be made: a class judged for one has its fake too,
        # but for a plain attribute ``model.to`` leaves on the CPU (``held_on_cpu``).
        if not attribute or (device is not None and not held_on_cpu(value)):
            return fake(value, device)
        if not value.is_meta:
            return None
        return torch.zeros(value.shape, dtype=value.dtype) \
            if value.numel() <= LARGEST_REAL_CONSTANT else fake(value, None)

    return swapped_tensors(model, replacement, gradients=no_gradients(device) is None)
