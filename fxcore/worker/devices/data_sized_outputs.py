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
answers, its sizes are the result's, as fake tensors of the arguments' mode and device; where
it does not (an operator without a meta kernel), the fake result stands.

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

from fxcore.worker.capture.eager_code_mode import EagerCodeMode


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


class _DataSizedOutputs(EagerCodeMode):
    """See the module's docstring."""

    def handle(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        try:
            result = func(*args, **kwargs)
        except DynamicOutputShapeException:
            on_meta = _on_meta(func, args, kwargs)
            if on_meta is None:
                raise
            return on_meta
        if not _data_sized(result):
            return result
        on_meta = _on_meta(func, args, kwargs)
        return result if on_meta is None else on_meta


@contextlib.contextmanager
def data_sized_outputs() -> Iterator[None]:
    """While active, sizes the data decides are meta's (see the module's docstring)."""
    with _DataSizedOutputs():
        yield
