"""Values for tensors without data where eager Python needs one: at a graph break
``torch.compile`` runs the breaking instruction eagerly (``if x.sum() > 0``, ``x.item()``), and
the search for example inputs runs ``forward`` eagerly (``eager_run``), which a meta tensor (or
a fake one, in the search) cannot answer. While a capture or a search run goes,
``Tensor.__bool__``/``item``/``tolist``/``numpy``/``__int__``/``__float__``/``__index__`` give a
stand-in for such tensors (true, one, a list or array of ones of its shape) and behave as
before for any other tensor (but for one made from Python data, ``literal_values``: its own
numbers); torch's ``nonzero`` on meta assumes every element is nonzero. What
torch refuses of any tensor (a Python number of a tensor of several elements, an index of a
float tensor) is still torch's own error. Where ``value_plan`` found other values for a line's
``.item()``/``.tolist()`` (ones the code's own checks and conditions on them accept), the
stand-ins give those, in the order it met them. A meta tensor's copy to the CPU (``.cpu()``,
``.to("cpu")``: the lengths ``pack_padded_sequence`` takes on the CPU) is likewise a CPU tensor
of ones of its shape, in the dtype asked for. numpy is imported only when a meta tensor's
``.numpy()`` runs: torch does not need it, and where it is not installed that call raises
torch's own error, as it would on real data.

The stand-ins are ``torch._dynamo.disable``d: dynamo must neither trace them as user code nor
count them as breaks of their own.

A tensor made from Python data on meta (``torch.tensor([], device=x.device)``, as a
transformers ``DynamicCache`` starts its layers) never reaches a dispatch mode, so dynamo's
fake run of that node gives a plain meta tensor, which the next operation on fake tensors
refuses. While a capture runs, such a value of a fake run is made fake, as it is for every
other device.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.utils._python_dispatch import _get_current_dispatch_mode
from torch.utils._pytree import tree_leaves, tree_map_only

from fxcore.worker.meta import to_arguments
from fxcore.worker.meta.literal_values import literal_of
from fxcore.worker.source.graph_places import user_place

_METHODS = ("__bool__", "item", "tolist", "numpy", "__int__", "__float__", "__index__")
#: The methods that give one Python number of a one-element tensor.
_SCALARS = ("__bool__", "item", "__int__", "__float__", "__index__")
_TORCH_FOLDER = os.path.dirname(torch.__file__) + os.sep  # not torchvision/ beside it
#: fx-lsp's worker: its stand-ins, the value plan's recorders and the runs that call the
#: model are no asking code.
_WORKER_FOLDER = os.path.dirname(os.path.dirname(__file__)) + os.sep  # fxcore/worker/
#: A line of code that asks a tensor for a value: (file, line).
Place = tuple[str, int]


@dataclass
class StandIns:
    """What the stand-ins did while a capture ran."""

    #: What could not be set up (each with its reason), then what was assumed (a loop on
    #: tensor data run once).
    notes: list[str] = field(default_factory=list)
    #: How many Python numbers (``.item()``, ``.tolist()``, ``int()``, ``float()``) were
    #: stood in.
    numbers: int = 0
    #: The lines whose values were stood in (numbers and truths), in the order they first
    #: asked.
    read: list[Place] = field(default_factory=list)
    #: The ids of the tensors those values were read from (a view's: its base's).
    bases: list[int] = field(default_factory=list)


def _ones(tensor: torch.Tensor) -> Any:
    """One of ``tensor``'s dtype as a Python scalar (a bool tensor's is True)."""
    if tensor.dtype == torch.bool:
        return True
    return 1.0 if tensor.dtype.is_floating_point or tensor.dtype.is_complex else 1


def _nested_list(shape: tuple[int, ...], values: Iterator[Any]) -> Any:
    """What ``tolist`` gives for a tensor of ``shape`` holding ``values`` in order."""
    if not shape:
        return next(values)
    return [_nested_list(shape[1:], values) for _ in range(shape[0])]


def asking_line() -> Place:
    """The file and line of the code that asks a tensor for a value: the innermost frame
    outside torch and fx-lsp's worker (for a compiled graph's own code, the user's line its
    operation came from: ``graph_places``)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and (frame.f_code.co_filename.startswith(_TORCH_FOLDER)
                                        or frame.f_code.co_filename.startswith(_WORKER_FOLDER)):
        frame = frame.f_back
    return user_place(frame) or (frame.f_code.co_filename, frame.f_lineno)


