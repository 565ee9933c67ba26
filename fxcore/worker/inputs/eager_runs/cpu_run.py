"""A last eager run of a small model on real CPU tensors, for where the run on meta (or fake)
tensors stopped for want of data (``meta_limits``): an operation only real data answers
(``repeat_interleave`` of counts) may be refused on the CPU by what the inputs fx-lsp guessed
hold (float counts), which no meta kernel checks. ``own_choices`` asks it whether such inputs
reach the line a capture failed at.

Only a model of at most ``MAX_ELEMENTS`` weight elements runs: a copy of it, its meta weights
given memory on the CPU and zeroed, so that the class's own instance and its weights stay as
they are, and no large model ever takes real memory. Inputs are tiny: random floats, zeros of
integers and masks (an index every dimension takes). It runs user code, so only ever inside
a worker child."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

import torch

from fxcore.model.container_spec import InputSpec, materialized
from fxcore.worker.running.time_limit import time_limit

#: The most weight elements (parameters and buffers) a model copied to the CPU may hold.
MAX_ELEMENTS = 1 << 20


def cpu_copy(model: torch.nn.Module) -> torch.nn.Module | None:
    """A copy of ``model`` on the CPU, its meta weights zeroed; None where it holds more than
    ``MAX_ELEMENTS`` weight elements, or cannot be copied."""
    weights = list(itertools.chain(model.parameters(), model.buffers()))
    if sum(weight.numel() for weight in weights) > MAX_ELEMENTS:
        return None
    try:
        copied = copy.deepcopy(model)
        if any(weight.is_meta for weight in weights):
            copied.to_empty(device="cpu")
            with torch.no_grad():
                for weight in itertools.chain(copied.parameters(), copied.buffers()):
                    weight.zero_()
    except Exception:  # user objects may refuse a copy or a move: no run then
        return None
    return copied


def _tensor(spec: Any) -> torch.Tensor:
    dtype = getattr(torch, spec.dtype)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(spec.shape, dtype=dtype)
    return torch.zeros(spec.shape, dtype=dtype)


def run_on_cpu(model: torch.nn.Module, specs: Mapping[str, InputSpec],
               concrete_args: dict[str, Any], seconds: float) -> None:
    """Call ``model`` (a ``cpu_copy``) once on real CPU tensors of ``specs`` and
    ``concrete_args``; raises what it raises, or ``OutOfTime`` after ``seconds``."""
    with torch.no_grad(), time_limit(seconds):
        model(**{name: materialized(spec, _tensor) for name, spec in specs.items()},
              **copy.deepcopy(concrete_args))
