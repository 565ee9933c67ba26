"""Sizes the data decides, in fx-lsp's eager runs on fake tensors of a device (a class judged
for a GPU): as the same runs on meta tensors give them.

Judged for the CPU, a class runs eagerly on meta tensors (the search for its inputs, the code
``torch.compile`` runs between graphs), where ``torch.nonzero``, a boolean mask and the
operators built on them assume every element is nonzero (``values_read``): a concrete size, so
``if found.shape[0] > 3`` runs as it would on data. On fake tensors those sizes are unknown
symbols (or, without a shape environment, an error), and a Python condition on one stops the
run, so a class judged for a GPU got "does not fit" or another input where the CPU's judgement
went on. While ``data_sized_outputs`` is active, an operator whose fake result has a size the
data decides is run once more on meta tensors of the same shapes, and where the meta kernel
answers, its sizes are the result's, as fake tensors of the arguments' mode and device. Where
it does not (``torch.bincount``, ``repeat_interleave`` by counts: no meta kernel), torch's own
CPU kernel runs on zero-filled tensors of the same shapes (``refused_kernels``' retry, what
FakeTensorMode's fallback does for an operator without a fake kernel), and its sizes are the
result's: the code after a graph break at such an operator is compiled with concrete sizes, as
real torch compiles it after running the operator. Before, the fake result's unknown sizes
stood, and dynamo, guarding on them in the code after the break, failed ("Could not extract
specialized integer from data-dependent expression": an FX502 where an H200 with torch 2.11
gives the break alone, benchmarks/gpu/answers/). Where the CPU kernel refuses too, the fake
result stands.

Like ``refused_kernels``'s mode (both are ``EagerCodeMode``s), it ignores compile internals:
what dynamo and torch.export trace keeps torch's own symbolic sizes, which is what real torch
reports on a GPU too.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensor
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_flatten, tree_map

from fxcore.worker.meta.eager_code_mode import EagerCodeMode
from fxcore.worker.meta.refused_kernels import LARGEST_RETRY, on_zero_cpu_tensors


def _concrete(tensor: torch.Tensor) -> bool:
    return not any(isinstance(size, torch.SymInt) for size in (*tensor.shape, *tensor.stride()))


def _data_sized(result: Any) -> bool:
    """Whether a tensor of ``result`` has a size only the data decides."""
    flat, _ = tree_flatten(result)
    return any(isinstance(value, torch.Tensor) and free_unbacked_symbols(value)
               for value in flat)


def _on_meta(func: Any, args: Any, kwargs: Any) -> Any:
    """``func``'s result on meta tensors like its fake arguments, as fake tensors of their
    mode and device; None where an argument's size is symbolic or the meta kernel refuses."""
    flat, _ = tree_flatten((args, kwargs))
    fakes = [value for value in flat if isinstance(value, FakeTensor)]
    if not fakes or not all(_concrete(tensor) for tensor in fakes):
        return None
    like = fakes[0]

    def meta(value: Any) -> Any:
        if not isinstance(value, FakeTensor):
            return value
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                   device="meta")

    meta_args, meta_kwargs = tree_map(meta, (args, kwargs))
    with no_dispatch(), _all_nonzero():
        try:
            result = func(*meta_args, **meta_kwargs)
        except Exception:  # no meta kernel, or one that refuses: the fake result stands
            return None

    def back(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        return like.fake_mode.fake_tensor_converter.from_meta_and_device(
            like.fake_mode, value, like.fake_device)

    return tree_map(back, result)


@contextlib.contextmanager
def _all_nonzero() -> Iterator[None]:
    """torch's meta ``nonzero`` assumes every element nonzero (refuses otherwise)."""
    try:
        config = importlib.import_module("torch.fx.experimental._config")
        patch = config.patch(meta_nonzero_assume_all_nonzero=True)
    except (ImportError, AttributeError, TypeError):
        yield
        return
    with patch:
        yield


def _on_zeros(func: Any, args: Any, kwargs: Any) -> Any:
    """``func``'s result on zero-filled CPU tensors like its fake arguments, as fake tensors of
    their mode and device; None where a size is symbolic, the tensors are large, the operator
    is not torch's own, or the CPU kernel refuses."""
    flat, _ = tree_flatten((args, kwargs))
    fakes = [value for value in flat if isinstance(value, FakeTensor)]
    if not fakes or not all(_concrete(tensor) for tensor in fakes) \
            or getattr(func, "namespace", None) not in ("aten", "prims") \
            or sum(t.numel() * t.element_size() for t in fakes) > LARGEST_RETRY:
        return None
    return on_zero_cpu_tensors(func, args, kwargs)


def _concrete_sizes(func: Any, args: Any, kwargs: Any) -> Any:
    """Meta's sizes for a result the data sizes, else those of zero data; None for neither."""
    on_meta = _on_meta(func, args, kwargs)
    return on_meta if on_meta is not None else _on_zeros(func, args, kwargs)


class _DataSizedOutputs(EagerCodeMode):
    """See the module's docstring."""

    def handle(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        try:
            result = func(*args, **kwargs)
        except DynamicOutputShapeException:
            concrete = _concrete_sizes(func, args, kwargs)
            if concrete is None:
                raise
            return concrete
        if not _data_sized(result):
            return result
        concrete = _concrete_sizes(func, args, kwargs)
        return result if concrete is None else concrete


@contextlib.contextmanager
def data_sized_outputs() -> Iterator[None]:
    """While active, sizes the data decides are meta's (see the module's docstring)."""
    with _DataSizedOutputs():
        yield
