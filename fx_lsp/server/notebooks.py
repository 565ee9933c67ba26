"""Open notebooks (LSP 3.17 notebook documents): a notebook's Python code cells as the one
module the engine traces (built by ``fxcore.workspace.notebook``), and positions between that
module and
the cells.

pygls's workspace keeps the notebooks and their cells' texts (``notebookDocument/did*``); a
``NotebookModule`` is what the server derives from one when it changes: the module text, the
place in a cell of each module line, and the cells' URIs and versions. The server traces and
answers a notebook as one document, the module; this module moves what it publishes and
answers into the cells, and a request about a cell into the module. A cell line the module
kept is copied into it whole (but an IPython line inside a kept ``def``, which reads ``pass``),
so a column is the same in both; a cell line the module left out (a training loop, a magic)
has no place in the module.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fx_lsp.features import positions
from fx_lsp.features.code_actions import minimal_edit
from fxcore.workspace.notebook.cells import NotebookCell, NotebookCells
from fxcore.workspace.notebook.json_edits import NotebookEditError, edit_notebook_json
from fxcore.workspace.notebook.module_builder import build_notebook_module
from fxcore.workspace.paths import notebook_module

#: The notebooks the server asks the client to send: Jupyter notebooks' Python cells.
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        )
    ],
    save=True,
)


@dataclass(frozen=True)
class Cell:
    """A cell as the client last sent it (a markdown cell has no text here)."""

    uri: str
    version: int
    text: str
    code: bool


@dataclass(frozen=True)
class NotebookModule:
    """An open notebook and the module its code cells make."""

    uri: str
    path: str
    #: Every cell, in order (``fxcore.workspace.notebook`` counts markdown cells too).
    cells: tuple[Cell, ...]
    #: What a job's overlay for the notebook is (``fxcore.workspace.paths.source_text`` builds the
    #: module from it in the worker, as from the file).
    json: str
    #: The module the engine traces, and each of its lines' (cell index, 0-based cell line).
    text: str
    places: tuple[tuple[int, int] | None, ...]
    #: The client's position encoding.
    encoding: str

    @functools.cached_property
    def lines(self) -> list[str]:
        return positions.split_lines(self.text)

    @functools.cached_property
    def _module_lines(self) -> dict[tuple[int, int], int]:
        return {place: line for line, place in enumerate(self.places) if place is not None}

    @functools.cached_property
    def file_uri(self) -> str:
        """The URI of the module's path (the notebook file's) in results and edits."""
        return from_fs_path(self.path) or self.path

    def cell_index(self, uri: str) -> int | None:
        return next((index for index, cell in enumerate(self.cells) if cell.uri == uri), None)

    def module_line(self, cell: int, line: int) -> int | None:
        """The 0-based module line that is line ``line`` of cell ``cell``, if the module kept
        it."""
        return self._module_lines.get((cell, line))

    def _line_end(self, line: int) -> int:
        """The LSP character at the end of module line ``line`` (0-based)."""
        text = self.lines[line] if 0 <= line < len(self.lines) else ""
        return positions.to_lsp([text], 1, len(text) + 1, self.encoding).character

    # -- module -> cell --------------------------------------------------------------------

    def place_of(self, line: int) -> tuple[int, int] | None:
        return self.places[line] if 0 <= line < len(self.places) else None

    def position_to_cell(self, position: types.Position) -> tuple[int, types.Position] | None:
        place = self.place_of(position.line)
        if place is None:
            return None
        return place[0], types.Position(line=place[1], character=position.character)

    def range_to_cell(self, where: types.Range) -> tuple[int, types.Range] | None:
        """The cell range of a module range; one that runs out of its first cell ends at the
        end of that cell's last line in the module."""
        start = self.position_to_cell(where.start)
        if start is None:
            return None
        end = self.position_to_cell(where.end)
        if end is None or end[0] != start[0]:
            last = where.start.line
            while (following := self.place_of(last + 1)) is not None and following[0] == start[0]:
                last += 1
            end = start[0], types.Position(line=self.places[last][1],  # type: ignore[index]
                                           character=self._line_end(last))
        return start[0], types.Range(start=start[1], end=end[1])

    def location_to_cell(self, uri: str, where: types.Range) -> tuple[str, types.Range]:
        """A location in the module as its cell's; any other as it is."""
        found = self.range_to_cell(where) if uri == self.file_uri else None
        return (uri, where) if found is None else (self.cells[found[0]].uri, found[1])

    # -- cell -> module --------------------------------------------------------------------

    def position_to_module(self, cell: int, position: types.Position) -> types.Position | None:
        line = self.module_line(cell, position.line)
        return None if line is None else types.Position(line=line,
                                                        character=position.character)

    def range_to_module(self, cell: int, where: types.Range) -> types.Range | None:
        """The module lines of the cell's lines ``where`` spans (the part the module kept)."""
        kept = [self.module_line(cell, line)
                for line in range(where.start.line, where.end.line + 1)]
        lines = [line for line in kept if line is not None]
        if not lines:
            return None
        start = where.start.character if kept[0] is not None else 0
        end = where.end.character if kept[-1] is not None else self._line_end(lines[-1])
        return types.Range(start=types.Position(line=lines[0], character=start),
                           end=types.Position(line=lines[-1], character=end))