def _planned(tensor: torch.Tensor, planned: dict[Place, list[Any]]) -> list[Any] | None:
    """The values planned for the asking line, ``tensor.numel()`` of them in ``tensor``'s
    Python type, taken off its list; None when none are left (or fewer than it holds)."""
    values = planned.get(asking_line())
    count = tensor.numel()
    if not values or len(values) < count:
        return None
    taken, values[:count] = values[:count], []
    kind = type(_ones(tensor))
    return [kind(value) for value in taken]


def _literal_answer(name: str, known: Any) -> Any:
    """What ``name`` gives of a tensor made from the Python data whose ``tolist`` is
    ``known``: the code's own numbers, as on the CPU."""
    if name == "tolist":
        return known
    while isinstance(known, list):  # one element, as ``_refused`` holds
        known = known[0]
    if name == "__float__":
        return float(known)
    if name in ("__int__", "__index__"):
        return int(known)
    return bool(known) if name == "__bool__" else known


def _refused(name: str, tensor: torch.Tensor) -> bool:
    """What torch refuses of any tensor, data or not: one Python number of a tensor of several
    elements, an index of one that holds no integers."""
    if name in _SCALARS and tensor.numel() != 1:
        return True
    return name == "__index__" and (tensor.dtype.is_floating_point or tensor.dtype.is_complex)


def _stand_in(name: str, original: Callable[..., Any], asked: dict[Place, int],
              planned: dict[Place, list[Any]], state: StandIns,
              answers: Callable[[torch.Tensor], bool]) -> Callable[..., Any]:
    #: Per line, the tensor whose elements it asked for last (None: a tensor of its own).
    elements_of: dict[Place, torch.Tensor | None] = {}

    def truth(tensor: torch.Tensor, place: Place) -> bool:
        # True the first time a line asks, false after: a loop on tensor data (`while
        # x.abs().max() > 1`), which real data ends, runs once here instead of forever. The
        # elements of one tensor asked in turn at a line (`all(mask)`, `for v in mask: if v`)
        # are one ask: a builtin or loop over them ends with the tensor.
        base = tensor._base
        if base is not None and elements_of.get(place) is base:
            return asked[place] == 1
        elements_of[place] = base
        asked[place] = asked.get(place, 0) + 1
        if asked[place] == 2:
            state.notes.append(f"On meta, the condition on tensor data at line {place[1]} "
                               "was assumed true the first time and false after, so a loop on "
                               "it runs once.")
        return asked[place] == 1

    def number(tensor: torch.Tensor) -> Any:
        state.numbers += 1
        values = _planned(tensor, planned)
        if name == "tolist":
            return _nested_list(tuple(tensor.shape),
                                iter(values) if values else itertools.repeat(_ones(tensor)))
        found = values[0] if values else _ones(tensor)
        if name == "__float__":
            return float(found)
        return int(found) if name in ("__int__", "__index__") else found

    def value(tensor: torch.Tensor) -> Any:
        if name != "numpy":
            place = asking_line()
            if place not in state.read:
                state.read.append(place)
            state.bases.append(id(tensor if tensor._base is None else tensor._base))
            return truth(tensor, place) if name == "__bool__" else number(tensor)
        # numpy is no dependency of torch or fx-lsp: without it, ``Tensor.numpy`` raises as
        # torch's own does ("Numpy is not available"), which is what the code would meet.
        try:
            import numpy
        except ImportError:
            return original(tensor)
        return numpy.full(tuple(tensor.shape), _ones(tensor))

    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not answers(self) or _refused(name, self):
            return original(self, *args, **kwargs)
        known = literal_of(self) if name != "numpy" else None
        if known is not None:
            return _literal_answer(name, known)
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
        if not isinstance(mode, fake_tensor.FakeTensorMode) or not any(
                isinstance(leaf, torch.Tensor) and leaf.is_meta
                and not isinstance(leaf, fake_tensor.FakeTensor) for leaf in tree_leaves(value)):
            # Left as it is: mapped, a ``torch.Size`` of symbolic sizes comes back a plain
            # tuple, and dynamo cannot iterate a tensor whose ``size()`` is no ``SizeVariable``.
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


