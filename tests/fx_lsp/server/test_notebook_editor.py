"""Notebooks in the editor, over the real server: a Jupyter notebook opened as an LSP 3.17
notebook document gets its diagnostics in its cells, at the places plain ``torch.fx`` fails on
the same classes in a ``.py`` file; edits of a cell move and clear them; the FX002 quick fix
lands in the imports cell; hovers, code lenses and the graph answer about cells. The cell
that trains is never run."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
import traceback

import pytest
import torch
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_support import FxClient, new_project, session, wait_for

IMPORTS = "import torch\nfrom torch import nn"
USES_LEN = """class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)"""
BRANCHES = """class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            return y
        return -y"""
FINE = """class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))"""
#: The cell a notebook trains in: it would write the marker, then fail on the missing data.
TRAINING = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
data = open("missing.csv").read()
model = Fine()
for epoch in range(3):
    model(torch.randn(2, 4))"""
#: A helper in one cell that a class in another calls.
HELPER = """def positive(x):
    if x.sum() > 0:
        return x
    return -x"""
USES_HELPER = """class UsesHelper(nn.Module):
    def forward(self, x):
        return positive(x) + 1"""
CLASSES = {"UsesLen": 2, "Branches": 3, "Fine": 4, "UsesHelper": 7}  # class -> its cell
DEFINITIONS = [1, 2, 3, 4, 6, 7]  # the cells copied into the .py file


def _cells(marker: pathlib.Path) -> list[tuple[str, str]]:
    return [("markdown", "# Models written in a notebook"), ("code", IMPORTS),
            ("code", USES_LEN), ("code", BRANCHES), ("code", FINE),
            ("code", TRAINING.format(marker=str(marker))), ("code", HELPER),
            ("code", USES_HELPER)]


