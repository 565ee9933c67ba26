"""A baseline of accepted problems (``.fx-lsp-baseline.json``), as basedpyright's
``--writebaseline``: a project adopting fx-lsp records what it reports today, and later runs
report only what is new.

An entry is a problem's code, capture mode, file (relative to the workspace root), class and a
fingerprint of its source line with its nearest neighbours in its block, comments left out and
whitespace collapsed (``fingerprint``): not its line number, so that lines moving (code added
above) do not make old problems new. The file is sorted, one entry per line, so that it diffs
well. The command line and the server match with the same plain function, ``match``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tokenize
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Generic, TypeVar

from fxcore.reporting.report import Problem
from fxcore.workspace.file_access import TextOf
from fxcore.workspace.json_nesting import too_deep

#: The file's name at the workspace root, where the command line looks for it by default.
BASELINE_NAME = ".fx-lsp-baseline.json"
#: The file's format; a file of another one is refused rather than misread.
BASELINE_VERSION = 1
#: The most bytes of a baseline read or written: about 400,000 entries, far more than a
#: source file's limit (``fxcore.workspace.file_access.MAX_FILE_BYTES``).
MAX_BASELINE_BYTES = 64 * 1024 * 1024

Item = TypeVar("Item")


class BaselineError(Exception):
    """A baseline file that cannot be read as one."""


@dataclass(frozen=True, order=True)
class Entry:
    """One accepted problem; equal entries are the same problem."""

    file: str
    code: str
    mode: str
    class_name: str
    fingerprint: str


def _code_lines(text: str) -> list[str]:
    """The text's lines without their comments (a ``# noqa`` added, a comment edited, do not
    change a fingerprint), whitespace collapsed; as they are when the text does not
    tokenize."""
    lines = text.splitlines()
    try:
        comments = [token.start for token in tokenize.generate_tokens(io.StringIO(text).readline)
                    if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        comments = []
    for line, column in comments:
        if line <= len(lines):
            lines[line - 1] = lines[line - 1][:column]
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


#: The first words of a line that starts a class or function definition (its decorators
#: included): the definition is a unit that moves as one, whatever stands above it.
_DEFINITION_STARTS = ("class ", "def ", "async def ", "@")


def _starts_definition(line: str) -> bool:
    return line.lstrip().startswith(_DEFINITION_STARTS)


def _neighbour(lines: list[str], index: int, step: int) -> str:
    """The nearest line with code above (``step`` -1) or below (1) line ``index``, when it is
    in the line's block: indented as deep or deeper, or, above, the header that opens the
    block (a new class or function right after a problem's line leaves it as it was). Above
    a class or function's first line (a problem on a class's name) only its own decorator
    counts: code added above a class, moving it down, is not its block."""
    own = _indent(lines[index])
    at = index + step
    while 0 <= at < len(lines) and not lines[at].strip():
        at += step
    if not 0 <= at < len(lines):
        return ""
    near = lines[at]
    if step < 0 and _starts_definition(lines[index]) and not near.lstrip().startswith("@"):
        return ""
    if _indent(near) >= own or (step < 0 and near.rstrip().endswith(":")):
        return " ".join(near.split())
    return ""


def fingerprint(text: str | None, line: int) -> str:
    """A hash of the 1-based ``line`` of ``text`` and its nearest lines with code above and
    below in its block (``_neighbour``), comments left out and whitespace collapsed: blank
    lines, comments and code outside its block around it leave it as it was; editing the
    line or its neighbours makes it another."""
    lines = _code_lines(text or "")
    index = line - 1
    if not 0 <= index < len(lines):
        return hashlib.sha256(b"").hexdigest()[:16]
    parts = (_neighbour(lines, index, -1), " ".join(lines[index].split()),
             _neighbour(lines, index, 1))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def relative_file(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators, the same on every machine."""
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def entry_of(problem: Problem, root: str, text_of: TextOf) -> Entry:
    return Entry(relative_file(problem.path, root), problem.code, problem.mode,
                 problem.classes[0] if problem.classes else "",
                 fingerprint(text_of(problem.path), problem.line))


def entries_of(problems: Iterable[Problem], root: str, text_of: TextOf) -> list[Entry]:
    return [entry_of(problem, root, text_of) for problem in problems]


@dataclass
class Matched(Generic[Item]):
    """What ``match`` left of a run's problems."""

    #: The problems not in the baseline: the ones to report.
    reported: list[Item] = field(default_factory=list)
    #: The problems the baseline holds.
    baselined: list[Item] = field(default_factory=list)
    #: The baseline's entries that no problem matched: fixed since, the file can lose them.
    fixed: list[Entry] = field(default_factory=list)


def match(items: Sequence[tuple[Item, Entry]], baseline: Iterable[Entry],
          checked_files: Iterable[str] | None = None) -> Matched[Item]:
    """Each item (a problem with its entry) matched against the baseline, duplicates counted:
    two equal problems against one entry leave one reported. ``fixed`` holds only entries of
    ``checked_files`` (relative, as in entries) when given: a file not checked in this run
    has not had its problems fixed."""
    left = Counter(baseline)
    found: Matched[Item] = Matched()
    for item, entry in items:
        if left[entry] > 0:
            left[entry] -= 1
            found.baselined.append(item)
        else:
            found.reported.append(item)
    checked = None if checked_files is None else set(checked_files)
    found.fixed = sorted(entry for entry in left.elements()
                         if checked is None or entry.file in checked)
    return found


def dumps(entries: Iterable[Entry]) -> str:
    """The file's text: sorted entries, one a line."""
    lines = [json.dumps(asdict(entry), sort_keys=True) for entry in sorted(entries)]
    body = ",\n".join(f"    {line}" for line in lines)
    return (f'{{\n  "version": {BASELINE_VERSION},\n  "problems": [\n'
            + (body + "\n" if body else "") + "  ]\n}\n")


def loads(text: str) -> list[Entry]:
    """The entries of a baseline file's text; ``BaselineError`` when it is not one."""
    # A baseline is 3 levels deep: anything much deeper is refused before Python's parser,
    # which recurses, meets it.
    deep = too_deep(text, "it")
    if deep is not None:
        raise BaselineError(f"not a baseline file ({deep})")
    try:
        data = json.loads(text)
        if data.get("version") != BASELINE_VERSION:
            raise BaselineError(f"version {data.get('version')!r}, not {BASELINE_VERSION}")
        return [Entry(**{name: str(entry[name]) for name in Entry.__dataclass_fields__})
                for entry in data["problems"]]
    except (ValueError, AttributeError, KeyError, TypeError) as error:
        raise BaselineError(f"not a baseline file ({error})") from error


def kept_on_rewrite(old: Iterable[Entry], checked_files: Iterable[str]) -> list[Entry]:
    """The entries of an existing baseline that a new one keeps: those of files other than
    ``checked_files`` (a run on one folder, or one shard, must not forget the others'
    problems)."""
    checked = set(checked_files)
    return [entry for entry in old if entry.file not in checked]
