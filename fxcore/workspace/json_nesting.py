"""How deep JSON text nests, read without parsing it: Python's ``json`` (and pydantic's)
parsers recurse, and give up on thousands of levels with a ``RecursionError`` and no word on
what is wrong. Every reader of JSON that fx-lsp does not write itself (a baseline file, an
editor's settings, an MCP client's lines) checks the depth first, with the same scan of the
brackets outside strings (``brackets``), and refuses in one line (``too_deep``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

#: The deepest JSON fx-lsp reads: a baseline is 3 levels deep, and the protocols' envelopes
#: and every setting or tool argument fx-lsp reads are a few.
MAX_JSON_DEPTH = 64

#: A string (to its closing quote, or to the end where it has none), or text between strings.
_STRING_OR_NOT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[^"]+', re.DOTALL)
_BRACKETS = frozenset("[]{}")


def brackets(text: str) -> Iterator[tuple[int, str]]:
    """The position and character of each bracket (``[]{}``) of JSON ``text`` outside its
    strings, in order."""
    for match in _STRING_OR_NOT.finditer(text):
        run = match.group()
        if run[0] != '"':
            start = match.start()
            for offset, character in enumerate(run):
                if character in _BRACKETS:
                    yield start + offset, character


def _text(body: str | bytes) -> str:
    # Latin-1 keeps each byte one character, so positions are the bytes' own; a multi-byte
    # UTF-8 character has no byte that reads as a quote, a backslash or a bracket.
    return body.decode("latin-1") if isinstance(body, bytes) else body


def json_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep the arrays and objects of JSON ``text`` nest; the scan stops at ``limit`` + 1."""
    depth = deepest = 0
    for _, character in brackets(_text(text)):
        if character in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
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
    kept: list[bytes] = []
    depth = 0
    skipping_from = 0  # the depth of the container being left empty; 0 when none
    kept_from: int | None = 0  # where the bytes kept next start; None while skipping
    for position, character in brackets(_text(body)):
        if character in "[{":
            depth += 1
            if depth > limit and not skipping_from:
                skipping_from = depth
                kept.append(body[kept_from:position + 1])
                kept_from = None
        else:
            if skipping_from and skipping_from == depth:
                skipping_from = 0
                kept_from = position
            depth -= 1
    if kept_from is not None:
        kept.append(body[kept_from:])
    cut = b"".join(kept)
    return cut + b" " * (len(body) - len(cut))
