"""Suppression comments, as ruff spells them, read from a file's text.

- ``# noqa: FX002`` or ``# fx-lsp: ignore[FX002]`` on a line silences FX002 reported there, and,
  on a call line, FX002 reached through that call; several codes are separated by commas.
  ``# fx-lsp: ignore`` silences every code; a bare ``# noqa`` too, but since other linters
  share it, fx-lsp never reports one as unused, nor a ``# noqa`` naming only other tools' codes.
- A problem on a line that cannot end with a comment (inside a multi-line string, or
  continued by a backslash) is governed by the comment at the end of that range, as in ruff
  (``fxcore.workspace.noqa_lines``): ``governing_lines`` says which line that is.
- ``# fx-lsp: skip`` on a ``class`` line: the class is not traced.

Comments are found with ``tokenize``, so a ``#`` inside a string is not one.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

from fxcore.model.results import Range
from fxcore.rules import CODE_PREFIXES
from fxcore.workspace.noqa_lines import NoqaLines, noqa_lines

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*fx-lsp:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
_SKIP = re.compile(r"#\s*fx-lsp:\s*skip\b")
_CODE = re.compile(r"[A-Z]+[0-9]+")
#: Why a class marked ``# fx-lsp: skip`` has no verdict (``ModuleResult.reason``).
SKIP_REASON = "Skipped: `# fx-lsp: skip` on its class line."


@dataclass(frozen=True)
class Directive:
    """One suppression comment."""

    kind: str  # "noqa" | "ignore" | "skip"
    #: The codes it names; None: every code.
    codes: frozenset[str] | None
    #: Where the directive is (to remove it), on its own line.
    range: Range

    def silences(self, code: str) -> bool:
        return self.kind != "skip" and (self.codes is None or code in self.codes)

    @property
    def reportable_codes(self) -> frozenset[str] | None:
        """The codes that make it unused when they silence nothing; None: report it whole
        (``# fx-lsp: ignore`` and ``skip``); empty: never report (a bare or foreign noqa)."""
        if self.kind == "noqa":
            return frozenset(c for c in self.codes or () if c.startswith(CODE_PREFIXES))
        return self.codes


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(line, 0-based column, text) of each comment; ``[]`` if the text does not tokenize."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.string))
    except (tokenize.TokenError, SyntaxError):
        return found
    return found


def _codes(listed: str | None) -> frozenset[str] | None:
    return None if listed is None else frozenset(_CODE.findall(listed.upper()))


_DIRECTIVES = ((_NOQA, "noqa"), (_IGNORE, "ignore"), (_SKIP, "skip"))


def parse(text: str) -> dict[int, list[Directive]]:
    """The suppression directives of a file, by 1-based line."""
    found: dict[int, list[Directive]] = {}
    # A directive's comment is part of the text: a text none matches has none, and is not
    # tokenized (seconds for a file of thousands of classes, for nothing).
    if not any(pattern.search(text) for pattern, _ in _DIRECTIVES):
        return found
    for line, column, comment in _comments(text):
        for pattern, kind in _DIRECTIVES:
            for match in pattern.finditer(comment):
                codes = None if kind == "skip" else _codes(match.group("codes"))
                where = Range(line, column + match.start() + 1, line, column + match.end() + 1)
                found.setdefault(line, []).append(Directive(kind, codes, where))
    return found


def skipped_lines(text: str) -> set[int]:
    """Lines with ``# fx-lsp: skip``."""
    return {line for line, directives in parse(text).items()
            if any(d.kind == "skip" for d in directives)}


def governing_lines(text: str) -> NoqaLines:
    """Where the comment that governs each line of ``text`` is; in a text that does not
    tokenize, each line governs itself (what ``parse`` finds there is all there is)."""
    return noqa_lines(text) or NoqaLines({})


def _replace_line(text: str, line: int, edit: Callable[[str], str]) -> str:
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return text
    body = lines[line - 1]
    content = body.rstrip("\r\n")
    lines[line - 1] = edit(content) + body[len(content):]
    return "".join(lines)


def add_ignore(text: str, line: int, code: str) -> str:
    """``# fx-lsp: ignore[code]`` on the line that governs ``line``, merged into one already
    there."""
    line = governing_lines(text).of(line)

    def edit(content: str) -> str:
        for directive in parse(text).get(line, []):
            if directive.kind == "ignore":
                if directive.codes is None or code in directive.codes:
                    return content
                start, end = directive.range.column - 1, directive.range.end_column - 1
                codes = [*_CODE.findall(content[start:end]), code]
                return f"{content[:start]}# fx-lsp: ignore[{', '.join(codes)}]{content[end:]}"
        return f"{content.rstrip()}  # fx-lsp: ignore[{code}]"

    return _replace_line(text, line, edit)


def remove_unused(text: str, line: int, directive: Directive, unused: frozenset[str] | None
                  ) -> str:
    """``directive`` on ``line`` without the ``unused`` codes (None: all of them); a directive
    left with no code is removed, keeping any comment that followed it."""
    def edit(content: str) -> str:
        start, end = directive.range.column - 1, directive.range.end_column - 1
        before, after = content[:start], content[end:]
        listed = _CODE.findall(content[start:end].upper().split("NOQA", 1)[-1])
        kept = [] if unused is None else [code for code in listed if code not in unused]
        if kept and directive.kind == "noqa":
            return f"{before}# noqa: {', '.join(kept)}{after}"
        if kept:
            return f"{before}# fx-lsp: ignore[{', '.join(kept)}]{after}"
        rest = after.strip()
        if not rest:
            return before.rstrip()
        return before + (rest if rest.startswith("#") else f"# {rest}")

    return _replace_line(text, line, edit)
