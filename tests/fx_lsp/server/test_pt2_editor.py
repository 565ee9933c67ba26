"""The editor's graph view per capture mode: ``fxLsp/graph`` with a ``mode`` param draws that
mode's graph of the class (its own failures), without one the first verdict's, through a real
server with a toy mode registered (``FX_LSP_EXTRA_CAPTURES``, see
``tests/support/plain_capture.py``)."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from lsp_support import new_project, session

MODELS = """\
from torch import nn


class Lengthy(nn.Module):
    def forward(self, x):
        return x * len(x)
"""


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
@pytest.mark.matrix
@pytest.mark.slow
async def test_graph_request_draws_the_chosen_modes_graph(
    tmp_path: pathlib.Path, toy_mode: None
) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx", "plain"]}) as client:
        uri = client.open(models)
        await client.settled_diagnostics(uri, version=1)

        async def graph(**params: object) -> dict:
            return await client.protocol.send_request_async(
                "fxLsp/graph", {"uri": uri, "className": "Lengthy", **params})

        first, plain, fx, unknown = (await graph(), await graph(mode="plain"),
                                     await graph(mode="fx"), await graph(mode="nope"))
    codes = {answer["mode"]: [f["code"] for f in answer["failures"]]
             for answer in (first, plain)}
    assert codes == {"fx": ["FX002"], "plain": ["FX199"]}
    assert fx["mode"] == unknown["mode"] == "fx"
    assert first["modes"] == plain["modes"] == ["fx", "plain"]  # the view's mode switch
    assert fx["failures"] == first["failures"]


NET = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).relu()
"""


@pytest.mark.slow
async def test_hover_shows_the_exported_programs_graph_code(tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(NET)
    async with session(workspace, options={"modes": ["fx", "export"]}) as client:
        uri = client.open(models)
        await client.settled_diagnostics(uri, version=1)
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=NET.splitlines().index("class Net(nn.Module):"),
                                    character=7)))
    assert hover is not None
    text = hover.contents.value
    assert text.startswith("fx: traceable · export: traceable\n\n"), text
    fx_code, export_code = text.split("export graph:")
    assert "relu = proj.relu()" in fx_code and "aten" not in fx_code
    assert "torch.ops.aten.relu.default" in export_code, export_code


@pytest.mark.slow
async def test_changed_modes_setting_rechecks_open_documents(
    tmp_path: pathlib.Path, toy_mode: None
) -> None:
    """What the status item's mode pick does: a didChangeConfiguration of ``fxLsp.modes``
    re-checks the open document with the new modes (their diagnostics and verdicts)."""
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx"]}) as client:
        uri = client.open(models)
        before = await client.settled_diagnostics(uri, version=1)
        after_index = len(client.published)
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"fxLsp": {"trusted": True, "modes": ["fx", "plain"]}}))
        after = await client.settled_diagnostics(uri, after=after_index)
    assert {d.source for d in before} == {"fx-lsp"}
    assert "fx-lsp (plain)" in {d.source for d in after}


#: Real torch exports and compiles it on the CPU; on meta the listed tensor stays meta and
#: `torch.geqrf` has no meta kernel (FX404 under export, FX503 under compile).
HELD_QR = """\
import torch
from torch import nn


class HeldQr(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.tables = [torch.eye(4)]

    def forward(self, x):
        y = self.proj(x)
        return y + torch.geqrf(self.tables[0])[0].sum()
"""


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_an_operator_meta_cannot_run_shows_where_and_that_the_class_is_not_checked(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    (workspace / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."models:HeldQr"]\ninputs = {x = "float32[2, 8]"}\n')
    models = workspace / "models.py"
    models.write_text(HELD_QR)
    lines = HELD_QR.splitlines()
    line = lines.index("        return y + torch.geqrf(self.tables[0])[0].sum()")
    name = lines.index("class HeldQr(nn.Module):")
    async with session(workspace, options={"modes": ["export", "compile"]}) as client:
        uri = client.open(models)
        published = await client.settled_diagnostics(uri, version=1)
        on_class = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=name, character=7)))
        on_line = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=lines[line].index("geqrf"))))
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    found = {(str(d.code), d.source, d.range.start.line, d.severity) for d in published}
    information = types.DiagnosticSeverity.Information
    assert found == {("FX404", "fx-lsp (export)", line, information),
                     ("FX503", "fx-lsp (compile)", line, information)}
    assert on_class is not None and on_line is not None
    text = on_class.contents.value
    assert text.startswith("export: not traced · compile: not traced\n\n"), text
    assert f"not checkable under torch.export on meta: line {line + 1} runs" in text
    assert f"compile: **HeldQr** was not traced: not checkable under torch.compile on meta: " \
           f"line {line + 1} runs" in text
    assert on_line.contents.value.split("**")[1] in {"FX404", "FX503"}, on_line.contents.value
    assert "Not checkable under torch." in on_line.contents.value
    titles = [lens.command.title for lens in lenses
              if lens.command.command == "fxLsp.showGeneratedCode"]
    assert titles == ["export: not traced · compile: not traced"]
