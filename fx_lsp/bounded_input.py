"""Bounds on what a client sends the adapters: how deep its JSON may nest before anything parses
it (Python's and pydantic's parsers recurse, and give up on thousands of levels with no word to
the client), and a value quoted back in a message, cut to a few levels and characters (a
setting or an argument may be megabytes)."""

from __future__ import annotations

import reprlib
from typing import Any

#: The deepest JSON a client's message may nest: the protocols' own envelopes and every
#: setting or tool argument fx-lsp reads are a few levels deep.
MAX_JSON_DEPTH = 64

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 3
_SHOWN.maxstring = 80
_SHOWN.maxother = 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 6


def shown(value: Any) -> str:
    """``repr(value)`` cut to three levels and a few items and characters: what a message
    quotes of a value it refuses, however large or deep the value."""
    return _SHOWN.repr(value)


def json_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep the arrays and objects of JSON ``text`` nest, counted without parsing it (in
    one pass, brackets inside strings left out); the scan stops at ``limit`` + 1."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = deepest = 0
    in_string = escaped = False
    for character in text:
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif character in "]}":
            depth -= 1
    return deepest


def too_deep(text: str | bytes, what: str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why JSON ``text`` is refused, in one line, when it nests deeper than ``limit``; None
    when it does not."""
    if json_depth(text, limit) <= limit:
        return None
    return f"{what} is nested more than {limit} levels deep; fx-lsp reads at most {limit}"


def cut_to_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> bytes:
    """JSON ``body`` with each array or object deeper than ``limit`` left empty (``[]``,
    ``{}``), padded with spaces to its length: a message the parser reads, of the length its
    header announced, whose too-deep values the reader of each setting then refuses."""
    kept = bytearray()
    depth = 0
    in_string = escaped = False
    skipping_from = 0  # the depth of the container being left empty; 0 when none
    for byte in body:
        character = chr(byte)
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            if depth > limit and not skipping_from:
                skipping_from = depth
                kept.append(byte)
        elif character in "]}":
            if skipping_from == depth:
                skipping_from = 0
                kept.append(byte)
                depth -= 1
                continue
            depth -= 1
        if not skipping_from:
            kept.append(byte)
    return bytes(kept) + b" " * (len(body) - len(kept))
