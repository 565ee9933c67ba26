"""Where code asks whether its tensors are on meta, and hears yes: what fx-lsp's meta device
answers where the CPU answers no, so that a class that branches on it (``if self.theta.is_meta:
return`` skipping a cache, ``x.device.type == "meta"``) runs another way than on the CPU
(``meta_branches`` then judges it on fake tensors instead).

Two spellings are recorded, each by the code that reads it (the frame that reads the
attribute), outside torch and fx-lsp's own worker, whose reads are theirs to make:

- ``t.is_meta`` read as True;
- ``t.device`` read as the meta device by code that names ``"meta"`` (``t.device.type ==
  "meta"``, ``t.device == torch.device("meta")``, ``str(t.device) in ("meta",)``): the
  comparison itself is Python's, on a string or a ``torch.device``, which nothing can
  observe, so the read of a meta device together with the name in the reading function's
  constants stands for it. A function that names meta for another reason (``with
  torch.device("meta")``) and reads a meta tensor's device is taken as branching too; judged
  on fake tensors it still runs as on the CPU.

Both are read through ``torch.Tensor``'s attributes, which torch defines on its C base class
(``TensorBase``): while a recording runs, a property on ``torch.Tensor`` stands in front of
each and answers what torch's own descriptor answers. C++ reads, and torch.compile's reads of
its example values, do not pass through them. Where this torch has no such descriptor (a
release that defines them otherwise), nothing is recorded (``available``)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import torch

_TORCH_FOLDER = os.path.dirname(torch.__file__) + os.sep
#: fx-lsp's own code (``fxcore``): its checks of what is meta are not the user's.
_FXCORE_FOLDER = os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep
_BASE = getattr(torch._C, "TensorBase", None)


@dataclass(frozen=True)
class MetaRead:
    """One place that read a tensor as on meta: its file, line and what it read."""

    path: str
    line: int
    #: ``is_meta`` or ``device``.
    attribute: str

    def __str__(self) -> str:
        spelled = "`.is_meta`" if self.attribute == "is_meta" \
            else "`.device` beside the name \"meta\""
        return f"{spelled} at {os.path.basename(self.path)}:{self.line}"


#: The recordings running now, innermost last: a read is noted in each.
_recordings: list[list[MetaRead]] = []
#: torch's descriptors that the properties stand in front of while installed, by attribute.
_saved: dict[str, Any] = {}


def _descriptor(name: str) -> Any:
    """torch's descriptor of the attribute ``name``, where it is a C one on ``TensorBase``
    that ``torch.Tensor`` inherits as it is."""
    own = _BASE.__dict__.get(name) if _BASE is not None else None
    if own is None or not hasattr(own, "__get__") or isinstance(own, property) \
            or name in torch.Tensor.__dict__:
        return None
    return own


_IS_META = _descriptor("is_meta")
_DEVICE = _descriptor("device")


def available() -> bool:
    """Whether reads of ``is_meta`` can be recorded in this torch."""
    return _IS_META is not None


def _names_meta(code: CodeType) -> bool:
    """Whether ``code`` has the string "meta" among its constants (in a tuple of them too:
    ``x.device.type in ("meta",)``)."""
    return any(value == "meta" or (isinstance(value, (tuple, frozenset)) and "meta" in value)
               for value in code.co_consts)


def _counts(frame: FrameType) -> bool:
    path = frame.f_code.co_filename
    return not (path.startswith(_TORCH_FOLDER) or path.startswith(_FXCORE_FOLDER)
                or path.startswith("<"))


def _note(frame: FrameType, attribute: str) -> None:
    read = MetaRead(frame.f_code.co_filename, frame.f_lineno, attribute)
    for recording in _recordings:
        if read not in recording:
            recording.append(read)


def _reader() -> FrameType:
    """The frame that read the attribute: the one below the getter and its wrapper."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename == _WRAPPER_FILE:
        frame = frame.f_back
    return frame


def _is_meta(self: torch.Tensor) -> bool:
    value = _IS_META.__get__(self, type(self))
    if value and _recordings:
        frame = _reader()
        if _counts(frame):
            _note(frame, "is_meta")
    return value


def _device(self: torch.Tensor) -> torch.device:
    value = _DEVICE.__get__(self, type(self))
    if _recordings and value.type == "meta":
        frame = _reader()
        if _names_meta(frame.f_code) and _counts(frame):
            _note(frame, "device")
    return value


# Run as torch runs its own attributes, never compiled: dynamo compiles each frame a compiled
# region enters but torch's, and a getter entered eagerly after a graph break (a tensor's
# ``copy.deepcopy``) would otherwise be compiled as the user's code, a break of its own.
_GETTERS = {"is_meta": torch.compiler.disable(_is_meta),
            "device": torch.compiler.disable(_device)}
#: The file of the wrapper that keeps dynamo out, whose frames lie between a getter and its
#: reader.
_WRAPPER_FILE = getattr(getattr(_GETTERS["is_meta"], "__code__", None), "co_filename", "")


def _install() -> None:
    for name, descriptor in (("is_meta", _IS_META), ("device", _DEVICE)):
        if descriptor is not None:
            _saved[name] = descriptor
            setattr(torch.Tensor, name, property(_GETTERS[name], doc=descriptor.__doc__))


def _uninstall() -> None:
    for name in list(_saved):
        del _saved[name]
        # The class's own entry goes: torch's descriptor on TensorBase answers again.
        delattr(torch.Tensor, name)


@contextlib.contextmanager
def meta_reads() -> Iterator[list[MetaRead]]:
    """The places that read a tensor as on meta while the block runs, in the order first
    read (each once); always empty where ``available`` is False."""
    recording: list[MetaRead] = []
    if not available():
        yield recording
        return
    if not _recordings:
        _install()
    _recordings.append(recording)
    try:
        yield recording
    finally:
        # By identity: two recordings may hold the same reads.
        del _recordings[next(index for index, each in enumerate(_recordings)
                             if each is recording)]
        if not _recordings:
            _uninstall()


def described(reads: list[MetaRead]) -> str:
    """The places of ``reads`` in words, the first three: ```.is_meta` at rope.py:12``."""
    return ", ".join(str(read) for read in reads[:3]) + (", ..." if len(reads) > 3 else "")
