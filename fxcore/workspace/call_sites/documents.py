"""Constructor calls in documents other than Python files: Markdown's fenced Python blocks and
a notebook's code cells, each read in order as one scope, never run."""

from __future__ import annotations

import bisect
import re

from fxcore.model.job_spec import CallSite
from fxcore.workspace.call_sites.calls import calls_in_blocks
from fxcore.workspace.call_sites.reading_budget import ReadingBudget
from fxcore.workspace.notebook.cells import NotebookCells
from fxcore.workspace.notebook.module_builder import cell_python

#: A Markdown code fence (CommonMark): up to three spaces, three or more backticks or tildes,
#: then the info string, whose first word is the block's language.
_MARKDOWN_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^\n]*$")


#: Languages of the fenced blocks read as Python; a block without one is read too.
_PYTHON_LANGUAGES = frozenset({"", "python", "py", "python3", "pycon"})


def markdown_python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block's first line, its text) for each fenced block of Python. Fences are
    paired as Markdown pairs them: a block closes only at a fence of the same character at
    least as long, with no info string, so the closing fence of a ```bash block is never
    taken for the opening of the next one."""
    blocks = []
    lines = text.splitlines()
    opened: tuple[str, str, int] | None = None  # (fence, language, index of its first line)
    for index, line in enumerate(lines):
        match = _MARKDOWN_FENCE.match(line)
        if match is None:
            continue
        fence, language = match.group(1), match.group(2).lower()
        if opened is None:
            if not (fence[0] == "`" and "`" in line[line.index(fence) + len(fence):]):
                opened = (fence, language, index + 1)
        elif (fence[0] == opened[0][0] and len(fence) >= len(opened[0])
              and line.strip() == fence):
            if opened[1] in _PYTHON_LANGUAGES:
                blocks.append((opened[2] + 1, "\n".join(lines[opened[2]:index]) + "\n"))
            opened = None
    return blocks


def calls_in_markdown(text: str, site_of: str,
                      budget: ReadingBudget | None = None) -> list[tuple[str, CallSite]]:
    """The calls in a Markdown file's Python blocks, read in order as one scope."""
    return calls_in_blocks(markdown_python_blocks(text), lambda line: f"{site_of}:{line}",
                           budget=budget)


def calls_in_notebook(text: str, site_of: str,
                      budget: ReadingBudget | None = None) -> list[tuple[str, CallSite]]:
    """The calls in a notebook's code cells, all of them (data loading and training cells
    too: they are read, never run), read in order as one scope, each cell's at
    ``nb.ipynb:cell 12:<line>``."""
    try:
        cells = NotebookCells.from_json(text)
    except (ValueError, RecursionError):
        return []
    blocks: list[tuple[int, str]] = []
    cell_numbers: list[int] = []
    next_line = 1
    for index, cell in enumerate(cells.cells):
        source = cell_python(cell.source) if cell.kind == "code" and cells.python else None
        if source is not None:
            blocks.append((next_line, source))
            cell_numbers.append(index + 1)
            next_line += len(source.splitlines()) + 1

    def site_at(line: int) -> str:
        # The cells are read one after another, each from the line after the one before.
        position = bisect.bisect_right([first for first, _source in blocks], line) - 1
        return f"{site_of}:cell {cell_numbers[position]}:{line - blocks[position][0] + 1}"

    return calls_in_blocks(blocks, site_at, budget=budget)
