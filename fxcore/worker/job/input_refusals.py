"""What ``forward`` raised on each example input the inputs stage tried for one instance, kept
while the stage searches (``refusals_kept``), so that a class that raises the same error on
every input tried gets that error as its verdict ("forward raises on every input tried")
rather than "no example inputs", where no input could change it: the error must also be
raised whatever the inputs, decided from what the failing lines read
(``input_independence``): a ``raise`` under a test of a value the class set itself, a function
an installed package lacks. An error on a statement that reads the inputs (a real tensor given
to ``torch.istft``, a rank unpacked) may be the inputs' fault, however many were tried: the
class then has no verdict ("no example inputs", information), never an error, unless inputs
the code itself gives or documents (``inputs_from_code``: an example beside the model, the
shape ``forward``'s docstring gives) met it too: an error on those is the code's.

Errors are the same when their type, the first line of their message and the innermost line
they were raised from are. The class's own refusal of an input's shape (an ``assert`` or
``raise`` statement of the workspace that raised it: "Please make sure your input is in the
shape of (batch, freq_bins, timesteps)") says the input was not one the class takes, not that
it cannot run: the inputs it let through must then all have met one error; so does an error
about the input's shape or type (a size mismatch, an embedding given floats), which other
inputs may not meet, and no such error is ever the verdict. An error about the
meta device or fake tensors is fx-lsp's own way of running, never a verdict: one among the
errors keeps the class at "no example inputs".
"""

from __future__ import annotations

import contextlib
import linecache
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fxcore.worker.job.input_independence import raised_whatever_the_inputs
from fxcore.worker.source.locate import traceback_positions

#: How many inputs of different shapes must have raised the same error: one input says
#: nothing of the others.
MIN_INPUTS = 2
#: Words of an error that come from running on meta or fake tensors, which real torch on the
#: CPU does not do, or from code written for a GPU judged for the CPU, which the device hint
#: answers (``devices.accelerator_guard``: set ``device = "cuda"``).
_OWN_WAY = ("meta", "fake", "data-dependent", "symbolic", "guard", "cuda")
#: Errors about the input's shape or type, which another input may well not meet (an
#: embedding given floats says so for every float input): the input's fault, never the
#: class's verdict.
_INPUT_DEPENDENT = re.compile(
    r"shape|size|dimension|\bdims?\b|mat\d|must match|scalar type|dtype|out of range"
    r"|too many indices|not enough values|expected .*\b(input|tensor|\d+D)\b|channels"
    r"|broadcast", re.IGNORECASE)


def of_own_way(error: BaseException) -> bool:
    """True for an error of fx-lsp's own way of running (meta or fake tensors, symbolic
    sizes, a GPU judged for), which real torch on the CPU does not meet."""
    message = next(iter(str(error).splitlines()), "").lower()
    return any(word in message for word in _OWN_WAY)


@dataclass
class RaisedEverywhere:
    """The error ``forward`` raised on every input tried, and the first input tried."""

    error: BaseException
    specs: dict[str, Any]
    tried: int


@dataclass
class _Seen:
    error: BaseException
    specs: dict[str, Any]
    signature: tuple[str, str, str, int]
    shapes: str
    #: Raised by the workspace's own ``assert`` or ``raise`` statement, or about the input's
    #: shape or type: the input's fault.
    refusal: bool
    input_dependent: bool
    #: Inputs the code gives or documents (``inputs_from_code``): an error on them is the
    #: code's, whatever another input might do.
    from_code: bool = False


@dataclass
class _Kept:
    seen: list[_Seen] = field(default_factory=list)
    own_way: bool = False

    def raised_everywhere(self) -> RaisedEverywhere | None:
        """The error every input tried met, or every input the class's own checks let
        through, where there is one (see the module's documentation)."""
        if self.own_way:
            return None
        every = [] if any(seen.input_dependent for seen in self.seen) else self.seen
        for group in (every, [seen for seen in self.seen if not seen.refusal]):
            shapes = {seen.shapes for seen in group}
            if len({seen.signature for seen in group}) == 1 and len(shapes) >= MIN_INPUTS \
                    and (any(seen.from_code for seen in group)
                         or raised_whatever_the_inputs(group[0].error)):
                return RaisedEverywhere(group[0].error, group[0].specs, len(shapes))
        return None


_kept: list[_Kept] = []
#: How many ``inputs_from_code`` blocks are active.
_from_code = [0]


@contextlib.contextmanager
def inputs_from_code() -> Iterator[None]:
    """While active, the inputs tried are ones the code gives or documents (an example beside
    the model, the shape ``forward``'s docstring gives): an error on them is the class's."""
    _from_code[0] += 1
    try:
        yield
    finally:
        _from_code[0] -= 1


def refusal_seen(specs: Mapping[str, Any], error: BaseException) -> None:
    """Keep what ``forward`` raised on the inputs ``specs`` (by ``forward`` argument), while
    ``refusals_kept`` is active; nothing otherwise."""
    if not _kept:
        return
    kept = _kept[-1]
    if of_own_way(error):
        kept.own_way = True
        return
    message = next(iter(str(error).splitlines()), "")
    positions = traceback_positions(error.__traceback__)
    innermost = positions[-1] if positions else None
    place = (innermost.filename, innermost.line) if innermost is not None else ("", 0)
    statement = linecache.getline(*place).strip() if innermost is not None else ""
    input_dependent = bool(_INPUT_DEPENDENT.search(message))
    refusal = input_dependent or isinstance(error, AssertionError) \
        or statement.startswith("raise ")
    kept.seen.append(_Seen(error, dict(specs), (type(error).__name__, message, *place),
                           repr(sorted((name, str(spec)) for name, spec in specs.items())),
                           refusal, input_dependent, _from_code[0] > 0))


@contextlib.contextmanager
def refusals_kept() -> Iterator[list[RaisedEverywhere]]:
    """Keep the errors of the runs inside; the list it gives holds, after the block, the
    error raised on every input tried (or on every input the class's own checks let
    through) where there is one: at least ``MIN_INPUTS`` inputs of different shapes, one
    error, none of fx-lsp's own way of running."""
    kept = _Kept()
    _kept.append(kept)
    found: list[RaisedEverywhere] = []
    try:
        yield found
    finally:
        _kept.remove(kept)
        raised = kept.raised_everywhere()
        if raised is not None:
            found.append(raised)
