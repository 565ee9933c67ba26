"""CUDA streams and events in the GPU view (``cuda_view``), with no driver touched.

``torch.cuda.Stream()``, ``torch.cuda.Event(enable_timing=True)``, ``current_stream()``,
``default_stream()`` and ``torch.accelerator.current_stream()`` give torch's own
device-generic objects (``torch.Stream``/``torch.Event`` of device ``cuda:0``), of a subclass
whose calls that would reach the driver (``record``, ``wait``, ``synchronize``, ``query``,
``elapsed_time``, ``wait_stream``, entering a stream) do nothing but keep the view's current
stream. Dynamo 2.13 traces every ``torch.Stream``/``torch.Event`` the same way, whatever its
device (``torch/_dynamo/variables/streams.py``: ``StreamVariable`` "Represents the
device-agnostic torch.Stream class", ``EventVariable``), so it sees these as it sees real CUDA
ones: their calls become ``torch.ops.streams`` ops of the graph, and a
``with torch.cuda.stream(s)`` a stream context. Non-strict export runs them as Python.

On a CUDA build the classes ``torch.cuda.Stream``/``Event`` stay torch's own (dynamo knows
them by identity, and traces them as the generic classes they derive from); their ``__new__``
is the view's. On a CPU-only build they are placeholders that derive from no ``torch.Stream``,
and the view's classes take their names (``_cpu_build_classes``). The functions keep their
identity too: their code is swapped (``cuda_view.swap_code``), as is the code of the ones
the code dynamo compiles calls to rebuild a stream or event made in the graph
(``torch._dynamo.utils.build_stream``/``build_event``) and to switch streams
(``torch.accelerator.set_stream``).

What a real stream has and these have not: on a CUDA build ``isinstance(s, torch.cuda.Stream)``
is False, and ``elapsed_time`` answers 0.0 ms. CUDA graphs stay out of the view.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Any

import torch

#: The one GPU's index and torch's number for CUDA (``c10::DeviceType::CUDA``).
_INDEX, _CUDA_TYPE = 0, 1
_stream_ids = itertools.count(1)  # 0 is CUDA's default stream


class ViewStream(torch.Stream):
    """A stream of the view's GPU: a ``torch.Stream`` whose driver calls do nothing. Made as
    ``torch.cuda.Stream`` is (``device``, ``priority``), a new side stream each time."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> ViewStream:
        stream_id = kwargs.get("stream_id")
        return super().__new__(cls, stream_id=next(_stream_ids) if stream_id is None
                               else stream_id, device_index=_INDEX, device_type=_CUDA_TYPE)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()  # made whole by __new__

    def query(self) -> bool:
        return True  # nothing is ever queued on it

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: torch.Event) -> None:
        return None

    def wait_stream(self, stream: torch.Stream) -> None:
        return None

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        event = new_event() if event is None else event
        event.record(self)
        return event

    @property
    def cuda_stream(self) -> int:
        return int(self.stream_id)  # no driver handle: the id stands for it

    def __enter__(self) -> ViewStream:
        _entered.append(_current[0])
        _current[0] = self
        return self

    def __exit__(self, *exc: object) -> None:
        _current[0] = _entered.pop()


class ViewEvent(torch.Event):
    """An event of the view's GPU: a ``torch.Event`` whose driver calls do nothing. Made as
    ``torch.cuda.Event`` is."""

    timing = False
    recorded = False

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False, **_options: Any) -> ViewEvent:
        event = super().__new__(cls, device=torch.device("cuda", _INDEX),
                                enable_timing=enable_timing, blocking=blocking,
                                interprocess=interprocess)
        event.timing = enable_timing
        return event

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()  # made whole by __new__

    def record(self, stream: torch.Stream | None = None) -> None:
        self.recorded = True

    def wait(self, stream: torch.Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: torch.Event) -> float:
        # CUDA's check first (at::cuda::CUDAEvent::elapsed_time, a RuntimeError), then the
        # timing flag as torch's generic event words it; no time passes.
        if not (self.recorded and getattr(end_event, "recorded", False)):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if not (self.timing and getattr(end_event, "timing", False)):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return 0.0


# Called by the code dynamo compiled as it runs (``build_stream``/``build_event``): run as
# Python, not compiled in turn (their frames are the view's, not the user's).
@torch._dynamo.disable
def new_stream(stream_id: int | None = None) -> ViewStream:
    """A side stream of the view's GPU (CUDA's default one for ``stream_id=0``)."""
    return ViewStream(stream_id=stream_id)


