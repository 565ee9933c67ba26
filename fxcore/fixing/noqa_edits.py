"""``# noqa: <codes>`` comments added to a file's text for its problems, as ruff's
``--add-noqa`` does: on the line whose comment governs the problem's line (itself, or the last
line of the multi-line string or backslash continuation it is in:
``fxcore.workspace.noqa_lines``), the codes of every problem governed there merged into one
comment, and into an existing ``# noqa: X`` on that line, else appended at its end. A text that
does not tokenize is left as it is, its problems refused with why: where its lines end is not
known.

Comments are found with ``tokenize`` (``fxcore.workspace.suppressions``), so a ``#`` inside a
string is not taken for one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fxcore.workspace import suppressions
from fxcore.workspace.noqa_lines import noqa_lines

_CODE = re.compile(r"[A-Z]+[0-9]+")


@dataclass
class NoqaEdit:
    """A file's text with the comments added."""

    text: str
    #: 1-based line of problems -> their codes the added comments silence (on that line or
    #: the one governing it).
    added: dict[int, list[str]] = field(default_factory=dict)
    #: 1-based line of problems -> why no comment could be put for them.
    refused: dict[int, str] = field(default_factory=dict)


def _merged(line: str, directive: suppressions.Directive,
            codes: list[str]) -> tuple[str, list[str]]:
    """``line`` with ``codes`` added to its ``# noqa: X`` (its codes kept in their order), and
    the codes that were new."""
    start, end = directive.range.column - 1, directive.range.end_column - 1
    listed = line[start:end].partition(":")[2]
    existing = _CODE.findall(listed.upper())
    new = [code for code in codes if code not in existing]
    return f"{line[:start]}# noqa: {', '.join(existing + new)}{line[end:]}", new


def _commented(body: str, directives: list[suppressions.Directive],
               codes: list[str]) -> tuple[str, list[str]]:
    """``body`` (a line without its ending) with a ``# noqa`` for ``codes``, and the codes that
    were new there."""
    noqa = [d for d in directives if d.kind == "noqa"]
    if any(d.codes is None for d in noqa):
        return body, []  # a bare noqa comment silences every code already
    if noqa:
        return _merged(body, noqa[0], codes)
    return f"{body.rstrip()}  # noqa: {', '.join(codes)}", codes


def add_noqa(text: str, codes_by_line: dict[int, set[str]]) -> NoqaEdit:
    """``text`` with a ``# noqa`` for the codes of each line (1-based) of ``codes_by_line``."""
    edit = NoqaEdit(text)
    governing = noqa_lines(text)
    if governing is None:
        edit.refused = dict.fromkeys(codes_by_line, "the file does not tokenize")
        return edit
    directives = suppressions.parse(text)
    lines = text.splitlines(keepends=True)
    wanted: dict[int, set[str]] = {}
    for number, codes in codes_by_line.items():
        if 1 <= number <= len(lines):
            wanted.setdefault(governing.of(number), set()).update(codes)
        else:
            edit.refused[number] = "the problem has no line in the file"
    new_at: dict[int, list[str]] = {}
    for number, codes in sorted(wanted.items()):
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        commented, new_at[number] = _commented(body, directives.get(number, []), sorted(codes))
        lines[number - 1] = commented + line[len(body):]
    for number, codes in sorted(codes_by_line.items()):
        new = new_at.get(governing.of(number), [])
        silenced = [code for code in sorted(codes) if code in new]
        if silenced:
            edit.added[number] = silenced
    edit.text = "".join(lines)
    return edit
