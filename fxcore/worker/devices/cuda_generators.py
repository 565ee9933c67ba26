"""``torch.Generator("cuda")`` in the GPU view (``cuda_view``), with no driver touched.

A CUDA generator is C++ from end to end: ``torch.Generator("cuda")`` makes a
``CUDAGeneratorImpl``, whose constructor asks the CUDA runtime for the current stream
(``assertNotCapturing``), and so loads and initialises the driver's ``libcuda.so.1`` in the
worker (on a CUDA build; a CPU-only build has no CUDA generator and raises). No Python call
comes first for ``accelerator_guard`` to replace. In the view, a generator asked for a CUDA
device is a ``ViewGenerator``: a subclass of torch's own generator type, so torch's argument
parsing and every ``isinstance`` check take it where they take a generator, with a CPU
generator's state underneath and ``device`` answering CUDA. Its draws only ever reach meta
and fake kernels here (the view's CUDA tensors are meta and fake ones), which never read a
generator's device or state.

Two things make torch see it as it sees a real generator:

- torch 2.13 and later register ``torch._C.Generator`` as an opaque reference type, and take
  its subclasses for opaque types too: torch.fx keeps one as an attribute of the graph, as it
  keeps a real generator. Dynamo alone takes a real generator by its exact type, as a plain
  object (a draw with it is a graph break, GB0055), and would take the subclass for a script
  object, whose draw fails inside the fake kernel ("GeneratorImpl with nullptr is not
  supported"): while the view is entered, dynamo's test for script objects leaves
  ``ViewGenerator`` out (``_taken_as_torch_s``), so that it meets the plain object path.
- The call is caught where this torch lets Python catch it. From torch 2.13 the generator
  type has a metaclass of torch's written in Python, whose ``__call__`` the view replaces:
  every ``torch.Generator(...)``, however the name was bound and inside ``forward`` too,
  while dynamo still sees torch's own class. Before 2.13 the metaclass is ``type`` and
  ``torch.Generator`` itself is the view's class while the view is entered; an
  ``isinstance`` against it answers as against torch's.

Outside the view the same catch refuses such a call for good in every fx-lsp process
(``refuse_outside_view``, put in place by ``accelerator_guard.guard``): a class judged for the
CPU is told to be judged for a GPU, and never reaches torch's CUDA generator. Before 2.13
``torch.Generator`` is ``OutsideViewGenerator`` there, for the life of the process, which the
view swaps for its own while entered: it refuses a CUDA device, and for any other device makes
torch's own generator, so that what code judged for the CPU holds is torch's type.

What differs from a real CUDA generator: ``get_state`` gives a CPU generator's state (5,056
bytes, not 16), which ``set_state`` expects back.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

_GENERATOR = torch._C.Generator
_GENERATOR_TYPE: type = type(_GENERATOR)


class _AnyGenerator(_GENERATOR_TYPE):  # type: ignore[misc, valid-type]
    """The type of the classes that stand for ``torch.Generator`` before torch 2.13
    (``ViewGenerator``, ``OutsideViewGenerator``): ``isinstance`` and ``issubclass`` against
    one answer as against torch's generator type; against a user's class deriving from one,
    as against any class."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if "_stands_for_torch_s" not in cls.__dict__:
            return super().__instancecheck__(instance)
        return isinstance(instance, _GENERATOR)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        if "_stands_for_torch_s" not in cls.__dict__:
            return super().__subclasscheck__(subclass)
        return isinstance(subclass, type) and issubclass(subclass, _GENERATOR)


def _cuda_device(device: Any) -> torch.device | None:
    """The CUDA device a ``torch.Generator(device)`` call asks for, None for any other."""
    if not isinstance(device, (str, torch.device)):
        return None  # torch's own call takes or refuses it (a traced device, a proxy)
    try:
        asked = torch.device(device)
    except RuntimeError:
        return None  # torch's own call says what is wrong with it
    return asked if asked.type == "cuda" else None


class ViewGenerator(_GENERATOR, metaclass=_AnyGenerator):  # type: ignore[misc]
    """A generator of a CUDA device in the view (the module's docstring). Called as
    ``torch.Generator`` is (``device``), it makes one for a CUDA device and torch's own
    generator for any other."""

    __slots__ = ("_cuda",)
    _stands_for_torch_s = True

    def __new__(cls, device: Any = None) -> Any:
        arguments = () if device is None else (device,)
        cuda = _cuda_device(device)
        if cuda is None:
            # A class of the user's deriving from torch.Generator makes its own instances.
            return _GENERATOR(*arguments) if cls is ViewGenerator \
                else _GENERATOR.__new__(cls, *arguments)
        generator = _GENERATOR.__new__(cls, "cpu")
        generator._cuda = cuda
        return generator

    def __init__(self, device: Any = None) -> None:
        super().__init__()  # made whole by __new__

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        # A generator of a user's class deriving from torch.Generator is torch's own.
        return getattr(self, "_cuda", None) or _GENERATOR.device.__get__(self)

    def clone_state(self) -> ViewGenerator:
        clone = ViewGenerator(self._cuda)
        clone.set_state(self.get_state())
        return clone

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (str(self._cuda), self.get_state())


def _rebuilt(device: str, state: torch.Tensor) -> ViewGenerator:
    """A copy's generator (``copy.deepcopy``, pickling): a ``ViewGenerator`` of ``device``
    with ``state``."""
    generator = ViewGenerator(device)
    generator.set_state(state)
    return generator


