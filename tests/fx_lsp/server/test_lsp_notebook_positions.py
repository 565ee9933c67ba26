"""Between a notebook's module and its cells in the editor (``fx_lsp.server.notebooks``): positions
both ways, diagnostics per cell, a fix's edit as edits of the cells, and the graph's
locations."""

from __future__ import annotations

from lsprotocol import types

from fx_lsp.server import notebooks

NOTEBOOK_URI = "file:///ws/nb.ipynb"
IMPORTS = "import torch\nfrom torch import nn"
MODEL = "class Net(nn.Module):\n    def forward(self, x):\n        return x * len(x)"
#: A cell that loads data between two definitions: its middle line is left out.
MIXED = "WIDTH = 4\ndata = open('data.csv').read()\nclass Tail(nn.Module):\n    pass"


def _position(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def _range(line: int, start: int, end_line: int, end: int) -> types.Range:
    return types.Range(start=_position(line, start), end=_position(end_line, end))


def _module() -> notebooks.NotebookModule:
    cells = [("markdown", "# Title"), ("code", IMPORTS), ("code", MODEL), ("code", MIXED)]
    notebook = types.NotebookDocument(
        uri=NOTEBOOK_URI, notebook_type="jupyter-notebook", version=3,
        cells=[types.NotebookCell(
            kind=types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup,
            document=f"cell:{index}") for index, (kind, _) in enumerate(cells)])
    texts = {f"cell:{index}": (index + 10, text) for index, (kind, text) in enumerate(cells)
             if kind == "code"}
    return notebooks.module_of(notebook, "/ws/nb.ipynb", texts, "utf-16")


def test_positions_map_both_ways_and_left_out_lines_have_none() -> None:
    module = _module()
    assert module.text.splitlines() == [*IMPORTS.splitlines(), *MODEL.splitlines(),
                                        "WIDTH = 4", "class Tail(nn.Module):", "    pass"]
    assert module.position_to_cell(_position(4, 19)) == (2, _position(2, 19))
    assert module.position_to_module(2, _position(2, 19)) == _position(4, 19)
    assert module.position_to_module(3, _position(1, 0)) is None  # the data-loading line
    assert module.position_to_cell(_position(6, 0)) == (3, _position(2, 0))
    # A cell range over the left-out line: the module lines around it.
    assert module.range_to_module(3, _range(0, 0, 3, 8)) == _range(5, 0, 7, 8)
    assert module.range_to_module(3, _range(1, 0, 1, 5)) is None


def test_diagnostics_go_to_their_cells_and_every_code_cell_gets_a_publish() -> None:
    module = _module()
    on_len = types.Diagnostic(
        range=_range(4, 19, 4, 25), message="len", code="FX002",
        related_information=[types.DiagnosticRelatedInformation(
            location=types.Location(uri=NOTEBOOK_URI, range=_range(0, 0, 0, 12)),
            message="imported here")])
    published = notebooks.cell_diagnostics(module, [on_len])
    assert set(published) == {"cell:1", "cell:2", "cell:3"}  # not the markdown cell
    (moved,) = published["cell:2"]
    assert moved.range == _range(2, 19, 2, 25) and moved.code == "FX002"
    (related,) = moved.related_information
    assert related.location == types.Location(uri="cell:1", range=_range(0, 0, 0, 12))
    assert published["cell:1"] == published["cell:3"] == []
    # Back, as a code action's context sends it.
    assert notebooks.diagnostic_to_module(module, 2, moved).range == on_len.range


def test_a_fix_inserted_after_the_imports_lands_in_the_imports_cell() -> None:
    module = _module()
    wrap = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=NOTEBOOK_URI,
                                                                    version=3),
        edits=[types.TextEdit(range=_range(2, 0, 2, 0), new_text='torch.fx.wrap("len")\n')])])
    edit = notebooks.workspace_edit_to_cells(module, wrap)
    assert edit is not None
    (change,) = edit.document_changes
    assert change.text_document.uri == "cell:1" and change.text_document.version == 11
    (text_edit,) = change.edits
    end = len("from torch import nn")
    assert text_edit.range == _range(1, end, 1, end)
    assert text_edit.new_text == '\ntorch.fx.wrap("len")'


def test_an_edit_across_a_left_out_line_is_not_offered() -> None:
    module = _module()
    across = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=NOTEBOOK_URI,
                                                                    version=3),
        edits=[types.TextEdit(range=_range(5, 0, 7, 0), new_text="")])])
    assert notebooks.workspace_edit_to_cells(module, across) is None


def test_graph_locations_and_line_nodes_move_into_the_cell() -> None:
    module = _module()
    answer = {"uri": NOTEBOOK_URI, "nodes": [
        {"name": "len_1", "location": {"uri": NOTEBOOK_URI, "range": {
            "start": {"line": 4, "character": 8}, "end": {"line": 4, "character": 25}}}},
        {"name": "x", "location": None}]}
    moved = notebooks.locations_to_cells(module, answer)
    assert moved["nodes"][0]["location"] == {"uri": "cell:2", "range": {
        "start": {"line": 2, "character": 8}, "end": {"line": 2, "character": 25}},
        "label": "nb.ipynb:cell 3:3"}
    assert moved["nodes"][1]["location"] is None
    assert notebooks.line_nodes_to_cell(module, 2, {"5": ["len_1"], "1": ["other"]}) == {
        "3": ["len_1"]}
