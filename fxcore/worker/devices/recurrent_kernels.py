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

In the view these operators on CUDA tensors (``AutogradCUDA``) run torch's own Python
decomposition of the composite (``torch/_decomp/decompositions.py``: ``lstm_impl``,
``gru_impl``, ...), the one torch.export and dynamo trace through the Python dispatcher on a
GPU too. What it gives a fake run is what cuDNN's ``_cudnn_rnn`` gives on an H100 (its meta
function's shapes and dtypes), on both builds; on a real GPU the user's eager code would run
cuDNN, which this does not emulate beyond those shapes.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch._C import DispatchKey

#: The recurrent operators whose C++ composite chooses cuDNN on CUDA tensors.
RECURRENT_OPERATORS = ("lstm.input", "lstm.data", "gru.input", "gru.data",
                       "rnn_tanh.input", "rnn_tanh.data", "rnn_relu.input", "rnn_relu.data")


def _decomposition(operator: Any) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        return operator.decompose(*args, **kwargs)
    return run


def decompose_on_cuda(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, the recurrent operators on CUDA tensors run torch's Python
    decomposition; why not, where this torch has none for one of them (nothing is
    registered then, and the CUDA build reaches the runtime where cuDNN accepts the input)."""
    operators = []
    for name in RECURRENT_OPERATORS:
        packet, overload = name.split(".")
        operator = getattr(getattr(torch.ops.aten, packet, None), overload, None)
        # ``decompose`` falls back to the C++ composite (cuDNN's path) without a Python one.
        if operator is None or DispatchKey.CompositeImplicitAutograd not in operator.py_kernels:
            return f"this torch has no Python decomposition of aten::{name} to run on a GPU"
        operators.append((name, operator))
    try:
        library = torch.library.Library("aten", "IMPL")
        stack.callback(_unregister, library)
        with warnings.catch_warnings():  # "Overriding a previously registered kernel": ours
            warnings.simplefilter("ignore", UserWarning)
            for name, operator in operators:
                # Called by the dispatcher, as a GPU's C++ kernel is: dynamo must not compile
                # it as the user's code.
                library.impl(name, torch._dynamo.disable(_decomposition(operator)),
                             "AutogradCUDA")
    except (RuntimeError, AttributeError, TypeError) as refused:
        return ("recurrent layers on a GPU are not run without cuDNN on this torch "
                f"({type(refused).__name__}: {refused})")
    return None


def _unregister(library: Any) -> None:
    destroy = getattr(library, "_destroy", None)
    if callable(destroy):
        destroy()
