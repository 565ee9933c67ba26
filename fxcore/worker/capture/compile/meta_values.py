"""Values for meta tensors where eager Python needs one: at a graph break ``torch.compile``
runs the breaking instruction eagerly (``if x.sum() > 0``, ``x.item()``), which a meta tensor
cannot answer. While a capture runs, ``Tensor.__bool__``/``item``/``tolist``/``numpy`` give a
stand-in for meta tensors (true, one, a list or array of ones of its shape) and behave as
before for any other tensor; torch's ``nonzero`` on meta assumes every element is nonzero.
numpy is imported only when a meta tensor's ``.numpy()`` runs: torch does not need it, and
where it is not installed that call raises torch's own error, as it would on real data.

The stand-ins are ``torch._dynamo.disable``d: dynamo must neither trace them as user code nor
count them as breaks of their own.

A tensor made from Python data on meta (``torch.tensor([], device=x.device)``, as a
transformers ``DynamicCache`` starts its layers) never reaches a dispatch mode, so dynamo's
fake run of that node gives a plain meta tensor, which the next operation on fake tensors
refuses. While a capture runs, such a value of a fake run is made fake, as it is for every
other device.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode
from torch.utils._pytree import tree_map_only

_METHODS = ("__bool__", "item", "tolist", "numpy")
_TORCH_FOLDER = os.path.dirname(torch.__file__)


def _ones(tensor: torch.Tensor) -> Any:
    """One of ``tensor``'s dtype as a Python scalar (a bool tensor's is True)."""
    if tensor.dtype == torch.bool:
        return True
    return 1.0 if tensor.dtype.is_floating_point or tensor.dtype.is_complex else 1


def _nested_list(shape: tuple[int, ...], value: Any) -> Any:
    """What ``tolist`` gives for a tensor of ``shape`` filled with ``value``."""
    if not shape:
        return value
    return [_nested_list(shape[1:], value) for _ in range(shape[0])]


def _asking_line() -> tuple[str, int]:
    """The file and line of the code that asks a meta tensor for its truth: the innermost
    frame outside torch and this module."""
    frame = sys._getframe(2)
    while frame.f_back is not None and (frame.f_code.co_filename.startswith(_TORCH_FOLDER)
                                        or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def _stand_in(name: str, original: Callable[..., Any],
              asked: dict[tuple[str, int], int], notes: list[str]) -> Callable[..., Any]:
    def truth() -> bool:
        # True the first time a line asks, false after: a loop on tensor data (`while
        # x.abs().max() > 1`), which real data ends, runs once here instead of forever.
        place = _asking_line()
        asked[place] = asked.get(place, 0) + 1
        if asked[place] == 2:
            notes.append(f"On meta, the condition on tensor data at line {place[1]} was "
                         "assumed true the first time and false after, so a loop on it runs "
                         "once.")
        return asked[place] == 1

    def value(tensor: torch.Tensor) -> Any:
        if name == "__bool__":
            return truth()
        if name == "item":
            return _ones(tensor)
        if name == "tolist":
            return _nested_list(tuple(tensor.shape), _ones(tensor))
        # numpy is no dependency of torch or fx-lsp: without it, ``Tensor.numpy`` raises as
        # torch's own does ("Numpy is not available"), which is what the code would meet.
        try:
            import numpy
        except ImportError:
            return original(tensor)
        return numpy.full(tuple(tensor.shape), _ones(tensor))

    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_meta:
            return original(self, *args, **kwargs)
        try:
            return value(self)
        except ImportError:
            # No numpy: torch's own "Numpy is not available" is what real data would get.
            return original(self, *args, **kwargs)

    method.__name__ = name
    return torch._dynamo.disable(method)


def _fake_meta_constants(run_node: Callable[..., Any]) -> Callable[..., Any]:
    """``run_node`` whose plain meta tensors, in a fake run, are fake ones."""
    fake_tensor = importlib.import_module("torch._subclasses.fake_tensor")

    def run(*args: Any, **kwargs: Any) -> Any:
        value = run_node(*args, **kwargs)
        mode = _get_current_dispatch_mode()
        if not isinstance(mode, fake_tensor.FakeTensorMode):
            return value
        return tree_map_only(
            torch.Tensor,
            lambda tensor: (mode.from_tensor(tensor)
                            if tensor.is_meta and not isinstance(tensor, fake_tensor.FakeTensor)
                            else tensor),
            value)

    return run


@contextlib.contextmanager
def _fake_runs_of_meta_data() -> Iterator[str | None]:
    """Dynamo's fake runs make meta tensors of Python data fake; yields why not, if not."""
    utils = importlib.import_module("torch._dynamo.utils")
    run_node = getattr(utils, "run_node", None)
    if not callable(run_node):
        yield "dynamo's utils.run_node is missing: a meta tensor made from Python data " \
              "may stop the compile"
        return
    utils.run_node = _fake_meta_constants(run_node)
    try:
        yield None
    finally:
        utils.run_node = run_node


@contextlib.contextmanager
def meta_values() -> Iterator[list[str]]:
    """The stand-ins installed; yields what could not be set up (each with its reason), and
    later what was assumed (a loop on tensor data run once)."""
    missing: list[str] = []
    originals = {name: getattr(torch.Tensor, name) for name in _METHODS}
    # Some are torch.Tensor's own, others inherited from torch._C.TensorBase.
    own = {name: torch.Tensor.__dict__[name] for name in _METHODS
           if name in torch.Tensor.__dict__}
    with contextlib.ExitStack() as stack:
        try:
            config = importlib.import_module("torch.fx.experimental._config")
            stack.enter_context(config.patch(meta_nonzero_assume_all_nonzero=True))
        except (ImportError, AttributeError, TypeError) as error:
            missing.append(f"nonzero on meta tensors is not assumed nonzero ({error})")
        not_faked = stack.enter_context(_fake_runs_of_meta_data())
        if not_faked is not None:
            missing.append(not_faked)
        asked: dict[tuple[str, int], int] = {}
        try:
            for name, original in originals.items():
                setattr(torch.Tensor, name, _stand_in(name, original, asked, missing))
            yield missing
        finally:
            for name in _METHODS:
                if name in own:
                    setattr(torch.Tensor, name, own[name])
                else:
                    delattr(torch.Tensor, name)