@torch._dynamo.disable
def new_event(enable_timing: bool = False, blocking: bool = False,
              interprocess: bool = False, **_options: Any) -> ViewEvent:
    """An event of the view's GPU."""
    return ViewEvent(enable_timing, blocking, interprocess)


_current: list[ViewStream] = []
_entered: list[ViewStream] = []


def current() -> ViewStream:
    """The view's current stream."""
    return _current[0]


def set_current(stream: torch.Stream | None) -> None:
    if stream is not None:
        _current[0] = stream  # type: ignore[assignment]


# The answers whose code replaces torch's (``cuda_view.swap_code``): each runs with the globals
# of the function it replaces, so it names this module through an import.

def _current_stream(device: Any = None) -> Any:
    from fxcore.worker.devices import cuda_streams
    return cuda_streams.current()


def _default_stream(device: Any = None) -> Any:
    from fxcore.worker.devices import cuda_streams
    return cuda_streams.new_stream(0)


def _set_stream(stream: Any) -> None:
    from fxcore.worker.devices import cuda_streams
    cuda_streams.set_current(stream)


def _build_stream(args: Any, kwargs: Any) -> Any:
    from fxcore.worker.devices import cuda_streams
    return cuda_streams.new_stream()


def _build_event(args: Any, kwargs: Any) -> Any:
    from fxcore.worker.devices import cuda_streams
    return cuda_streams.new_event(**kwargs)


#: (module, function, answer): the functions whose code the view swaps for streams.
ANSWERS: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    ("torch.cuda", "current_stream", _current_stream),
    ("torch.cuda", "default_stream", _default_stream),
    ("torch.cuda", "set_stream", _set_stream),
    # What dynamo asks as it starts each frame (its stream state), and what its ops call.
    ("torch.accelerator", "current_stream", _current_stream),
    ("torch.accelerator", "set_stream", _set_stream),
    ("torch._dynamo.utils", "build_stream", _build_stream),
    ("torch._dynamo.utils", "build_event", _build_event),
)


def _stream_new(cls: type, device: Any = None, priority: int = 0, **kwargs: Any) -> ViewStream:
    return new_stream()


def _event_new(cls: type, enable_timing: bool = False, blocking: bool = False,
               interprocess: bool = False, **kwargs: Any) -> ViewEvent:
    return new_event(enable_timing, blocking, interprocess)


def streams_in_view(stack: contextlib.ExitStack) -> str | None:
    """``torch.cuda.Stream()``/``Event()`` make the view's objects, and the current stream is
    CUDA's default one, while ``stack`` is open; why dynamo cannot see them as on a CUDA
    build, if it cannot."""
    _current.append(new_stream(0))
    stack.callback(_current.pop)
    if issubclass(torch.cuda.Stream, torch.Stream) and issubclass(torch.cuda.Event, torch.Event):
        # A CUDA build: torch's classes, which dynamo traces as the generic ones they derive
        # from (user_defined.py: ``issubclass(self.value, torch.Stream)``), make the view's.
        for cls, new in ((torch.cuda.Stream, _stream_new), (torch.cuda.Event, _event_new)):
            stack.callback(_put_back_new, cls, cls.__dict__.get("__new__"))
            cls.__new__ = staticmethod(new)  # type: ignore[method-assign, assignment]
        return None
    return _cpu_build_classes(stack)


def _put_back_new(cls: type, own: Any) -> None:
    if own is not None:
        cls.__new__ = own  # type: ignore[method-assign]
    else:
        delattr(cls, "__new__")  # a release whose class inherits its __new__


def _cpu_build_classes(stack: contextlib.ExitStack) -> str | None:
    """A CPU-only build's ``torch.cuda.Stream``/``Event`` derive from placeholders that raise
    and that no ``torch.Stream`` can replace (their layouts differ): the view's classes take
    their names, and join the classes dynamo puts in its graph (where a CUDA build's are), so
    that it traces them as a CUDA build traces torch's."""
    from torch._dynamo.variables.user_defined import UserDefinedClassVariable
    in_graph = getattr(UserDefinedClassVariable, "_in_graph_classes", None)
    classes = in_graph() if callable(in_graph) else None
    if not isinstance(classes, set):
        return "this torch's dynamo keeps no set of classes it puts in its graph"
    import torch.cuda.streams as streams_module
    for module in (torch.cuda, streams_module):
        for name, view_class in (("Stream", ViewStream), ("Event", ViewEvent)):
            stack.callback(setattr, module, name, getattr(module, name))
            setattr(module, name, view_class)
    added = {ViewStream, ViewEvent} - classes
    classes.update(added)
    stack.callback(classes.difference_update, added)
    return None
