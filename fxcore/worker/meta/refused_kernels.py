"""The real kernel where a meta kernel refuses what it accepts, in fx-lsp's eager runs on
tensors without data (the search for inputs, a parent's run, the check of fx-lsp's own
choices, shape propagation over a pre-trace's graph, the code dynamo runs eagerly between the
graphs of a compile capture).

A meta kernel may be stricter than the kernel of the device the code runs on (torch 2.13's
``aten::_grouped_mm`` meta kernel asks for bfloat16 where the CPU kernel takes float32: the
experts of transformers' mixture-of-experts models), or missing where the device has one (a
CPU-only operator). Real torch runs those lines eagerly on the CPU; a run on meta or fake
tensors stops there, so every input tried is refused and the verdict is fx-lsp's choice of
device. While ``real_kernels`` is active, an operator that raises on tensors without data is
run once more, on zero-filled CPU tensors of the same shapes, dtypes and strides: where the
CPU kernel accepts them, its result's shape and dtype continue the run on meta (or fake)
tensors; where it refuses too, the error is the code's own and the first is raised. No error
message is read: the CPU kernel decides.

Not retried: operators whose result depends on the data (``nonzero``, a tensor's value:
``meta_values`` stands those in), that change a tensor's metadata in place, that take a device
(a copy to the CPU), or outside torch's own namespaces (user code may have side effects;
torch's fake tensors keep their own fallback to the same namespaces), tensors of any other
device (a class judged for a GPU), and operators whose tensors take more than
``LARGEST_RETRY`` bytes. One exception about values: a 0-d tensor used as an index reads its
value in C++ (``_local_scalar_dense``), which the Python stand-ins of ``meta_values`` answer
as they answer ``.item()``.

What a capture traces never runs under it: torch.export and dynamo run meta kernels on real
inputs too, so there the refusal is real torch's verdict (a float32 grouped matmul fails
real export and compile). Dynamo compiles while a mode that ignores compile internals is
active (``ignore_compile_internals``), which then sees only the code dynamo runs eagerly;
without that hook (``torch_hooks.eager_code_modes``), compile's eager code runs without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_flatten, tree_map

from fxcore.worker.meta import meta_limits
from fxcore.worker.meta.eager_code_mode import EagerCodeMode

#: The most bytes of tensors an operator is run with on the CPU (zero-filled memory).
LARGEST_RETRY = 1 << 28
#: torch's own namespaces, as its fake tensors' fallback allows them (feature-detected).
_NAMESPACES = frozenset(getattr(FakeTensorMode, "_can_run_unsafe_fallback_allowed_namespaces",
                                ("aten", "prims")))
#: Operators a value of the data decides, or that change a tensor's metadata in place.
_NOT_RETRIED_TAGS = meta_limits.DATA_DECIDES_TAGS + tuple(
    getattr(torch.Tag, name) for name in ("inplace_view",) if hasattr(torch.Tag, name))
_CPU = torch.device("cpu")


def _no_data(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_meta or isinstance(value, FakeTensor))


def _device(tensor: torch.Tensor) -> torch.device:
    return tensor.fake_device if isinstance(tensor, FakeTensor) else tensor.device


def _retried(func: torch._ops.OpOverload, flat: list[Any]) -> bool:
    tensors = [value for value in flat if isinstance(value, torch.Tensor)]
    # One device: meta, or the CPU of fake tensors beside real CPU weights. A meta tensor
    # beside a CPU one is the collision ``eager_run`` answers on fake CPU tensors.
    devices = {_device(tensor).type for tensor in tensors}
    return (func.namespace in _NAMESPACES
            and not any(tag in func.tags for tag in _NOT_RETRIED_TAGS)
            and not any(isinstance(value, torch.device) for value in flat)
            and any(_no_data(tensor) for tensor in tensors)
            and devices in ({"meta"}, {"cpu"})
            and sum(tensor.numel() * tensor.element_size() for tensor in tensors)
            <= LARGEST_RETRY)


def _zeros(value: Any) -> Any:
    """A zero-filled CPU tensor like a tensor without data; anything else as it is."""
    if not _no_data(value):
        return value
    return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                               device=_CPU).zero_()


def on_zero_cpu_tensors(func: Any, args: Any, kwargs: Any) -> Any:
    """``func``'s result on zero-filled CPU tensors, as tensors like its arguments (meta,
    or fake of their mode); None where the CPU kernel refuses them too."""
    originals: dict[int, torch.Tensor] = {}

    def real(value: Any) -> Any:
        zeros = _zeros(value)
        if zeros is not value:
            originals[id(zeros)] = value
        return zeros

    with no_dispatch():
        real_args, real_kwargs = tree_map(real, (args, kwargs))
        try:
            result = func(*real_args, **real_kwargs)
        except Exception:  # the CPU kernel refuses too: the first error is the code's
            return None
    like = next(iter(originals.values()))

    def back(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in originals:  # an in-place or out= result is its argument
            return originals[id(value)]
        meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                   device="meta")
        if isinstance(like, FakeTensor):
            mode = like.fake_mode
            return mode.fake_tensor_converter.from_meta_and_device(mode, meta,
                                                                   like.fake_device)
        return meta

    return tree_map(back, result)


class _RealKernels(EagerCodeMode):
    """See the module's docstring."""

    def __init__(self) -> None:
        super().__init__()
        #: The operators run on the CPU, by name, in the order met.
        self.ran: list[str] = []

    def handle(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        try:
            return func(*args, **kwargs)
        except RuntimeError as refusal:  # NotImplementedError ("no meta kernel") is one
            if func is torch.ops.aten._local_scalar_dense.default and _no_data(args[0]):
                # The Python stand-in where one is active, else the same refusal.
                return torch.Tensor.item(args[0])
            flat, _ = tree_flatten((args, kwargs))
            if not _retried(func, flat):
                raise
            result = on_zero_cpu_tensors(func, args, kwargs)
            if result is None:
                raise refusal from None
            self.ran.append(func.name())
            return result


@contextlib.contextmanager
def real_kernels() -> Iterator[list[str]]:
    """While active, operators whose meta kernel refuses what the CPU kernel accepts run on
    the CPU (see the module's docstring); yields the names of those that did."""
    mode = _RealKernels()
    with mode:
        yield mode.ran