#: Dynamo's variable classes for script objects and opaque types, by release (2.13's, then
#: 2.14's): the class whose ``is_matching_cls`` dynamo's builder asks after its exact-type
#: branch for ``torch._C.Generator``.
_SCRIPT_OBJECT_VARIABLES = ("TorchScriptObjectVariable", "CustomClassObjectVariable")


def _taken_as_torch_s(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, dynamo takes a ``ViewGenerator`` as it takes torch's own
    generator, where this torch makes generators opaque (the module's docstring); None once it
    does, else why not."""
    try:
        from torch._library.opaque_object import is_opaque_type
    except ImportError:
        return None  # generators are plain objects to every part of this torch
    if not is_opaque_type(_GENERATOR):
        return None
    try:
        from torch._dynamo.variables import script_object
    except ImportError as error:
        return f"this torch's dynamo has no script object variables ({error})"
    variable = next((getattr(script_object, name) for name in _SCRIPT_OBJECT_VARIABLES
                     if hasattr(script_object, name)), None)
    own = getattr(variable, "__dict__", {}).get("is_matching_cls")
    if not isinstance(own, classmethod):
        return "this torch's dynamo takes opaque objects otherwise than the view knows"
    original = own.__func__

    def is_matching_cls(cls: type, user_cls: type) -> bool:
        return not issubclass(user_cls, ViewGenerator) and original(cls, user_cls)

    stack.callback(setattr, variable, "is_matching_cls", own)
    variable.is_matching_cls = classmethod(is_matching_cls)  # type: ignore[union-attr]
    return None


class CudaGeneratorError(RuntimeError):
    """``torch.Generator("cuda")`` where the view cannot make its generator."""


def _refused(gap: str) -> Any:
    def refuse(device: Any) -> None:
        raise CudaGeneratorError(
            f"`torch.Generator(\"{device}\")` makes a CUDA generator, which torch makes "
            f"only by initialising CUDA: fx-lsp judges code written for a GPU without one and "
            f"never initialises CUDA in its processes, and here cannot stand in for the "
            f"generator ({gap})")
    return refuse


def _caught(original: Any, make: Any, *, derived: bool = False) -> Any:
    """The generator type's metaclass ``__call__``: ``torch.Generator(...)`` of a CUDA device
    (and, ``derived``, a call of a user's class deriving from it) is ``make``'s; every other
    call is ``original``'s."""
    def call(cls: type, *args: Any, **kwargs: Any) -> Any:
        # (``issubclass`` against ``ViewGenerator`` answers as against torch's type.)
        asked = cls is _GENERATOR or (derived and ViewGenerator not in cls.__mro__)
        if asked and len(args) + len(kwargs) == 1 and set(kwargs) <= {"device"}:
            device = args[0] if args else kwargs["device"]
            if _cuda_device(device) is not None:
                return make(device)
        return original(cls, *args, **kwargs)
    return call


def generators_in_view(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, ``torch.Generator`` of a CUDA device makes a ``ViewGenerator``
    (the module's docstring), never torch's CUDA generator; None, else why such a call is
    refused instead."""
    gap = _taken_as_torch_s(stack)
    make = ViewGenerator if gap is None else _refused(gap)
    if _GENERATOR_TYPE is not type:
        own = _GENERATOR_TYPE.__dict__.get("__call__")
        stack.callback(_put_back_call, own)
        _GENERATOR_TYPE.__call__ = _caught(_GENERATOR_TYPE.__call__, make)
    else:
        stack.callback(setattr, torch, "Generator", torch.Generator)
        # Where the type's metaclass is ``type``, no release registers it as opaque.
        torch.Generator = ViewGenerator  # type: ignore[misc]
    return gap


class OutsideViewGenerator(_GENERATOR, metaclass=_AnyGenerator):  # type: ignore[misc]
    """``torch.Generator`` outside the view before torch 2.13 (``refuse_outside_view``):
    called as ``torch.Generator`` is, it refuses a CUDA device, and for any other makes
    torch's own generator."""

    _stands_for_torch_s = True
    #: What a CUDA device meets (``refuse_outside_view``): it raises.
    refusal: Any = None

    def __new__(cls, device: Any = None) -> Any:
        if _cuda_device(device) is not None:
            return OutsideViewGenerator.refusal(device)
        arguments = () if device is None else (device,)
        if cls is not OutsideViewGenerator:  # a class of the user's deriving from it
            return _GENERATOR.__new__(cls, *arguments)
        return _GENERATOR(*arguments)


#: Whether ``refuse_outside_view`` caught the calls in this process.
_refused_outside: list[bool] = []


def refuse_outside_view(refusal: Any) -> None:
    """For good in this process (``accelerator_guard.guard``): ``torch.Generator`` of a CUDA
    device is ``refusal``'s, never torch's CUDA generator, which initialises CUDA; the view's
    own catch comes first while it is entered. From torch 2.13 every call is caught; before,
    those through the name ``torch.Generator`` (``OutsideViewGenerator``)."""
    if _refused_outside:
        return
    if _GENERATOR_TYPE is type:
        OutsideViewGenerator.refusal = staticmethod(refusal)
        torch.Generator = OutsideViewGenerator  # type: ignore[misc]
    else:
        _GENERATOR_TYPE.__call__ = _caught(_GENERATOR_TYPE.__call__, refusal, derived=True)
    _refused_outside.append(True)


def _put_back_call(own: Any) -> None:
    if own is not None:
        _GENERATOR_TYPE.__call__ = own
    else:
        del _GENERATOR_TYPE.__call__
