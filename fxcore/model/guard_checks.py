"""The ``torch._check`` lines an FX401 suggests, as its message words them: the export capture
writes them (``fxcore.worker.capture.export.failures``) and the fix planner reads them back
(``fxcore.fixing.pt2_plan``), as torch itself lists its two suggestions in a data-dependent
error's message.

A guard on Python numbers taken from tensors (``n = t.item(); if n > 2:``) says so
(``PYTHON_CONDITION``): an ``assert`` on it cannot become ``torch._assert_async``, which takes
a tensor. Its checks are given only where every symbol of the guard is a local variable of the
user's frame; the first is what fx-lsp assumed to go on, the second its negation.
"""

from __future__ import annotations

import re

#: Said of a guard that the user's code decided on Python numbers (SymInts), not a tensor.
PYTHON_CONDITION = "a condition on Python numbers taken from tensors"

_CHECKS = re.compile(r"state what holds: `torch\._check\((?P<assumed>[^`]+)\)`"
                     r"(?: or `torch\._check\((?P<other>[^`]+)\)`)?\.")


def checks_sentence(assumed: str, other: str | None) -> str:
    """``state what holds: `torch._check(n > 2)` or `torch._check(n <= 2)`.``"""
    sentence = f"state what holds: `torch._check({assumed})`"
    return sentence + (f" or `torch._check({other})`." if other is not None else ".")


def suggested_checks(message: str) -> tuple[str, ...]:
    """The guards of the checks an FX401 message suggests, in the user's names, the one
    fx-lsp assumed first; () when it suggests none."""
    match = _CHECKS.search(message)
    if match is None:
        return ()
    return tuple(guard for guard in (match.group("assumed"), match.group("other")) if guard)


def on_python_numbers(message: str) -> bool:
    """Whether an FX401 message says its guard is on Python numbers rather than a tensor."""
    return PYTHON_CONDITION in message
