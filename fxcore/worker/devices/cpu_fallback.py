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

torch.export's tracer also runs real kernels: it keeps a real copy of each small constant
(``torch.tensor([], device=x.device)``) and runs an operator whose inputs are all constants on
those copies too (torch/fx/experimental/proxy_tensor.py, ``proxy_call``, under
``unset_fake_temporarily``), so a constant moved to CUDA was a real CUDA tensor. In the view
those runs put on the CPU what they would put on CUDA: the copies are read only for their
values (``.item()``, ``tolist``), which the CPU gives alike; the traced tensors stay fake CUDA.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental import proxy_tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

CPU = torch.device("cpu")
NO_FALLBACK = ("operators without a fake kernel (torch.geqrf, to_sparse) on CUDA tensors fail "
               "here where a GPU runs them")
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
        return (f"{NO_FALLBACK}: this torch's fake tensors have no run_fallback_kernel to "
                "run on the CPU")
    if tuple(inspect.signature(original).parameters) != FALLBACK_PARAMETERS:
        return (f"{NO_FALLBACK}: this torch's run_fallback_kernel takes other arguments "
                "than those known")
    stack.callback(setattr, fake_tensor, "run_fallback_kernel", original)
    # Called by fake tensors' dispatch, as torch's own is: dynamo must not compile it as the
    # user's code (torch 2.10 traces into the dispatch of the eager code it runs).
    fake_tensor.run_fallback_kernel = torch._dynamo.disable(_on_cpu(original, cuda))
    return None


class _CudaOnCpu(TorchDispatchMode):
    """Real kernels asked for CUDA run on the CPU."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        def on_cpu(value: Any) -> Any:
            return CPU if isinstance(value, torch.device) and value.type == "cuda" else value

        return func(*tree_map(on_cpu, args), **tree_map(on_cpu, kwargs or {}))


def _unset_fake_on_cpu(original: Callable[..., Any]) -> Callable[..., Any]:
    @contextlib.contextmanager
    def unset_fake_temporarily() -> Iterator[Any]:
        with original() as fake_mode, _CudaOnCpu():
            yield fake_mode
    return unset_fake_temporarily


def copy_constants_on_cpu(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, torch.export's real copies of constants are made on the CPU
    (the module's docstring); why not, where this torch's tracer makes them otherwise."""
    original = getattr(proxy_tensor, "unset_fake_temporarily", None)
    if not callable(original):
        return ("torch.export of a constant put on CUDA (torch.tensor(data, device=x.device)) "
                "fails here where a GPU traces it: this torch's tracer has no "
                "unset_fake_temporarily to copy constants on the CPU")
    stack.callback(setattr, proxy_tensor, "unset_fake_temporarily", original)
    proxy_tensor.unset_fake_temporarily = _unset_fake_on_cpu(original)
    return None