class _SizesOfData:
    """``torch.library.get_ctx()`` of an operator's fake kernel run on meta tensors, which
    torch refuses ("use FakeTensors"): a size the data decides (the boxes torchvision's
    ``nms`` keeps) is the most the kernel allows where it says, else two, the least size
    torch's own size-oblivious reasoning gives such a size (0 and 1 are the sizes dynamo
    specialises on). Only the eager runs on meta ask it; fake tensors keep torch's own."""

    def __init__(self, state: StandIns) -> None:
        self._state = state

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> int:
        place = asking_line()
        if place not in self._state.read:
            self._state.read.append(place)
        return max if max is not None else builtins.max(min, 2)

    def create_unbacked_symint(self, *, min: int = 2, max: int | None = None) -> int:
        return self.new_dynamic_size(min=min, max=max)


@contextlib.contextmanager
def _operator_sizes_on_meta(state: StandIns) -> Iterator[str | None]:
    """An operator's fake kernel run on meta tensors gets ``_SizesOfData`` for the context
    torch's meta kernel refuses (``fake_impl.construct_meta_kernel`` sets a getter named
    ``error_on_ctx``); yields why not, if not."""
    fake_impl = importlib.import_module("torch._library.fake_impl")
    original = getattr(fake_impl, "set_ctx_getter", None)
    if not callable(original):
        yield ("torch._library.fake_impl.set_ctx_getter is missing: an operator whose size "
               "its data decides stops a run on meta tensors")
        return
    sizes = _SizesOfData(state)

    def set_ctx_getter(getter: Callable[[], Any]) -> Any:
        if getattr(getter, "__name__", "") == "error_on_ctx":
            return original(lambda: sizes)
        return original(getter)

    fake_impl.set_ctx_getter = set_ctx_getter
    try:
        yield None
    finally:
        fake_impl.set_ctx_getter = original


#: The methods that copy a tensor to another device.
_COPIES = ("cpu", "to")


def _copy_stand_in(name: str, original: Callable[..., Any], state: StandIns,
                   answers: Callable[[torch.Tensor], bool]) -> Callable[..., Any]:
    """``Tensor.cpu``/``Tensor.to`` that give a CPU tensor of ones for a meta tensor's copy
    to the CPU, which has no data to copy."""
    def target(self: torch.Tensor, args: Any, kwargs: Any) -> torch.dtype | None:
        """The dtype of the CPU copy asked for, None for anything else."""
        if name == "cpu":
            return self.dtype
        asked = to_arguments.read_move(args, kwargs)
        return (asked.dtype or self.dtype) if asked is not None and asked.goes_to("cpu") \
            else None

    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        dtype = target(self, args, kwargs) if answers(self) and is_meta(self) else None
        if dtype is None:
            return original(self, *args, **kwargs)
        place = asking_line()
        if place not in state.read:
            state.read.append(place)
        return torch.ones(self.shape, dtype=dtype, device="cpu")

    method.__name__ = name
    return torch._dynamo.disable(method)


