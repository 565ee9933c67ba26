"""FX206: where a traced forward drew from Python's ``random`` or NumPy's global generator.

A draw returns a Python value, never a Proxy (nor a fake tensor): ``if random.random() >
self.p``, a layer picked with ``random.choice(self.layers)``, a size from ``random.randint``
are decided once, while tracing, and the graph keeps that outcome whatever later draws give.
Neither torch.fx nor non-strict torch.export raises (torch.compile breaks its graph there, a
GB code of its own).

Found in two steps, so that a class that draws nothing pays nothing: the capture compares
the generators' states before and after its trace (``fxcore.worker.running.seeding.drawn_states``),
and only when they differ is forward run again, from the same seeds (so down the same
outcomes), with ``draws_recorded`` watching: fx traces again; export runs forward eagerly on
its fake inputs, which is what its non-strict trace runs. Every draw that ran while tracing
is reported: whatever its value went into (a branch, an index, a size, a constant of the
graph), the graph holds that one value. A draw is reported at the workspace code that called
it, the innermost frame outside ``random`` and ``numpy``; a draw a library makes is the
library's. Only the global generators, the ones fx-lsp seeds, are compared: a forward that
draws only from a generator of its own (``random.Random()``, ``np.random.default_rng()``)
is not reported.

Python's generators are watched as the profiler sees their C methods (``random()`` and
``getrandbits()``, which ``choice``, ``randint``, ``shuffle``... call), so a function imported
early (``from random import random``) is found too. NumPy's draws are methods compiled by
Cython, which the profiler does not see: its global generator's methods are wrapped in
``numpy.random`` while forward runs again, so a draw through that module
(``np.random.rand()``) is found, and one through a name imported from it before
(``from numpy.random import rand``) is not located.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from fxcore.model.results import CODES, Hint
from fxcore.worker.source.locate import RawPosition, SourceIndex, instruction_position, to_frame

#: The files whose frames are the generators' own, not the code that drew.
_RANDOM_FILE = os.path.abspath(random.__file__)
#: Methods of NumPy's global generator that draw nothing.
_NUMPY_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "get_bit_generator",
                              "set_bit_generator"})


def _numpy_random() -> Any:
    """``numpy.random`` where it is imported (``fxcore.worker.running.seeding`` imports it)."""
    return sys.modules.get("numpy.random")


def _in_generator(filename: str) -> bool:
    path = os.path.abspath(filename)
    numpy_random = _numpy_random()
    numpy_folder = os.path.dirname(os.path.dirname(numpy_random.__file__)) \
        if numpy_random is not None else None
    return path == _RANDOM_FILE or (numpy_folder is not None
                                    and path.startswith(numpy_folder + os.sep))


@contextlib.contextmanager
def draws_recorded(is_workspace_path: Callable[[str], bool]) -> Iterator[list[RawPosition]]:
    """The positions of the draws the workspace's code makes in the block, each once."""
    sites: list[RawPosition] = []

    def record(frame: FrameType | None) -> None:
        while frame is not None and _in_generator(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None or not is_workspace_path(os.path.abspath(frame.f_code.co_filename)):
            return
        site = instruction_position(frame.f_code, frame.f_lasti, frame.f_lineno)
        if site not in sites:
            sites.append(site)

    previous = sys.getprofile()

    def profile(frame: FrameType, event: str, argument: Any) -> None:
        if previous is not None:  # a profiler already there (a test's) goes on seeing all
            previous(frame, event, argument)
        if event == "c_call" and isinstance(getattr(argument, "__self__", None),
                                            random.Random):
            record(frame)

    def recording(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def draw(*args: Any, **kwargs: Any) -> Any:
            record(sys._getframe(1))
            return method(*args, **kwargs)
        return draw

    numpy_random = _numpy_random()
    generator = getattr(getattr(numpy_random, "mtrand", None), "_rand", None)
    originals = {name: value for name, value in vars(numpy_random).items()
                 if getattr(value, "__self__", None) is generator is not None
                 and name not in _NUMPY_NOT_DRAWS} if numpy_random is not None else {}
    for name, method in originals.items():
        setattr(numpy_random, name, recording(method))
    sys.setprofile(profile)
    try:
        yield sites
    finally:
        sys.setprofile(previous)
        for name, method in originals.items():
            setattr(numpy_random, name, method)


def draw_hints(sites: list[RawPosition], sources: SourceIndex) -> list[Hint]:
    """FX206 at each draw, with its call's source in the message."""
    hints = []
    for site in sites:
        frame = to_frame(site, sources)
        text = sources.line(frame.path, frame.line)
        call = text[frame.column - 1:frame.end_column - 1] if frame.end_line == frame.line \
            else text.strip()
        hints.append(Hint(
            **frame.span(), code=CODES["random-draw"], kind="random-draw",
            message=(f"`{call}` draws a Python value while tracing: the graph keeps the "
                     "outcome drawn this once (a branch, a layer, a size), whatever later "
                     "draws give. Draw in the graph instead, from a traced tensor "
                     "(`torch.rand_like(x[:, :1]) > p`), and choose with `torch.where`; or "
                     "make the choice on purpose: pass it to forward as an "
                     "argument and trace with `concrete_args`, or draw and choose in a "
                     "module-level function marked with `torch.fx.wrap`, which the graph "
                     "calls on each run.")))
    return hints
