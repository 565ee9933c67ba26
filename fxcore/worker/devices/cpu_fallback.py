"""Operators with no fake or meta kernel (``torch.geqrf``, ``Tensor.to_sparse``) on fake CUDA
tensors run their real kernel on the CPU in the view, and give fake CUDA tensors.

FakeTensorMode runs such an operator's real kernel on zeros of its inputs' shapes, made on each
input's fake device (torch/_subclasses/fake_tensor.py, ``run_fallback_kernel``'s
``to_real_tensor``: ``torch.zeros_like(e, device=e.fake_device)``), and fakes the outputs. On
fake CUDA tensors that is a real CUDA tensor: a CUDA build without a GPU reaches the driver
("Found no NVIDIA driver"), a CPU-only build has no CUDA kernel ("Could not run
'aten::empty_strided' with arguments from the 'CUDA' backend"), where a GPU runs the kernel.

In the view, while the fallback runs, the CUDA inputs' fake device is the CPU, and the outputs
it makes anew are put on CUDA: the CPU kernel of these operators gives the shapes and dtypes
the CUDA one gives. An output that is an input stays that input, on its own device.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._pytree import tree_map

CPU = torch.device("cpu")
#: ``run_fallback_kernel``'s parameters in the releases whose fallback this module wraps.
FALLBACK_PARAMETERS = ("fake_mode", "func", "flat_args", "args_spec",
                       "orig_not_implemented_exception")


def _on_cpu(original: Callable[..., Any], cuda: torch.device) -> Callable[..., Any]:
    def run(fake_mode: Any, func: Any, flat_args: Sequence[object], args_spec: Any,
            error: RuntimeError) -> Any:
        moved = [value for value in flat_args if isinstance(value, FakeTensor)
                 and fake_mode.is_our_fake(value) and value.fake_device.type == "cuda"]
        asked_cuda = [index for index, value in enumerate(flat_args)
                      if isinstance(value, torch.device) and value.type == "cuda"]
        if not moved and not asked_cuda:
            return original(fake_mode, func, flat_args, args_spec, error)
        devices = [(tensor, tensor.fake_device) for tensor in moved]
        on_cpu = [CPU if index in asked_cuda else value
                  for index, value in enumerate(flat_args)]
        for tensor in moved:
            tensor.fake_device = CPU
        try:
            result = original(fake_mode, func, on_cpu, args_spec, error)
        finally:
            for tensor, device in devices:
                tensor.fake_device = device
        # An output that is an input (CPU or CUDA) stays that input, on its own device.
        inputs = {id(value) for value in flat_args if isinstance(value, FakeTensor)}

        def to_cuda(value: Any) -> Any:
            if isinstance(value, FakeTensor) and id(value) not in inputs \
                    and value.fake_device.type == "cpu":
                value.fake_device = cuda
            return value

        return tree_map(to_cuda, result)
    return run


def run_fallback_on_cpu(stack: contextlib.ExitStack, cuda: torch.device) -> str | None:
    """While ``stack`` is open, FakeTensorMode's real-kernel fallback runs CUDA inputs on the
    CPU (the module's docstring); why not, where this torch's fallback is not the one known
    (it then makes real CUDA tensors, which only a GPU can)."""
    original = getattr(fake_tensor, "run_fallback_kernel", None)
    if not callable(original):
        return "this torch's fake tensors have no run_fallback_kernel to run on the CPU"
    if tuple(inspect.signature(original).parameters) != FALLBACK_PARAMETERS:
        return "this torch's run_fallback_kernel takes other arguments than those known"
    stack.callback(setattr, fake_tensor, "run_fallback_kernel", original)
    # Called by fake tensors' dispatch, as torch's own is: dynamo must not compile it as the
    # user's code (torch 2.10 traces into the dispatch of the eager code it runs).
    fake_tensor.run_fallback_kernel = torch._dynamo.disable(_on_cpu(original, cuda))
    return None