@contextlib.contextmanager
def replaced_tensor_methods(make: Callable[[str, Callable[..., Any]], Callable[..., Any]],
                            names: tuple[str, ...]) -> Iterator[None]:
    """``torch.Tensor``'s methods ``names`` replaced by ``make(name, original)`` while the
    block runs, and put back as they were after."""
    originals = {name: getattr(torch.Tensor, name) for name in names}
    # Some are torch.Tensor's own, others inherited from torch._C.TensorBase.
    own = {name: torch.Tensor.__dict__[name] for name in names
           if name in torch.Tensor.__dict__}
    try:
        for name, original in originals.items():
            setattr(torch.Tensor, name, make(name, original))
        yield
    finally:
        for name in names:
            if name in own:
                setattr(torch.Tensor, name, own[name])
            elif name in torch.Tensor.__dict__:
                delattr(torch.Tensor, name)


def read_places(read: list[Place]) -> str:
    """The lines values were read at, as notes name them: ``file.py:12, file.py:30``."""
    return ", ".join(f"{os.path.basename(path)}:{line}" for path, line in read)


def read_note(read: list[Place]) -> str:
    """How an inputs note says that the values read at ``read`` were stood in while
    ``forward`` ran to find inputs ("" when none were)."""
    if not read:
        return ""
    return (f" (run on tensors without data, the values read from them at {read_places(read)} "
            "were taken as one, and conditions on them as true the first time at a line, as the "
            "compile capture assumes on meta; torch.export and torch.compile then read them their "
            "own way)")


def is_meta(tensor: torch.Tensor) -> bool:
    """A meta tensor of the code's own, not a fake one of dynamo's: dynamo's fake run of an
    operator on data (``.tolist()``) must meet torch's own data-dependent error, and break the
    graph there, as on the CPU."""
    return tensor.is_meta and not is_fake(tensor)


def has_no_data(tensor: torch.Tensor) -> bool:
    """A meta tensor, or a fake one (the search's run of a model built on the CPU, or judged
    for a GPU) but for one that carries its constant: a fake tensor made from Python data
    (``torch.tensor(x.shape[-2:])``) keeps the data, and its values are the code's own."""
    return tensor.is_meta or (is_fake(tensor) and getattr(tensor, "constant", None) is None)


@contextlib.contextmanager
def meta_values(planned: dict[Place, list[Any]] | None = None,
                answers: Callable[[torch.Tensor], bool] = is_meta) -> Iterator[StandIns]:
    """The stand-ins installed for the tensors ``answers`` accepts, giving ``planned`` values
    where there are some (each line's list is used up as they are given); yields what they
    did, filled while the capture runs."""
    state = StandIns()
    planned = {place: list(values) for place, values in (planned or {}).items()}
    with contextlib.ExitStack() as stack:
        try:
            config = importlib.import_module("torch.fx.experimental._config")
            stack.enter_context(config.patch(meta_nonzero_assume_all_nonzero=True))
        except (ImportError, AttributeError, TypeError) as error:
            state.notes.append(f"nonzero on meta tensors is not assumed nonzero ({error})")
        not_faked = stack.enter_context(_fake_runs_of_meta_data())
        if not_faked is not None:
            state.notes.append(not_faked)
        no_sizes = stack.enter_context(_operator_sizes_on_meta(state))
        if no_sizes is not None:
            state.notes.append(no_sizes)
        asked: dict[Place, int] = {}
        stack.enter_context(replaced_tensor_methods(
            lambda name, original: _stand_in(name, original, asked, planned, state, answers),
            _METHODS))
        if to_arguments.MISSING is not None:
            state.notes.append(f"{to_arguments.MISSING}: a meta tensor's .to('cpu') is not "
                               "stood in")
        stack.enter_context(replaced_tensor_methods(
            lambda name, original: _copy_stand_in(name, original, state, answers), _COPIES))
        yield state
