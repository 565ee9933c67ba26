"""A notebook's cells and the module fx-lsp checks of them: the data (``NotebookCells``,
``NotebookModule`` and its maps between module lines and cell places), and explaining a
failure on a name that only left-out code defines."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from fxcore.model.results import CODES, FileResult

NOTEBOOK_SUFFIX = ".ipynb"
#: Notebooks hold their outputs (plots as base64): they may be far larger than a source file.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: A UTF-8 byte order mark once decoded: a notebook's JSON may start with one.
UTF8_BOM_CHARACTER = "\ufeff"


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class NotebookCell:
    """One cell: its text, its kind (``code``, ``markdown``, ``raw``) and its nbformat id."""

    source: str
    kind: str = "code"
    id: str | None = None


@dataclass(frozen=True)
class NotebookCells:
    """A notebook's cells in order, as read from its JSON or sent by an editor."""

    cells: tuple[NotebookCell, ...]
    #: The notebook's language is Python (``metadata.language_info.name`` or the kernel's
    #: language, when it says): another language's code cells are not read.
    python: bool = True

    @classmethod
    def from_json(cls, text: str) -> NotebookCells:
        """Raises ``ValueError`` when ``text`` is not a notebook's JSON. A leading byte order
        mark (a buffer given as its file's bytes decode) is not part of it."""
        data = json.loads(text.removeprefix(UTF8_BOM_CHARACTER))
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise ValueError("not a Jupyter notebook: no list of cells")
        cells = []
        for raw in data["cells"]:
            if not isinstance(raw, dict):
                raise ValueError("not a Jupyter notebook: a cell is not an object")
            source = raw.get("source", "")
            if isinstance(source, list):
                source = "".join(part for part in source if isinstance(part, str))
            cell_id = raw.get("id")
            cells.append(NotebookCell(source if isinstance(source, str) else "",
                                      str(raw.get("cell_type", "code")),
                                      cell_id if isinstance(cell_id, str) else None))
        metadata = data.get("metadata")
        language = None
        if isinstance(metadata, dict):
            info, kernel = metadata.get("language_info"), metadata.get("kernelspec")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                language = info["name"]
            elif isinstance(kernel, dict) and isinstance(kernel.get("language"), str):
                language = kernel["language"]
        return cls(tuple(cells), python=language is None or language.lower() == "python")

    def to_json(self) -> str:
        """Minimal notebook JSON of these cells: what an editor puts in a job's overlays for
        the notebook's path (outputs and metadata do not matter to checking)."""
        return json.dumps({
            "cells": [{"cell_type": cell.kind, "source": cell.source,
                       **({"id": cell.id} if cell.id is not None else {})}
                      for cell in self.cells],
            "metadata": {} if self.python else {"language_info": {"name": "other"}},
            "nbformat": 4, "nbformat_minor": 5})


@dataclass(frozen=True)
class CellPosition:
    """A place in a notebook: ``cell`` is the 0-based index into all its cells (markdown
    included, as the JSON's ``cells`` and LSP's ``NotebookDocument.cells`` count), ``line``
    and ``column`` 1-based in that cell's text. Shown as ``cell {cell + 1}`` (ruff's way)."""

    cell: int
    line: int
    column: int

    @property
    def cell_number(self) -> int:
        return self.cell + 1


@dataclass(frozen=True)
class DroppedCode:
    """A statement (or IPython line, or cell) left out of the module, and why."""

    #: Where it starts (column 1).
    start: CellPosition
    end_line: int
    #: ``runs code``, ``magic``, ``shell``, ``cell magic``, ``syntax error``.
    reason: str
    #: The names it would have bound at module level.
    names: tuple[str, ...] = ()
    #: Its first line, as written.
    text: str = ""


