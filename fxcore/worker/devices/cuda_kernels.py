"""Python kernels of ATen operators for CUDA tensors (``AutogradCUDA``), registered while the
GPU view is entered and removed when it exits: what the view runs where a GPU's torch runs a
C++ kernel this machine cannot (``attention_choice``, ``recurrent_kernels``)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch


def register_on_cuda(stack: contextlib.ExitStack,
                     kernels: Sequence[tuple[str, Callable[..., Any]]]) -> None:
    """Register each ``(operator overload name, kernel)`` for ``AutogradCUDA`` until ``stack``
    closes; torch's own errors (a release without this registration) propagate."""
    library = torch.library.Library("aten", "IMPL")
    stack.callback(_unregister, library)
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": ours
        warnings.simplefilter("ignore", UserWarning)
        for name, kernel in kernels:
            # Only the dispatcher calls it, as it calls torch's C++ kernel on a GPU: dynamo,
            # whose frame callback sees every Python frame, must not compile it as user code.
            library.impl(name, torch._dynamo.disable(kernel), "AutogradCUDA")


def _unregister(library: Any) -> None:
    destroy = getattr(library, "_destroy", None)
    if callable(destroy):
        destroy()
