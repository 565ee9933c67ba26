"""The values of tensors the code makes from Python data (``torch.tensor([3, 5])``), kept for
the stand-ins of ``values_read``: on meta (or fake, past torch's one-element limit for the
constants it keeps) such a tensor has no data, and a stand-in of ones would split, index or
size by numbers the code never wrote, where real torch reads back the code's own. While
``literal_tensors()`` runs, each tensor ``torch.tensor``/``torch.as_tensor`` makes from plain
Python numbers is remembered with its data, and each small one ``torch.zeros``/``ones``/``full``
fills with a plain number; ``literal_of`` gives back what its ``tolist`` would.

Building a class runs under it too: a flag a constructor keeps as a buffer
(``register_buffer("initialized", torch.tensor(0))``) is read back as 0 by ``if not
self.initialized:``, as on the CPU, where a stand-in's "true" would take the other branch
than plain torch.fx on the CPU takes. A copy of such a tensor that fx-lsp makes itself (the
meta copy of a fake build) keeps its data (``carry_literal``), and so does a tensor fx-lsp's
own runs of ``forward`` wrote in place, once the instance is put back as built
(``kept_literals``): real torch traces a fresh instance.

A torch function mode sees the call; dynamo traces through the modes it finds on the stack,
so this one is entered only where nothing is being traced: building, the eager runs of the
search for inputs and the compile capture's runs of the graphs dynamo handed to its backend.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

#: The factories whose first argument is the tensor's data.
_FROM_DATA = (torch.tensor, torch.as_tensor)
#: The factories that fill a tensor of the sizes they are given with one number, and it.
_FILLED: dict[Any, Callable[[tuple[Any, ...]], Any]] = {
    torch.zeros: lambda args: 0, torch.ones: lambda args: 1,
    torch.full: lambda args: args[1] if len(args) > 1 else None}
#: The most elements a filled tensor's kept data has: a flag or a counter, not a weight.
_MOST_FILLED = 64
#: Tensors made from Python data while a ``literal_tensors()`` ran: their data, dtype and
#: version counter then.
_KEPT: WeakIdKeyDictionary = WeakIdKeyDictionary()


def _plain(data: Any) -> bool:
    """Python numbers, or (nested) lists and tuples of them: data with no tensor or
    symbolic number in it, whose values are the code's own."""
    return all(type(leaf) in (bool, int, float) for leaf in tree_flatten(data)[0])


def _filled(func: Any, args: tuple[Any, ...], result: torch.Tensor) -> Any | None:
    """The data ``result`` holds, where ``func`` filled it with a plain number and it is
    small (``_MOST_FILLED``); None otherwise."""
    number = _FILLED[func](args)
    if type(number) not in (bool, int, float) or result.numel() > _MOST_FILLED:
        return None
    data: Any = number
    for size in reversed(tuple(result.shape)):
        data = [data] * size
    return data


class _Recorder(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        result = func(*args, **(kwargs or {}))
        if not isinstance(result, torch.Tensor) or not (result.is_meta or is_fake(result)):
            return result
        if func in _FROM_DATA and args and _plain(args[0]):
            _KEPT[result] = (args[0], result.dtype, result._version)
        elif func in _FILLED and (data := _filled(func, args, result)) is not None:
            _KEPT[result] = (data, result.dtype, result._version)
        return result


@contextlib.contextmanager
def literal_tensors() -> Iterator[None]:
    """Remember the tensors made from Python data while the block runs."""
    with _Recorder():
        yield


def keeping_literals(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, each call run with ``literal_tensors()``."""
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with literal_tensors():
            return function(*args, **kwargs)

    return run


def keep_literal(tensor: torch.Tensor, data: Any) -> None:
    """Keep ``data`` (what ``tolist`` gives) as what ``tensor`` holds now."""
    _KEPT[tensor] = (data, tensor.dtype, tensor._version)


def carry_literal(source: torch.Tensor, copy: torch.Tensor) -> None:
    """Keep for ``copy`` (a tensor fx-lsp made to stand for ``source``, as it is) the data
    ``source`` was made from, where it has any."""
    known = literal_of(source)
    if known is not None:
        keep_literal(copy, known)


def kept_literals(tensors: list[torch.Tensor]) -> Callable[[], None]:
    """A function that gives each of ``tensors`` back the data it holds now (where it was made
    from Python data), after fx-lsp's own runs wrote it in place: what the capture after them
    reads is what a fresh instance holds."""
    known = [(tensor, literal_of(tensor)) for tensor in tensors if tensor._base is None]
    known = [(tensor, data) for tensor, data in known if data is not None]

    def put_back() -> None:
        for tensor, data in known:
            keep_literal(tensor, data)

    return put_back


def kept_module_literals(model: torch.nn.Module) -> Callable[[], None]:
    """``kept_literals`` of the buffers and tensor attributes of ``model``'s modules."""
    try:
        modules = list(model.modules())
    except Exception:  # a module tree that breaks modules(): nothing is kept
        return lambda: None
    return kept_literals([value for module in modules
                          for value in (*module._buffers.values(), *vars(module).values())
                          if isinstance(value, torch.Tensor)])


def _typed(data: Any, dtype: torch.dtype) -> Any:
    """``data`` as a tensor of ``dtype`` gives it back from ``tolist``."""
    if isinstance(data, (list, tuple)):
        return [_typed(item, dtype) for item in data]
    if dtype == torch.bool:
        return bool(data)
    if dtype.is_complex:
        return complex(data)
    return float(data) if dtype.is_floating_point else int(data)


def _read(flat: list[Any], shape: tuple[int, ...], strides: tuple[int, ...],
          offset: int) -> Any:
    """The elements of a view (``shape``, ``strides``, ``offset`` into a contiguous tensor
    holding ``flat``), as ``tolist`` nests them."""
    if not shape:
        return flat[offset]
    return [_read(flat, shape[1:], strides[1:], offset + index * strides[0])
            for index in range(shape[0])]


def literal_of(tensor: torch.Tensor) -> Any | None:
    """What ``tensor.tolist()`` gives, where ``tensor`` was made from Python data while
    ``literal_tensors()`` ran, or is a view of one (a fake tensor's ``tolist`` asks each
    element's ``item``) of its dtype, and holds it as made; None otherwise."""
    # A view's own data where it was kept (``computed_literals``), else its base's.
    made = tensor if tensor._base is None or tensor in _KEPT else tensor._base
    kept = _KEPT.get(made)
    if kept is None:
        return None
    data, dtype, version = kept
    # An in-place change (``t.add_(1)``, ``t[0] = 2``) makes the kept data wrong: the
    # version counter, which views share, says whether one happened since it was made.
    if tensor._version != version or tensor.dtype != dtype:
        return None
    typed = _typed(data, dtype)
    if made is tensor:
        return typed
    return _read(tree_flatten(typed)[0], tuple(tensor.shape), tuple(tensor.stride()),
                 tensor.storage_offset())
