"""``# noqa: <codes>`` comments added to a file's text at the lines of its problems, as ruff's
``--add-noqa`` does: merged into an existing ``# noqa: X`` on the line, else appended at the
line's end. A line whose end is inside a string (a multi-line string's first lines) or that
continues with a backslash cannot end with a comment: it is refused, with why, and left as it
is.

Comments are found with ``tokenize`` (``fxcore.workspace.suppressions``), so a ``#`` inside a
string is not taken for one.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from fxcore.workspace import suppressions

_CODE = re.compile(r"[A-Z]+[0-9]+")
#: The tokens that open and close an f-string in Python 3.12 and later (one STRING before).
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass
class NoqaEdit:
    """A file's text with the comments added."""

    text: str
    #: 1-based line -> the codes added there.
    added: dict[int, list[str]] = field(default_factory=dict)
    #: 1-based line -> why no comment could be put there.
    refused: dict[int, str] = field(default_factory=dict)


@dataclass
class _Lines:
    """What ``tokenize`` says of a text's lines."""

    #: Lines whose end is inside a string.
    in_string: set[int] = field(default_factory=set)
    #: Lines that hold a comment.
    commented: set[int] = field(default_factory=set)


def _lines(text: str) -> _Lines | None:
    """The text's lines as tokens see them; None when it does not tokenize."""
    found = _Lines()
    opened: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.commented.add(token.start[0])
            elif token.type == tokenize.STRING:
                found.in_string.update(range(token.start[0], token.end[0]))
            elif token.type == _FSTRING_START:
                opened.append(token.start[0])
            elif token.type == _FSTRING_END and opened:
                found.in_string.update(range(opened.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def _merged(line: str, directive: suppressions.Directive,
            codes: list[str]) -> tuple[str, list[str]]:
    """``line`` with ``codes`` added to its ``# noqa: X`` (its codes kept in their order), and
    the codes that were new."""
    start, end = directive.range.column - 1, directive.range.end_column - 1
    listed = line[start:end].partition(":")[2]
    existing = _CODE.findall(listed.upper())
    new = [code for code in codes if code not in existing]
    return f"{line[:start]}# noqa: {', '.join(existing + new)}{line[end:]}", new


def add_noqa(text: str, codes_by_line: dict[int, set[str]]) -> NoqaEdit:
    """``text`` with a ``# noqa`` for the codes of each line (1-based) of ``codes_by_line``."""
    edit = NoqaEdit(text)
    found = _lines(text)
    if found is None:
        edit.refused = dict.fromkeys(codes_by_line, "the file does not tokenize")
        return edit
    directives = suppressions.parse(text)
    lines = text.splitlines(keepends=True)
    for number, codes in sorted(codes_by_line.items()):
        if not 1 <= number <= len(lines):
            edit.refused[number] = "the problem has no line in the file"
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        wanted = sorted(codes)
        noqa = [d for d in directives.get(number, []) if d.kind == "noqa"]
        if number in found.in_string:
            edit.refused[number] = "the line ends inside a multi-line string"
        elif body.endswith("\\") and number not in found.commented:
            edit.refused[number] = "the line continues with a backslash"
        elif any(d.codes is None for d in noqa):
            continue  # a bare noqa comment silences every code already
        elif noqa:
            body, new = _merged(body, noqa[0], wanted)
            if new:
                edit.added[number] = new
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(wanted)}"
            edit.added[number] = wanted
        lines[number - 1] = body + ending
    edit.text = "".join(lines)
    return edit
