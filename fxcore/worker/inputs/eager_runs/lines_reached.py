"""The lines of one file that a run reached, recorded with a line tracer that follows only that
file's frames: whether an eager run on fx-lsp's inputs got as far as the line a capture failed
at decides whether the capture's error is the class's (the inputs run up to it) or the inputs'
(they fail before it; ``own_choices``). It runs user code's frames under ``sys.settrace``, so
only ever inside a worker child, around one eager call."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any


@contextlib.contextmanager
def lines_reached(path: str, reached: set[int]) -> Iterator[None]:
    """While active, ``reached`` collects the lines of ``path`` that started to run."""
    wanted = os.path.abspath(path)
    names: dict[str, bool] = {}

    def in_file(frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            reached.add(frame.f_lineno)
        return in_file

    def on_call(frame: FrameType, _event: str, _arg: Any) -> Any:
        filename = frame.f_code.co_filename
        if filename not in names:
            names[filename] = os.path.abspath(filename) == wanted
        if not names[filename]:
            return None
        reached.add(frame.f_lineno)
        return in_file

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(previous)