def _plain_fx_failures(cells: list[tuple[str, str]], folder: pathlib.Path) -> dict[str, str]:
    """Ground truth: the classes' cells copied into a ``.py`` file, each class traced with
    plain ``torch.fx.symbolic_trace`` here; class -> the text of the line it fails on (the
    innermost frame in that file), for those that fail."""
    source = folder / "same_classes.py"
    source.write_text("\n\n\n".join(cells[index][1] for index in DEFINITIONS) + "\n")
    spec = importlib.util.spec_from_file_location("same_classes", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = source.read_text().splitlines()
    failures = {}
    for name in CLASSES:
        try:
            torch.fx.symbolic_trace(getattr(module, name)())
        except Exception as error:  # whatever plain tracing raises
            frames = [f for f in traceback.extract_tb(error.__traceback__)
                      if f.filename == str(source)]
            failures[name] = lines[frames[-1].lineno - 1]
    sys.modules.pop("same_classes", None)
    return failures


async def _notebook_diagnostics(client: FxClient, uris: list[str], after: int,
                                what: str) -> dict[str, list[types.Diagnostic]]:
    """Each code cell's diagnostics from the first publish of the notebook after ``after``
    (the server publishes every code cell at once), when ``what`` holds of them."""

    def found() -> dict[str, list[types.Diagnostic]] | None:
        published = client.published[after:]
        latest = {}
        for uri in uris[1:]:
            params = [p for p in published if p.uri == uri]
            if not params:
                return None
            latest[uri] = list(params[-1].diagnostics)
        return latest

    await wait_for(found, 60, f"the notebook's diagnostics ({what})")
    return found()  # type: ignore[return-value]


def _errors(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]


@pytest.fixture
def notebook_project(tmp_path: pathlib.Path) -> pathlib.Path:
    return new_project(tmp_path)


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_notebook_cells_get_plain_fx_failures_and_the_fix_lands_in_the_imports_cell(
    notebook_project: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    marker = tmp_path / "training-ran"
    cells = _cells(marker)
    path = notebook_project / "models.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    truth = _plain_fx_failures(cells, tmp_path)
    assert set(truth) == {"UsesLen", "Branches", "UsesHelper"}, truth

    async with session(notebook_project, notebooks=True) as client:
        assert client.initialize_result is not None
        sync = client.initialize_result.capabilities.notebook_document_sync
        assert isinstance(sync, types.NotebookDocumentSyncOptions)
        notebook = from_fs_path(str(path))
        uris = client.open_notebook(path, cells)
        shown = await _notebook_diagnostics(client, uris, 0, "first trace")

        # Each failure on the line plain torch.fx fails on, in that line's cell.
        failing_lines = {
            (uri, cells[index][1].splitlines()[d.range.start.line])
            for index, uri in enumerate(uris) if index in DEFINITIONS
            for d in _errors(shown[uri]) if not d.message.startswith("UsesHelper is not")}
        assert failing_lines == {
            (uris[next(i for i in DEFINITIONS if line in cells[i][1].splitlines())], line)
            for line in truth.values()}, failing_lines
        assert _errors(shown[uris[4]]) == []
        (len_error,) = _errors(shown[uris[2]])
        assert len_error.code == "FX002"
        assert cells[2][1].splitlines()[len_error.range.start.line][
            len_error.range.start.character:].startswith("len(x)")
        (branch_error,) = _errors(shown[uris[3]])
        assert branch_error.code == "FX001"
        assert shown[uris[1]] == [] and shown[uris[5]] == []
        # The class whose failure is in another cell: a summary on its name naming that cell
        # as `fx-lsp check` does, and the failure as related information there.
        (summary,) = _errors(shown[uris[7]])
        assert summary.range.start.line == 0
        assert summary.message.endswith("(first: control flow at models.ipynb:cell 7:2)")
        (related,) = summary.related_information
        assert related.location.uri == uris[6] and related.location.range.start.line == 1
        on_class = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris[7]),
            position=summary.range.start))
        assert on_class is not None and "models.ipynb:cell 7:2:" in on_class.contents.value
        assert not marker.exists()  # the training cell was left out, never run

        # A hover on the failure, a code lens on each class, about the cell.
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]),
            position=len_error.range.start))
        assert hover is not None and "FX002" in hover.contents.value
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uris[4])))
        titles = [lens.command.title for lens in lenses if lens.command]
        assert any(title.startswith("FX: traceable") for title in titles), titles
        assert {lens.range.start.line for lens in lenses} == {0}
        assert {lens.command.arguments[0] for lens in lenses if lens.command} == {uris[4]}
        graph = await client.protocol.send_request_async(
            "fxLsp/graph", {"uri": uris[4], "className": "Fine"})
        assert graph["uri"] == uris[4]
        located = {node["location"]["uri"] for node in graph["nodes"]
                   if node.get("location")}
        assert located == {uris[4]}, located
        # A cell's URI names no file: each place is labelled with the cell (5th, 1-based)
        # and its line there, which the graph view shows.
        forward_line = FINE.splitlines().index("        return torch.relu(self.lin(x))")
        assert {node["location"]["label"] for node in graph["nodes"]
                if node["op"] != "placeholder" and node.get("location")} \
            == {f"{path.name}:cell 5:{forward_line + 1}"}, graph["nodes"]

        generated = await client.protocol.send_request_async(
            "fxLsp/generatedCode", {"uri": uris[4], "className": "Fine"})
        assert generated["uri"] == uris[4] and "relu" in generated["code"]
        forward_line = FINE.splitlines().index("        return torch.relu(self.lin(x))")
        assert str(forward_line + 1) in generated["lineNodes"], generated["lineNodes"]
        hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uris[4]),
            range=types.Range(start=types.Position(line=0, character=0),
                              end=types.Position(line=len(FINE.splitlines()), character=0))))
        assert [hint.position.line for hint in hints] == [forward_line], hints

        # An edit of one cell moves its diagnostic; the other cells' stay.
        mark = len(client.published)
        client.replace_cell_text(notebook, uris[3], "\n\n" + BRANCHES)
        client.save_notebook(notebook)
        moved = await _notebook_diagnostics(client, uris, mark, "after the edit")
        (again,) = _errors(moved[uris[3]])
        assert again.range.start.line == branch_error.range.start.line + 2
        assert [d.code for d in _errors(moved[uris[2]])] == ["FX002"]

        # Fixed in its cell: gone.
        mark = len(client.published)
        client.replace_cell_text(notebook, uris[3], BRANCHES.replace(
            "        if y.sum() > 0:\n            return y\n        return -y",
            "        return torch.where(y.sum() > 0, y, -y)"))
        client.save_notebook(notebook)
        cleared = await _notebook_diagnostics(client, uris, mark, "after the fix")
        assert _errors(cleared[uris[3]]) == []

        # The FX002 quick fix: torch.fx.wrap("len") in the imports cell, then no FX002.
        (len_error,) = _errors(cleared[uris[2]])
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]), range=len_error.range,
            context=types.CodeActionContext(diagnostics=[len_error])))
        (wrap,) = [a for a in actions if a.title.startswith('Wrap len for tracing')]
        assert list(wrap.diagnostics) == [len_error]
        (change,) = wrap.edit.document_changes
        assert change.text_document.uri == uris[1]
        mark = len(client.published)
        client.apply_cell_edits(notebook, wrap.edit)
        # Until the new text is traced, the lenses of the old result would land in the wrong
        # cell (the imports cell grew): none are given.
        for uri in uris[1:3]:
            assert not await client.text_document_code_lens_async(types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
        client.save_notebook(notebook)
        imports = client.cell_text(notebook, uris[1]).splitlines()
        assert imports[:2] == IMPORTS.splitlines() and 'torch.fx.wrap("len")' in imports
        assert client.cell_text(notebook, uris[2]) == USES_LEN
        fixed = await _notebook_diagnostics(client, uris, mark, "after the quick fix")
        assert _errors(fixed[uris[2]]) == []
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2])))
        assert any(lens.command.title.startswith("FX: traceable") for lens in lenses), lenses
        assert not marker.exists()


