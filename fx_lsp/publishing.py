"""What the server sends on its own: the status item's state, each document's diagnostics
(a notebook's into its cells, a closed file's from a workspace trace), and the client's
refreshes of code lenses and inlay hints."""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from fx_lsp import diagnostics, notebooks
from fx_lsp.baseline_hints import BaselineFiles
from fx_lsp.documents import Document
from fx_lsp.protocol import STATUS, FxProtocol
from fx_lsp.workspace_texts import WorkspaceTexts
from fxcore.checking.pipeline import CheckHandle
from fxcore.host.torch_versions import TorchSupport
from fxcore.model.results import FileResult
from fxcore.reporting.report import collect
from fxcore.workspace.notebook.cells import is_notebook


class Publishing(WorkspaceTexts):
    """The server's notifications; ``FxLanguageServer`` holds the state they report."""

    protocol: FxProtocol
    torch: TorchSupport
    workspace_handles: set[CheckHandle]
    _status: tuple[str, int, str] | None
    baselines: BaselineFiles

    def send_status(self, message: str = "") -> None:
        pending = self.documents.pending + len(self.workspace_handles)
        if not self.settings.options.trusted:
            state = "disabled"
        elif self.torch.refusal is not None:
            state, message = "error", self.torch.refusal
        elif message:
            state = "error"
        else:
            state = "tracing" if pending else "idle"
        if (state, pending, message) == self._status:
            return
        self._status = (state, pending, message)
        params: dict[str, Any] = {"state": state, "pending": pending}
        if message:
            params["message"] = message
        self.protocol.notify(STATUS, params)

    def publish(self, document: Document) -> None:
        if not self.documents.is_current(document):
            # The result is of an older text: the client has moved the diagnostics it shows
            # with the edits, and a trace of this text publishes anew.
            return
        others = self.documents.results_traced_with(document)
        report = self.baselines.as_hints(collect(
            [r for r in (document.result, *others) if r is not None],
            self.text_of,
            self.settings.selection,
            checked=[document.path] if document.result is not None else [],
        ), self.root_of(document.path), self.text_of)
        document.entries = diagnostics.build(
            document.path, report, self.lines_of, self.options_for(document.path), self.encoding,
            self.cell_words,
        )
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            # A notebook's diagnostics, in the module, go to the cells they are in.
            for uri, shown in notebooks.cell_diagnostics(
                    notebook, [entry.diagnostic for entry in document.entries]).items():
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=shown))
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri,
                diagnostics=[entry.diagnostic for entry in document.entries],
                version=document.version,
            )
        )

    def cell_words(self, path: str, line: int) -> str | None:
        """``cell 3:5`` for line ``line`` of an open notebook's module, as ``fx-lsp check``
        counts cells and lines (from 1)."""
        notebook = self.notebooks.get(path)
        place = notebook.place_of(line - 1) if notebook is not None else None
        return None if place is None else f"cell {place[0] + 1}:{place[1] + 1}"

    def client_has_notebooks(self) -> bool:
        """The client syncs notebooks (LSP 3.17): a workspace trace includes them."""
        return self.client_capabilities.notebook_document is not None

    def publish_closed(self, path: str, result: FileResult) -> None:
        """The diagnostics of a file that is not open (from a workspace trace); a notebook's
        on its file, each naming its cell (``notebooks.closed_notebook_diagnostics``)."""
        report = self.baselines.as_hints(collect([result], self.text_of, self.settings.selection),
                                         self.root_of(path), self.text_of)
        entries = diagnostics.build(
            path, report, self.lines_of, self.options_for(path), self.encoding
        )
        shown = [e.diagnostic for e in entries]
        if is_notebook(path):
            shown = notebooks.closed_notebook_diagnostics(path, shown)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=diagnostics.path_to_uri(path), diagnostics=shown)
        )

    def clear(self, uri: str) -> None:
        notebook = self.notebooks.get(to_fs_path(uri) or "")
        if notebook is not None and notebook.uri == uri:
            for cell in notebook.cells:
                self.clear(cell.uri)
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def refresh_inlay_hints(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    def refresh_code_lenses(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
