"""``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` on fake CUDA tensors run as a GPU runs them, with no
driver reached.

Their operators (``aten::lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``, on padded input and on
packed ``data``) are composites. On CUDA tensors a CUDA build's C++ composite takes cuDNN's
path wherever cuDNN accepts the input (``aten/src/ATen/native/RNN.cpp``:
``at::cudnn_is_acceptable``, then ``lstm_cudnn_stub`` and friends), and cuDNN's path asks for a
cuDNN handle of the current device (``native/cudnn/RNN.cpp``, ``try_get_weight_buf``), which
calls the CUDA runtime: without a driver, "CUDA driver version is insufficient for CUDA runtime
version" in a fake run's eager code (compile's code after a graph break at the module, the
search for inputs). A CPU-only build has no cuDNN and takes torch's cell-by-cell composite.

In the view these operators on CUDA tensors (``AutogradCUDA``) run a composite that needs no
cuDNN, whose fake results have the shapes and dtypes cuDNN's ``_cudnn_rnn`` gives on an H100
(its meta function's), on both builds:

- ``lstm``: torch's C++ composite with cuDNN turned off for the call, the path a CPU-only build
  takes (cell by cell, ``_thnn_fused_lstm_cell`` on CUDA, which has a meta function). Not the
  Python decomposition: torch 2.10's ``lstm_impl`` returns hidden states of a wrong shape for
  batches over one (``squeeze(1)``, fixed later).
- ``gru``, ``rnn_tanh``, ``rnn_relu``: torch's Python decomposition
  (``torch/_decomp/decompositions.py``). Not the C++ composite: its CUDA GRU cell,
  ``_thnn_fused_gru_cell``, has no meta function, and fake tensors run it for real.

Under the Python dispatcher (torch.export's and dynamo's tracing), where a GPU's torch takes
the Python decomposition, every operator takes it here too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch._C import DispatchKey

from fxcore.worker.devices.cuda_kernels import register_on_cuda

#: The recurrent operators whose C++ composite chooses cuDNN on CUDA tensors.
RECURRENT_OPERATORS = ("lstm.input", "lstm.data", "gru.input", "gru.data",
                       "rnn_tanh.input", "rnn_tanh.data", "rnn_relu.input", "rnn_relu.data")


def _without_cudnn(operator: Any) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        # Under the Python dispatcher (torch.export's tracing) a GPU's torch takes the Python
        # decomposition, which this registration would otherwise stand in front of.
        decomposition = operator.py_kernels.get(DispatchKey.CompositeImplicitAutograd)
        if decomposition is not None and torch._C._dispatch_tls_is_dispatch_key_included(
                DispatchKey.PythonDispatcher):
            return decomposition(*args, **kwargs)
        enabled = torch._C._get_cudnn_enabled()
        torch._C._set_cudnn_enabled(False)
        try:
            return operator._op_dk(DispatchKey.CompositeImplicitAutograd, *args, **kwargs)
        finally:
            torch._C._set_cudnn_enabled(enabled)
    return run


def _decomposed(operator: Any) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        return operator.py_kernels[DispatchKey.CompositeImplicitAutograd](*args, **kwargs)
    return run


def _kernel(name: str, operator: Any) -> Callable[..., Any] | None:
    """What ``operator`` runs on CUDA tensors in the view (the module's docstring), if this
    torch has it."""
    if name.startswith("lstm."):
        if callable(getattr(operator, "_op_dk", None)) \
                and callable(getattr(torch._C, "_set_cudnn_enabled", None)) \
                and torch._C._dispatch_has_kernel_for_dispatch_key(
                    operator.name(), DispatchKey.CompositeImplicitAutograd):
            return _without_cudnn(operator)
        return None
    if DispatchKey.CompositeImplicitAutograd in getattr(operator, "py_kernels", {}):
        return _decomposed(operator)
    return None


def run_without_cudnn_on_cuda(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, the recurrent operators on CUDA tensors run a composite
    without cuDNN (the module's docstring); why not, where this torch cannot (nothing is
    registered then, and the CUDA build reaches the runtime where cuDNN accepts the input)."""
    kernels = []
    for name in RECURRENT_OPERATORS:
        packet, overload = name.split(".")
        operator = getattr(getattr(torch.ops.aten, packet, None), overload, None)
        kernel = None if operator is None else _kernel(name, operator)
        if kernel is None:
            return f"this torch has no composite of aten::{name} to run without cuDNN"
        kernels.append((name, kernel))
    try:
        register_on_cuda(stack, kernels)
    except (RuntimeError, AttributeError, TypeError) as refused:
        return ("recurrent layers on a GPU are not run without cuDNN on this torch "
                f"({type(refused).__name__}: {refused})")
    return None

