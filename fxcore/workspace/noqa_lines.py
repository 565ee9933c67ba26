"""Which line's suppression comment governs a problem, as ruff's ``NoqaMapping`` decides.

A line whose end is inside a multi-line string, or that continues with a backslash, cannot end
with a comment: a problem there is governed by the comment at the end of its range, the line
the string closes on or the last line of the continuation. Ranges that touch or overlap (a
continuation that ends in a multi-line string, a string closed on a line that continues) are
one range, governed by its last line. Every other line governs itself, parenthesised
statements' lines included, since each of them can end with a comment.

Unlike ruff, a single-quoted string continued by a backslash inside it counts as a multi-line
string too: a comment after that backslash would be part of the string.

Lines are found with ``tokenize``: Python emits ``NL`` for a newline inside brackets and
``NEWLINE`` at a statement's end, and no token for a backslash-newline, so two tokens on
different lines with neither between them are joined by backslashes.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

#: The tokens that open and close an f-string in Python 3.12 and later (one STRING before),
#: and a t-string in 3.14 and later.
_STRING_STARTS = {getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START")
                  if hasattr(tokenize, name)}
_STRING_ENDS = {getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END")
                if hasattr(tokenize, name)}
#: Tokens that end a physical line: after them, the next line is not a continuation.
_LINE_ENDS = {tokenize.NEWLINE, tokenize.NL}


@dataclass(frozen=True)
class NoqaLines:
    """The lines of a text whose suppression comment is on another line."""

    #: 1-based line -> the line whose comment governs it; lines left out govern themselves.
    moved: dict[int, int]

    def of(self, line: int) -> int:
        """The line whose comment governs ``line``."""
        return self.moved.get(line, line)


def _ranges(text: str) -> list[tuple[int, int]]:
    """(first, last) line of each multi-line string and each backslash continuation, by
    first line; raises ``tokenize.TokenError`` or ``SyntaxError``."""
    found: list[tuple[int, int]] = []
    opened: list[int] = []
    previous: tokenize.TokenInfo | None = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        # Inside an f-string no backslash joins lines: the string's own range covers them.
        if previous is not None and not opened and previous.type not in _LINE_ENDS \
                and token.start[0] > previous.end[0]:
            found.append((previous.end[0], token.start[0]))
        previous = token
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            found.append((token.start[0], token.end[0]))
        elif token.type in _STRING_STARTS:
            opened.append(token.start[0])
        elif token.type in _STRING_ENDS and opened:
            first = opened.pop()
            if not opened and token.end[0] > first:  # an outer f-string covers inner ones
                found.append((first, token.end[0]))
    return sorted(found)


def noqa_lines(text: str) -> NoqaLines | None:
    """The governing line of each line of ``text`` that does not govern itself; None when the
    text does not tokenize (where its lines end is not known)."""
    try:
        ranges = _ranges(text)
    except (tokenize.TokenError, SyntaxError):
        return None
    merged: list[list[int]] = []
    for first, last in ranges:
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return NoqaLines({line: last for first, last in merged for line in range(first, last)})
