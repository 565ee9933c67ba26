"""Between fxcore's positions (1-based lines, 1-based character columns) and LSP positions.

LSP positions count a column in the code units of the encoding negotiated at ``initialize``:
UTF-16 unless the client offered something else. A line with an emoji or a CJK character before
the failing expression is where a character count and a UTF-16 count part ways.
"""

from __future__ import annotations

from lsprotocol import types

from fxcore.model.results import Range, Span
from fxcore.workspace.paths import split_lines as split_lines  # the lines as LSP counts them


def _units(text: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", errors="surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_lsp(lines: list[str], line: int, column: int, encoding: str) -> types.Position:
    """fxcore's (line, column) as an LSP position, clamped to the text."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    characters = min(max(column - 1, 0), len(text))
    return types.Position(line=index, character=_units(text[:characters], encoding))


def range_to_lsp(lines: list[str], where: Range | Span, encoding: str) -> types.Range:
    start = to_lsp(lines, where.line, where.column, encoding)
    end = to_lsp(lines, where.end_line, where.end_column, encoding)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def from_lsp(lines: list[str], position: types.Position, encoding: str) -> tuple[int, int]:
    """An LSP position as fxcore's 1-based (line, character column)."""
    text = lines[position.line] if 0 <= position.line < len(lines) else ""
    units = 0
    for index, char in enumerate(text):
        if units >= position.character:
            return position.line + 1, index + 1
        units += _units(char, encoding)
    return position.line + 1, len(text) + 1
