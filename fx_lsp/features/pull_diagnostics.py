"""Pull diagnostics (LSP 3.17 ``textDocument/diagnostic`` and ``workspace/diagnostic``): the
reports a pulling client gets, made from the very diagnostics the server publishes.

``Published`` records, per URI, what the server last published (or would have, for a client
that pulls instead): a pull answers from it, so that a pulling client sees exactly what a
pushing one does, notebook cells and closed files of a workspace trace included. Each URI's
diagnostics carry a ``resultId`` that changes only when they do: a client that sends the id it
holds is told "unchanged".

A document's full report also says which capture modes' results its trace has yet to publish
(``pending``, an fx-lsp field beside LSP's: ``compile-loop`` for compile's loop of calls,
``fx_lsp.server.documents.Document.pending_stages``); a client that re-pulls when asked is asked
again as each arrives.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from lsprotocol import types

#: ``initializationOptions.pullDiagnostics = false``: a client that could pull asks to be
#: pushed to only (the VS Code extension: its client would otherwise show both).
OPTION = "pullDiagnostics"

#: What the server declares when the client can pull (``fx_lsp.server.protocol``): a trace of
#: one file can locate failures in another (``interFileDependencies``), and
#: ``workspace/diagnostic`` traces every file of the workspace folders.
OPTIONS = types.DiagnosticOptions(
    identifier="fx-lsp", inter_file_dependencies=True, workspace_diagnostics=True
)


def client_pulls(params: types.InitializeParams, options: Mapping[str, Any]) -> bool:
    """The client can pull (its ``textDocument.diagnostic`` capability) and has not said it
    does not want to (``OPTION`` in its fx-lsp initialization options)."""
    document = params.capabilities.text_document
    return (document is not None and document.diagnostic is not None
            and options.get(OPTION, True) is not False)


def client_refreshes(capabilities: types.ClientCapabilities) -> bool:
    """The client re-pulls when asked (``workspace/diagnostic/refresh``): it needs no push."""
    workspace = capabilities.workspace
    return bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support)


class Published:
    """The diagnostics last published on each URI, each with its result id and the modes
    still to come."""

    def __init__(self) -> None:
        self._by_uri: dict[str, tuple[str, list[types.Diagnostic], list[str]]] = {}
        self._ids = itertools.count(1)

    def record(self, uri: str, diagnostics: list[types.Diagnostic],
               pending: list[str] | None = None) -> bool:
        """``diagnostics`` are now those of ``uri``, ``pending`` the modes whose results are
        still to come; whether either changed."""
        held = self._by_uri.get(uri)
        if held is not None and held[1:] == (diagnostics, pending or []):
            return False
        self._by_uri[uri] = (str(next(self._ids)), list(diagnostics), list(pending or []))
        return True

    def pending(self, uri: str) -> list[str]:
        """The modes whose results the trace published on ``uri`` has yet to publish."""
        held = self._by_uri.get(uri)
        return list(held[2]) if held is not None else []

    def report(self, uri: str, previous_result_id: str | None
               ) -> types.DocumentDiagnosticReport:
        """``textDocument/diagnostic``'s answer for ``uri``: "unchanged" when the client holds
        the current result id. A URI never published on has no diagnostics (and no id, so the
        next pull sends them in full)."""
        held = self._by_uri.get(uri)
        if held is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        result_id, diagnostics, _ = held
        if previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=diagnostics, result_id=result_id)

    def workspace_items(
        self, uris: Iterable[str], previous: Mapping[str, str], versions: Mapping[str, int]
    ) -> list[types.WorkspaceDocumentDiagnosticReport]:
        """``workspace/diagnostic``'s reports of ``uris`` (those published on), each
        "unchanged" where ``previous`` holds its current result id; ``versions``: the open
        documents' versions, by URI (null for a closed file)."""
        items: list[types.WorkspaceDocumentDiagnosticReport] = []
        for uri in dict.fromkeys(uris):
            held = self._by_uri.get(uri)
            if held is None:
                continue
            result_id, diagnostics, _ = held
            version = versions.get(uri)
            if previous.get(uri) == result_id:
                items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, version=version, result_id=result_id))
            else:
                items.append(types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, version=version, items=diagnostics, result_id=result_id))
        return items
