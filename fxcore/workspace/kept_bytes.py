"""An edited text written back as the bytes it was read from, but for the lines it changes.

Fixes and ``--add-noqa`` edit a file's text as ``fxcore.workspace.file_access.read_text``
gives it (its byte order mark taken off, every ``\\r\\n`` and ``\\r`` read as ``\\n``), and
the editor's buffers as the editor holds them. What they did not change stays as it was:
``kept_text`` gives each line of the edited text the line end it had (a line an edit adds or
rewrites takes its neighbour's, else the file's most common one) and keeps whether the file
ends with a line end; ``kept_bytes`` also keeps a byte order mark. ``replace_workspace_text``
is the one writer of a workspace file fx-lsp edits in place, and a write that fails is an
``UnwritableFiles`` whose message says so in one line, the file as it was.
"""

from __future__ import annotations

import difflib
import os
import re
from collections import Counter
from collections.abc import Iterable

from fxcore.workspace.file_access import (
    UTF8_BOM,
    UnsafeWrite,
    inside_workspace,
    read_bytes,
    replace_bytes,
)

_LINE_END = re.compile(r"(\r\n|\r|\n)")


def _lines(text: str) -> list[list[str]]:
    """[content, line end] of each line of ``text``; the last line's end is "" when the text
    does not end with one (an empty text has no line)."""
    parts = _LINE_END.split(text)
    lines = [[parts[index], parts[index + 1]] for index in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        lines.append([parts[-1], ""])
    return lines


def _common(first: list[str], second: list[str]) -> int:
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


def _blocks(old: list[str], new: list[str]) -> Iterable[tuple[str, int, int, int, int]]:
    """``SequenceMatcher`` opcodes of two line lists, the shared start and end matched
    first: an edit touches a few lines of a file that may have 20,000."""
    start = _common(old, new)
    end = _common(old[start:][::-1], new[start:][::-1])
    if start:
        yield "equal", 0, start, 0, start
    matcher = difflib.SequenceMatcher(None, old[start:len(old) - end],
                                      new[start:len(new) - end], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        yield tag, i1 + start, i2 + start, j1 + start, j2 + start
    if end:
        yield "equal", len(old) - end, len(old), len(new) - end, len(new)


def kept_text(original: str, new: str) -> str:
    """``new`` with the line ends of ``original``, the text it was edited from (as on disk,
    ``\\r\\n`` and ``\\r`` kept): a line found in both keeps its end; a line the edit wrote
    takes the end of the line it replaced, else of the line before it (after it, at the
    start), else the most common one; and the text ends with a line end exactly when
    ``original`` did."""
    old = _lines(original)
    if not old:
        return new
    common = Counter(end for _, end in old if end).most_common(1)
    dominant = common[0][0] if common else "\n"
    fresh = _lines(new)
    kept: list[list[str]] = []
    for tag, i1, i2, j1, j2 in _blocks([c for c, _ in old], [c for c, _ in fresh]):
        if tag == "equal":
            kept += [[old[i1 + k][0], old[i1 + k][1]] for k in range(j2 - j1)]
            continue
        for k in range(j2 - j1):
            if i1 + k < i2:
                end = old[i1 + k][1]
            elif i2 > i1:
                end = old[i2 - 1][1]
            else:
                end = (old[i1 - 1][1] if i1 > 0 else "") or \
                    (old[i1][1] if i1 < len(old) else "")
            kept.append([fresh[j1 + k][0], end])
    for line in kept:
        line[1] = line[1] or dominant
    if kept:
        kept[-1][1] = "" if not old[-1][1] else kept[-1][1]
    return "".join(content + end for content, end in kept)


def kept_bytes(raw: bytes, new: str) -> bytes:
    """The bytes of ``new``, edited from the file whose bytes are ``raw``: its line ends as
    ``kept_text`` keeps them, in UTF-8, after the byte order mark when ``raw`` has one."""
    bom = raw.startswith(UTF8_BOM)
    original = raw.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    return (UTF8_BOM if bom else b"") + kept_text(original, new).encode("utf-8")


def universal_newlines(text: str) -> str:
    """``text`` with each ``\r\n`` and ``\r`` a ``\n``, as ``read_text`` reads a file: what
    fixes are planned on (libcst refuses a text whose line ends are mixed)."""
    return _LINE_END.sub("\n", text)


def as_on_disk(path: str, text: str) -> str:
    """``text``, the file at ``path`` as ``read_text`` reads it, with the line ends it has on
    disk (its byte order mark left out, as editors leave it out of a buffer): the text an
    editor applies an edit of a file that is not open to. ``text`` itself when the file
    cannot be read or holds another text by now."""
    try:
        raw = read_bytes(path)
    except OSError:
        return text
    disk = raw.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    return disk if universal_newlines(disk) == text else text


class UnwritableFiles(OSError):
    """Files an edit could not be written to, each left as it was: one line for the user,
    ``fx-lsp: cannot write models.py: Permission denied; it is unchanged``."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        said = "; ".join(f"cannot write {_shown(path)}: {why}" for path, why in failures)
        super().__init__(f"{said}; {'it is' if len(failures) == 1 else 'they are'} unchanged")


def replace_workspace_text(path: str, text: str, root: str) -> None:
    """Make ``text`` the content of ``path``, a file of workspace ``root`` (refused,
    ``UnsafeWrite``, when a link takes it out of the workspace: ``inside_workspace``), its
    bytes kept as ``kept_bytes`` keeps them. Raises ``UnwritableFiles`` (the file unchanged,
    no temporary left) when the write fails: a read-only file or folder, a full disk."""
    real = inside_workspace(path, root)
    try:
        raw = read_bytes(real)
    except FileNotFoundError:
        raw = b""
    except OSError as error:
        raise UnwritableFiles([(path, _reason(error))]) from error
    try:
        replace_bytes(real, kept_bytes(raw, text))
    except UnsafeWrite:
        raise
    except OSError as error:
        raise UnwritableFiles([(path, _reason(error))]) from error


def _shown(path: str) -> str:
    """Relative to the current folder when below it, as ruff prints paths."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def replace_workspace_texts(texts: Iterable[tuple[str, str, str]]) -> None:
    """``replace_workspace_text`` for each (path, text, root), every file tried; raises one
    ``UnwritableFiles`` for all those that could not be written."""
    failures: list[tuple[str, str]] = []
    for path, text, root in texts:
        try:
            replace_workspace_text(path, text, root)
        except UnwritableFiles as error:
            failures += error.failures
    if failures:
        raise UnwritableFiles(failures)