def module_of(notebook: types.NotebookDocument, path: str,
              cell_documents: dict[str, tuple[int, str]], encoding: str) -> NotebookModule:
    """The module of ``notebook``'s Python code cells, whose versions and texts are
    ``cell_documents`` (by URI); cells of other languages are not read."""
    cells = []
    for cell in notebook.cells:
        version, text = cell_documents.get(cell.document, (0, ""))
        code = cell.kind == types.NotebookCellKind.Code and cell.document in cell_documents
        cells.append(Cell(uri=cell.document, version=version, text=text if code else "",
                          code=code))
    source = NotebookCells(tuple(NotebookCell(cell.text, "code" if cell.code else "markdown")
                                 for cell in cells))
    built = build_notebook_module(source)
    return NotebookModule(uri=notebook.uri, path=path, cells=tuple(cells),
                          json=source.to_json(), text=built.text,
                          places=tuple((cell, line - 1) for cell, line in built.line_map),
                          encoding=encoding)


def same_module(before: NotebookModule, after: NotebookModule) -> bool:
    """The same module from the same cells: what was traced and published still holds."""
    return (before.text, before.places, [c.uri for c in before.cells]) == (
        after.text, after.places, [c.uri for c in after.cells])


# -- what the server publishes and answers, moved into the cells -----------------------------


def _diagnostic_to_cell(module: NotebookModule, diagnostic: types.Diagnostic
                        ) -> tuple[int, types.Diagnostic]:
    """The diagnostic in its cell (one on no cell's line: on the first code cell's first
    line), its related locations in theirs."""
    found = module.range_to_cell(diagnostic.range)
    first = next(index for index, cell in enumerate(module.cells) if cell.code)
    cell, where = found if found is not None else (first, types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)))
    related = None
    if diagnostic.related_information:
        related = []
        for info in diagnostic.related_information:
            uri, place = module.location_to_cell(info.location.uri, info.location.range)
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=place), message=info.message))
    return cell, _replace(diagnostic, range=where, related_information=related)


def _replace(diagnostic: types.Diagnostic, **changes: Any) -> types.Diagnostic:
    fields = {name: getattr(diagnostic, name) for name in (
        "range", "message", "severity", "code", "code_description", "source",
        "related_information", "tags", "data")}
    return types.Diagnostic(**{**fields, **changes})


def cell_diagnostics(module: NotebookModule, shown: Iterable[types.Diagnostic]
                     ) -> dict[str, list[types.Diagnostic]]:
    """The module's diagnostics by cell URI, every code cell included (an empty list clears
    a cell)."""
    by_cell: dict[str, list[types.Diagnostic]] = {
        cell.uri: [] for cell in module.cells if cell.code}
    if not by_cell:
        return by_cell
    for diagnostic in shown:
        cell, moved = _diagnostic_to_cell(module, diagnostic)
        by_cell[module.cells[cell].uri].append(moved)
    return by_cell


def diagnostic_to_module(module: NotebookModule, cell: int, diagnostic: types.Diagnostic
                         ) -> types.Diagnostic | None:
    """A diagnostic the client sent back for a cell (a code action's context), as it is in
    the module."""
    where = module.range_to_module(cell, diagnostic.range)
    return None if where is None else _replace(diagnostic, range=where)


def hover_to_cell(module: NotebookModule, cell: int, hover: types.Hover | None
                  ) -> types.Hover | None:
    if hover is None or hover.range is None:
        return hover
    found = module.range_to_cell(hover.range)
    return types.Hover(contents=hover.contents,
                       range=found[1] if found is not None and found[0] == cell else None)


def code_lenses_to_cell(module: NotebookModule, cell: int, lenses: list[types.CodeLens]
                        ) -> list[types.CodeLens]:
    """The lenses of the classes in the cell, their commands about the cell."""
    shown = []
    for lens in lenses:
        found = module.range_to_cell(lens.range)
        if found is None or found[0] != cell:
            continue
        command = lens.command
        if command is not None and command.arguments:
            command = types.Command(title=command.title, command=command.command,
                                    arguments=[module.cells[cell].uri, *command.arguments[1:]])
        shown.append(types.CodeLens(range=found[1], command=command, data=lens.data))
    return shown


def inlay_hints_to_cell(module: NotebookModule, cell: int, hints: list[types.InlayHint]
                        ) -> list[types.InlayHint]:
    shown = []
    for hint in hints:
        found = module.position_to_cell(hint.position)
        if found is not None and found[0] == cell:
            shown.append(types.InlayHint(position=found[1], label=hint.label, kind=hint.kind,
                                         padding_left=hint.padding_left))
    return shown


