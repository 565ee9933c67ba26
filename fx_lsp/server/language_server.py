"""pygls's seam: the language server that owns the connection, the protocol and pygls's
workspace (the open buffers and notebooks), and what the client said it supports.

It holds no fx-lsp state and implements no feature: the session's state is
``fx_lsp.server.session.Session``, which holds this server as its connection, and the handlers in
``fx_lsp/server/handlers/`` are given the session (``fx_lsp.server.serving`` puts them on a server).
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fx_lsp.features import pull_diagnostics
from fx_lsp.server import notebooks
from fx_lsp.server.protocol import FxProtocol
from fxcore.model.version import VERSION


class FxLanguageServer(LanguageServer):
    protocol: FxProtocol

    def __init__(self) -> None:
        super().__init__(
            "fx-lsp",
            VERSION,
            protocol_cls=FxProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            # Declared to clients that support notebooks only (pygls checks their capabilities).
            notebook_document_sync=notebooks.SYNC_OPTIONS,
        )
        #: The client pulls diagnostics (decided at ``initialize``: ``FxProtocol``).
        self.pulls_diagnostics = False

    @property
    def encoding(self) -> str:
        """The position encoding agreed with the client."""
        return str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)

    @property
    def resolves_code_actions(self) -> bool:
        """The client asks for a code action's edit with ``codeAction/resolve``."""
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        support = code_action.resolve_support if code_action else None
        return support is not None and "edit" in support.properties

    @property
    def shows_disabled_code_actions(self) -> bool:
        """The client shows a code action marked disabled, with why (``disabledSupport``)."""
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        return bool(code_action and code_action.disabled_support)

    @property
    def annotates_edits(self) -> bool:
        """The client shows change annotations (a preview of edits that need confirmation)."""
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(edit and edit.change_annotation_support is not None)

    def client_has_notebooks(self) -> bool:
        """The client syncs notebooks (LSP 3.17): a workspace trace includes them."""
        return self.client_capabilities.notebook_document is not None

    def refresh_inlay_hints(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    def refresh_code_lenses(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    @property
    def pushes_diagnostics(self) -> bool:
        """Diagnostics are published to the client: unless it pulls and re-pulls when asked
        to (``refresh_diagnostics``), which would show them twice."""
        return not (self.pulls_diagnostics
                    and pull_diagnostics.client_refreshes(self.client_capabilities))

    def refresh_diagnostics(self) -> None:
        """Ask a pulling client to pull again (new diagnostics it has not seen)."""
        if not self.pushes_diagnostics:
            self.workspace_diagnostic_refresh(None)
