"""A value a client sent, quoted back in a message, cut to a few levels and characters (a
setting or an argument may be megabytes). How deep a client's JSON may nest before anything
parses it is ``fxcore.workspace.json_nesting``'s, which the baseline reader uses too."""

from __future__ import annotations

import reprlib
from typing import Any

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 3
_SHOWN.maxstring = 80
_SHOWN.maxother = 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 6


def shown(value: Any) -> str:
    """``repr(value)`` cut to three levels and a few items and characters: what a message
    quotes of a value it refuses, however large or deep the value."""
    return _SHOWN.repr(value)
