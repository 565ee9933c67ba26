"""Pull diagnostics (LSP 3.17) over the real server: a client that pulls gets, for a document,
a notebook's cells and the workspace's closed files, exactly what the server publishes; "unchanged"
when it holds the current result id; a client that re-pulls when asked is sent refreshes rather
than publishes; a client that cannot pull is not offered it."""

from __future__ import annotations

import json
import pathlib

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_support import FxClient, new_project, session, wait_for

FAILING = """import torch
from torch import nn


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)
"""
CLOSED = """import torch
from torch import nn


class Branches(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""
CELLS = [("code", "import torch\nfrom torch import nn"),
         ("code", "class UsesLen(nn.Module):\n    def forward(self, x):\n"
                  "        return x * len(x)")]


async def _pull(client: FxClient, uri: str, previous: str | None = None
                ) -> types.DocumentDiagnosticReport:
    return await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous))


def _codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


async def test_a_client_that_cannot_pull_is_not_offered_it(shared_client: FxClient) -> None:
    assert shared_client.initialize_result is not None
    assert shared_client.initialize_result.capabilities.diagnostic_provider is None


@pytest.mark.slow  # three traces on a fresh server
async def test_pulled_diagnostics_are_the_published_ones(tmp_path: pathlib.Path) -> None:
    project = new_project(tmp_path)
    (project / "models.py").write_text(FAILING)
    (project / "closed.py").write_text(CLOSED)
    notebook_path = project / "book.ipynb"
    notebook_path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                         "nbformat_minor": 5}))
    # Pulls without refresh support: the server publishes too, so both can be compared.
    async with session(project, pulls=True, notebooks=True) as client:
        assert client.initialize_result is not None
        provider = client.initialize_result.capabilities.diagnostic_provider
        assert isinstance(provider, types.DiagnosticOptions) and provider.workspace_diagnostics

        # A document: the pull waits for its trace.
        uri = client.open(project / "models.py")
        report = await _pull(client, uri)
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        assert _codes(report.items) == ["FX002"], report.items
        published = client.latest(uri)
        assert published is not None and report.items == published.diagnostics
        unchanged = await _pull(client, uri, report.result_id)
        assert isinstance(unchanged, types.RelatedUnchangedDocumentDiagnosticReport)
        assert unchanged.result_id == report.result_id

        # A notebook: each cell pulled gets its own, as published on it.
        cells = client.open_notebook(notebook_path, CELLS)
        in_cell = await _pull(client, cells[1])
        assert isinstance(in_cell, types.RelatedFullDocumentDiagnosticReport)
        assert _codes(in_cell.items) == ["FX002"], in_cell.items
        assert in_cell.items == client.diagnostics[cells[1]]
        first_cell = await _pull(client, cells[0])
        assert isinstance(first_cell, types.RelatedFullDocumentDiagnosticReport)
        assert first_cell.items == client.diagnostics.get(cells[0], [])

        # The workspace: the closed file is traced and reported as it is published, each
        # file's report streamed as a partial result, the progress reported.
        client.progress_reports["work"] = []  # the client's own token: no create request
        whole = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(
            previous_result_ids=[], partial_result_token="partial", work_done_token="work"))
        streamed = [item for value in client.partial_results.get("partial", [])
                    for item in value["items"]]
        assert {"begin", "end"} <= {report.kind for report in client.progress_reports["work"]}
        assert list(whole.items) == [], "what was streamed is not answered again"
        whole = types.WorkspaceDiagnosticReport(items=[
            client.protocol._converter.structure(item, types.WorkspaceFullDocumentDiagnosticReport)
            for item in streamed])
        by_uri = {item.uri: item for item in whole.items}
        closed_uri = from_fs_path(str(project / "closed.py"))
        assert closed_uri is not None
        closed = by_uri[closed_uri]
        assert isinstance(closed, types.WorkspaceFullDocumentDiagnosticReport)
        assert _codes(closed.items) == ["FX001"], closed.items
        assert closed.items == client.diagnostics[closed_uri]
        assert {uri, cells[1]} <= set(by_uri)
        # Asked again with the ids it holds: nothing changed, so all "unchanged".
        again = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(
            previous_result_ids=[types.PreviousResultId(uri=item.uri, value=item.result_id)
                                 for item in whole.items if item.result_id is not None]))
        assert again.items and all(
            isinstance(item, types.WorkspaceUnchangedDocumentDiagnosticReport)
            for item in again.items), again.items


@pytest.mark.slow  # a trace on a fresh server
async def test_a_client_that_refreshes_is_asked_to_pull_not_published_to(
    tmp_path: pathlib.Path,
) -> None:
    project = new_project(tmp_path)
    (project / "models.py").write_text(FAILING)
    async with session(project, pulls=True, refreshes=True) as client:
        uri = client.open(project / "models.py")
        await wait_for(lambda: client.diagnostic_refreshes, 60, "a diagnostic refresh")
        report = await _pull(client, uri)
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        assert _codes(report.items) == ["FX002"], report.items
        assert client.published == []


@pytest.mark.slow  # a server of its own
async def test_a_client_can_decline_pulls(tmp_path: pathlib.Path) -> None:
    """``pullDiagnostics: false`` (the VS Code extension's): pushed to only."""
    project = new_project(tmp_path)
    async with session(project, {"pullDiagnostics": False, "trusted": False},
                       pulls=True) as client:
        assert client.initialize_result is not None
        assert client.initialize_result.capabilities.diagnostic_provider is None
