"""What ``forward`` raised on each example input the inputs stage tried for one instance, kept
while the stage searches (``refusals_kept``), so that a class that raises the same error on
every input tried gets that error as its verdict ("forward raises on every input tried")
rather than "no example inputs": an installed dependency that lacks the function the code
calls, or an operation torch refuses whatever the tensors (``torch.istft`` on a real tensor),
fails so on any input, as it does under real torch.

Errors are the same when their type, the first line of their message and the innermost line
of the workspace they were raised from are. An error about the meta device or fake tensors is
fx-lsp's own way of running, never a verdict: one among the errors keeps the class at "no
example inputs".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fxcore.worker.shared.locate import traceback_positions

#: How many inputs of different shapes must have raised the same error: one input says
#: nothing of the others.
MIN_INPUTS = 2
#: Words of an error that come from running on meta or fake tensors, which real torch on the
#: CPU does not do.
_OWN_WAY = ("meta", "fake", "data-dependent", "symbolic", "guard")


@dataclass
class RaisedEverywhere:
    """The error ``forward`` raised on every input tried, and the first input tried."""

    error: BaseException
    specs: dict[str, Any]
    tried: int


@dataclass
class _Kept:
    first: tuple[BaseException, dict[str, Any]] | None = None
    signatures: set[tuple[str, str, str, int]] = field(default_factory=set)
    shapes: set[str] = field(default_factory=set)
    own_way: bool = False


_kept: list[_Kept] = []


def refusal_seen(specs: Mapping[str, Any], error: BaseException) -> None:
    """Keep what ``forward`` raised on the inputs ``specs`` (by ``forward`` argument), while
    ``refusals_kept`` is active; nothing otherwise."""
    if not _kept:
        return
    kept = _kept[-1]
    message = next(iter(str(error).splitlines()), "")
    if any(word in message.lower() for word in _OWN_WAY):
        kept.own_way = True
        return
    positions = traceback_positions(error.__traceback__)
    innermost = positions[-1] if positions else None
    place = (innermost.filename, innermost.line) if innermost is not None else ("", 0)
    kept.signatures.add((type(error).__name__, message, *place))
    kept.shapes.add(repr(sorted((name, str(spec)) for name, spec in specs.items())))
    if kept.first is None:
        kept.first = (error, dict(specs))


@contextlib.contextmanager
def refusals_kept() -> Iterator[list[RaisedEverywhere]]:
    """Keep the errors of the runs inside; the list it gives holds, after the block, the
    error raised on every input tried where there is one (at least ``MIN_INPUTS`` inputs of
    different shapes, one error, none of fx-lsp's own way of running)."""
    kept = _Kept()
    _kept.append(kept)
    found: list[RaisedEverywhere] = []
    try:
        yield found
    finally:
        _kept.remove(kept)
        if kept.first is not None and len(kept.signatures) == 1 and not kept.own_way \
                and len(kept.shapes) >= MIN_INPUTS:
            found.append(RaisedEverywhere(kept.first[0], kept.first[1], len(kept.shapes)))