@dataclass
class NotebookModule:
    """The module built from a notebook's code cells, and the maps between its lines and the
    cells'. Lines of the module are the kept cells' lines as written (an IPython line inside a
    kept ``def`` reads ``pass``), so columns are the same in both."""

    text: str
    #: ``line_map[module_line - 1]`` is (cell index, cell line), both as ``CellPosition``.
    line_map: list[tuple[int, int]] = field(default_factory=list)
    dropped: list[DroppedCode] = field(default_factory=list)
    cells: NotebookCells | None = None

    def __post_init__(self) -> None:
        self._module_lines = {place: line for line, place in enumerate(self.line_map, 1)}

    def to_cell_position(self, line: int, column: int) -> CellPosition | None:
        """The cell place of a module place; None for a line outside the module. The line
        after the module's last maps to the line after the last kept line (an edit that
        appends goes there)."""
        if 1 <= line <= len(self.line_map):
            cell, cell_line = self.line_map[line - 1]
            return CellPosition(cell, cell_line, column)
        if line == len(self.line_map) + 1 and self.line_map:
            cell, cell_line = self.line_map[-1]
            return CellPosition(cell, cell_line + 1, column)
        return None

    def to_module_position(self, cell: int, line: int, column: int) -> tuple[int, int] | None:
        """The module (line, column) of a cell place; None when that line was left out."""
        found = self._module_lines.get((cell, line))
        return None if found is None else (found, column)

    def dropped_definition(self, name: str) -> DroppedCode | None:
        """The last left-out code that binds ``name``, if any."""
        return next((code for code in reversed(self.dropped) if name in code.names), None)

    def describe_dropped(self, name: str) -> str | None:
        """Why ``name`` is not defined in the module, for a message: which cell defines it and
        why fx-lsp left that code out; None when no left-out code defines it."""
        code = self.dropped_definition(name)
        if code is None:
            return None
        why = {
            "runs code": "it runs code (only imports, def, class and assignments of literals "
                         "or of calls of classes are kept)",
            "syntax error": "that cell does not parse",
            "magic": "it is an IPython magic",
            "shell": "it is a shell command",
            "cell magic": "the cell is a %% cell magic",
        }.get(code.reason, code.reason)
        return (f"`{name}` is defined in cell {code.start.cell_number}, line {code.start.line} "
                f"(`{code.text.strip()}`), which fx-lsp leaves out of the notebook's module: "
                f"{why}. Checking a notebook never runs its data loading or training; define "
                f"`{name}` with a literal (or a call of a class) in a cell, or pass it in.")


_NAME_ERROR = re.compile(r"NameError: name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


def split_cell_lines(text: str) -> list[str]:
    """A cell's lines as LSP counts them."""
    return _LINE_BREAK.split(text)


def unreadable_notebook_reason(text: str) -> str | None:
    """Why a notebook's JSON text cannot be read as a notebook (None when it can)."""
    try:
        NotebookCells.from_json(text)
    except (ValueError, RecursionError) as error:
        return str(error)
    return None


def explain_dropped_names(result: FileResult, module: NotebookModule) -> None:
    """Make each failure of a notebook's result that is a ``NameError`` of a name only
    left-out code defines (data loaded in a later cell, a constant computed by a call), or
    an assignment that raised on import (``result.failed_assignments``), an FX100 that names
    the cell defining it and why it is missing: the class needs the notebook to run code
    that checking never runs, whatever its arguments."""
    failed = {name: assignment for assignment in result.failed_assignments
              for name in assignment.names}

    def explain(name: str) -> str | None:
        assignment = failed.get(name)
        place = module.to_cell_position(assignment.line, 1) if assignment else None
        if assignment is None or place is None:
            return module.describe_dropped(name)
        text = module.text.splitlines()[assignment.line - 1].strip()
        return (f"`{name}` is assigned in cell {place.cell_number}, line {place.line} "
                f"(`{text}`), which raised {assignment.error} when fx-lsp loaded the "
                "notebook's definitions: it was skipped, as a cell that fails defines "
                f"nothing. Define `{name}` with a value that needs no data, or pass it in.")

    for failure in result.errors:
        match = _NAME_ERROR.search(failure.message)
        explanation = explain(match.group(1)) if match else None
        if explanation is not None:
            failure.message = f"{failure.message} {explanation}"
    for found in [*result.modules, *result.derived_modules]:
        for failure in found.failures:
            match = _NAME_ERROR.search(failure.message)
            explanation = explain(match.group(1)) if match else None
            if match is None or explanation is None:
                continue
            failure.code, failure.kind = CODES["import"], "import"
            failure.message = f"{found.class_name} needs a name the notebook's checked " \
                f"definitions lack ({match.group(0)}): {explanation}"
            if found.status == "not-traced":
                found.status = "failed"
                found.reason = failure.message