# The width is checked against a function's answer: fx-lsp's argument search solves only
# checks it can evaluate without running the workspace's code, so no guess builds the class.
NEEDS_WIDTH = """from torch import nn


def notebook_width():
    return 12


class NeedsWidth(nn.Module):
    def __init__(self, width):
        super().__init__()
        assert width == notebook_width(), "only the notebook's width builds this class"
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x) * len(x)
"""


def _notebook_json(cells: list[tuple[str, str]]) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "source": text, "metadata": {},
                                  **({"outputs": [], "execution_count": None}
                                     if kind == "code" else {})} for kind, text in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.slow
async def test_a_saved_notebook_cell_that_builds_a_class_retraces_its_open_file(
    notebook_project: pathlib.Path,
) -> None:
    """The constructor calls in a notebook's cells (a training cell's too: read, never run)
    are call sites: saving a cell that changes one retraces the open file of its class."""
    model = notebook_project / "model.py"
    model.write_text(NEEDS_WIDTH)
    path = notebook_project / "train.ipynb"
    cells = [("code", "from model import NeedsWidth"), ("code", "net = NeedsWidth(width=11)")]
    path.write_text(_notebook_json(cells))
    async with session(notebook_project, notebooks=True) as client:
        uri = client.open(model)
        before = await client.diagnostics_for(uri, version=1, timeout=120)
        assert not any(d.code == "FX002" for d in before)  # the notebook's width does not fit
        notebook = from_fs_path(str(path))
        uris = client.open_notebook(path, cells)

        cells[1] = ("code", "net = NeedsWidth(width=12)")
        client.replace_cell_text(notebook, uris[1], cells[1][1])
        path.write_text(_notebook_json(cells))
        published = len(client.published)
        client.save_notebook(notebook)
        after = await client.diagnostics_for(uri, version=1, after=published, timeout=60)
        assert any(d.code == "FX002" for d in after)


CLOSED_CELLS = [("markdown", "# Rows"), ("code", IMPORTS),
                ("code", "class CountsRows(nn.Module):\n    def forward(self, x):\n"
                         "        return x * len(x)")]


def _write_notebook(path: pathlib.Path, cells: list[tuple[str, str]]) -> None:
    path.write_text(json.dumps({
        "cells": [{"cell_type": kind, "id": f"c{index}", "metadata": {},
                   "source": text.splitlines(keepends=True),
                   **({"execution_count": None, "outputs": []} if kind == "code" else {})}
                  for index, (kind, text) in enumerate(cells)],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_trace_workspace_includes_closed_notebooks(tmp_path: pathlib.Path) -> None:
    """A closed notebook gets its diagnostics on its file, each naming its cell (a cell has a
    URI only while the notebook is open); opening it moves them into the cells. A client
    without notebook sync (Neovim) gets no notebook traced."""
    project = new_project(tmp_path)
    path = project / "closed.ipynb"
    _write_notebook(path, CLOSED_CELLS)
    file_uri = from_fs_path(str(path))
    async with session(project, notebooks=True) as client:
        result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fxLsp.server.traceWorkspace", arguments=[]))
        assert result["files"] == 1
        (shown,) = await client.diagnostics_for(file_uri)
        assert shown.code == "FX002" and shown.message.startswith("cell 3:3:20: len() "), shown
        assert (shown.range.start.line, shown.range.start.character) == (0, 0)
        published = len(client.published)
        uris = client.open_notebook(path, CLOSED_CELLS)
        await wait_for(lambda: any(p.uri == file_uri and not p.diagnostics
                                   for p in client.published[published:]), 10,
                       "the file's diagnostics cleared")
        (in_cell,) = await client.diagnostics_for(uris[2], after=published, timeout=60)
        assert in_cell.code == "FX002" and in_cell.range.start.line == 2
    async with session(project) as client:
        result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fxLsp.server.traceWorkspace", arguments=[]))
        assert result["files"] == 0