def _applied(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """``text`` with ``edits`` (which do not overlap) made."""
    lines = positions.split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)  # split_lines keeps no line break

    def offset(position: types.Position) -> int:
        line, column = positions.from_lsp(lines, position, encoding)
        return min(starts[line - 1] + column - 1, len(text))

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def workspace_edit_to_cells(module: NotebookModule, edit: types.WorkspaceEdit | None
                            ) -> types.WorkspaceEdit | None:
    """A fix's edit with its module edits as edits of the cells at their versions, the lines
    put into the cells as ``fx-lsp check --fix`` puts them (``edit_notebook_json``: inserted
    lines after the line before them, so ``torch.fx.wrap("len")`` after the imports goes in
    the imports cell); None when it does not fit in the cells."""
    if edit is None or edit.document_changes is None:
        return edit
    changes: list[Any] = []
    for change in edit.document_changes:
        if not isinstance(change, types.TextDocumentEdit) \
                or change.text_document.uri != module.file_uri:
            changes.append(change)
            continue
        new_text = _applied(module.text, list(change.edits), module.encoding)  # type: ignore
        try:
            cells = NotebookCells.from_json(edit_notebook_json(module.json, new_text)).cells
        except NotebookEditError:
            return None
        for cell, new in zip(module.cells, cells, strict=True):
            if cell.code and new.source != cell.text:
                changes.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=cell.uri, version=cell.version),
                    edits=[minimal_edit(cell.text, new.source, module.encoding)]))
    return types.WorkspaceEdit(document_changes=changes)


def code_action_to_cell(module: NotebookModule, cell: int, action: types.CodeAction
                        ) -> types.CodeAction | None:
    """A quick fix about the module as one about the cell: its diagnostics and edit in the
    cells, the cell's URI in its data (for ``codeAction/resolve``)."""
    edit = workspace_edit_to_cells(module, action.edit)
    if action.edit is not None and edit is None:
        return None
    diagnostics = [_diagnostic_to_cell(module, d)[1] for d in action.diagnostics or []]
    data = {"uri": module.cells[cell].uri} if action.data is not None else None
    return types.CodeAction(title=action.title, kind=action.kind, diagnostics=diagnostics,
                            is_preferred=action.is_preferred, edit=edit, data=data)


def closed_notebook_diagnostics(path: str, shown: Iterable[types.Diagnostic]
                                ) -> list[types.Diagnostic]:
    """The diagnostics of a notebook the editor does not have open (a workspace trace), for
    its file's URI: a cell has a URI only while the notebook is open, so each is put at the
    file's start with its message led by the cell place, ``cell 3:5:1:`` (the CLI's words);
    opening the notebook replaces them by the cells' own."""
    module = notebook_module(path, {})
    start = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=0, character=0))
    found = []
    for diagnostic in shown:
        place = module.to_cell_position(diagnostic.range.start.line + 1,
                                        diagnostic.range.start.character + 1) \
            if module is not None else None
        words = f"cell {place.cell_number}:{place.line}:{place.column}: " if place else ""
        found.append(types.Diagnostic(
            range=start, message=words + diagnostic.message, severity=diagnostic.severity,
            code=diagnostic.code, code_description=diagnostic.code_description,
            source=diagnostic.source, tags=diagnostic.tags, data=diagnostic.data))
    return found


def cell_label(path: str, cell: int, line: int) -> str:
    """``nb.ipynb:cell 3:4`` for 0-based ``cell`` and ``line``: cells counted from 1, all of
    them (as ruff and ``fx-lsp check`` name them)."""
    return f"{os.path.basename(path)}:cell {cell + 1}:{line + 1}"


def locations_to_cells(module: NotebookModule, value: Any) -> Any:
    """A JSON answer (the graph view's) with each ``{"uri", "range"}`` in the module moved to
    its cell."""
    if isinstance(value, list):
        return [locations_to_cells(module, item) for item in value]
    if not isinstance(value, dict):
        return value
    moved = {key: locations_to_cells(module, item) for key, item in value.items()}
    if moved.get("uri") == module.file_uri and isinstance(moved.get("range"), dict):
        where = types.Range(
            start=types.Position(**moved["range"]["start"]),
            end=types.Position(**moved["range"]["end"]))
        uri, place = module.location_to_cell(moved["uri"], where)
        found = module.cell_index(uri)
        if found is not None:  # a cell's URI names no file: the label names the cell
            moved["label"] = cell_label(module.path, found, place.start.line)
        moved["uri"] = uri
        moved["range"] = {
            "start": {"line": place.start.line, "character": place.start.character},
            "end": {"line": place.end.line, "character": place.end.character}}
    return moved


def line_nodes_to_cell(module: NotebookModule, cell: int, line_nodes: dict[str, Any]
                       ) -> dict[str, Any]:
    """The generated-code answer's ``lineNodes`` (by 1-based module line) of the cell's
    lines, by 1-based cell line."""
    shown = {}
    for line, nodes in line_nodes.items():
        place = module.place_of(int(line) - 1)
        if place is not None and place[0] == cell:
            shown[str(place[1] + 1)] = nodes
    return shown
