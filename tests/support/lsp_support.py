"""A real ``python -m fx_lsp serve`` process over stdio, driven by pytest-lsp's client."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
from editor_edits import apply_edits
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

WORKSPACES = pathlib.Path(__file__).parents[1] / "fx_lsp" / "server" / "workspaces"


@attrs.define
class RawResponse:
    """A response whose result stays plain JSON (pygls turns unknown results into namedtuples,
    which cannot hold keys such as line numbers)."""

    id: Any
    jsonrpc: str
    result: Any = None


class FxClientProtocol(LanguageClientProtocol):
    def get_result_type(self, method: str) -> Any:
        if method.startswith("fxLsp/"):
            return RawResponse
        return super().get_result_type(method)


class FxClient(LanguageClient):
    """Records every publish (with its version) and the server's fxLsp notifications."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter, protocol_cls=FxClientProtocol)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.statuses: list[dict[str, Any]] = []
        self.traced: list[dict[str, Any]] = []
        self.versions: dict[str, int] = {}
        #: ``len(self.published)`` each time the server said it was idle: what had been
        #: published when every trace, all its capture modes' phases included, had ended.
        self.idle_marks: list[int] = []
        #: What the server answered to ``initialize``.
        self.initialize_result: types.InitializeResult | None = None
        #: The open notebooks' cells: notebook URI -> [[cell URI, kind, text], ...].
        self.notebook_cells: dict[str, list[list[Any]]] = {}
        #: How many ``workspace/diagnostic/refresh`` requests the server sent.
        self.diagnostic_refreshes = 0
        #: ``$/progress`` values that are partial results (not work done), by token.
        self.partial_results: dict[types.ProgressToken, list[Any]] = {}

    # -- documents ------------------------------------------------------------------------------

    def open(self, path: pathlib.Path, text: str | None = None) -> str:
        uri = from_fs_path(str(path))
        self.versions[uri] = 1
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri,
                    language_id="python",
                    version=1,
                    text=path.read_text(encoding="utf-8") if text is None else text,
                )
            )
        )
        return uri

    def replace_text(self, uri: str, text: str) -> int:
        """A full-text didChange; returns the new version."""
        self.versions[uri] += 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    async def handled_so_far(self, uri: str) -> None:
        """Return once the server has handled every message sent before this call. It handles
        them in the order they come, so its answer to a hover (cheap, and changing nothing)
        follows theirs. A test that lets a trace finish after an edit waits on this first: a
        busy server may otherwise finish the trace before it reads the edit, and rightly
        publish the trace's result for the version it still knows."""
        await self.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=0)))

    # -- notebooks (LSP 3.17) -------------------------------------------------------------------

    def open_notebook(self, path: pathlib.Path, cells: list[tuple[str, str]]) -> list[str]:
        """Open a Jupyter notebook at ``path`` whose cells are ``(kind, text)``, ``kind``
        ``code`` or ``markdown``, as VS Code sends one; returns the cells' URIs (VS Code's
        scheme: the notebook's path, the cell in the fragment)."""
        uri = from_fs_path(str(path))
        # As VS Code makes them: quoted base64 of the cell's handle in the fragment.
        uris = [f"vscode-notebook-cell:{path}#W{index}sZmlsZQ%3D%3D" for index in range(len(cells))]
        self.versions[uri] = 1
        self.notebook_cells[uri] = [[cell_uri, kind, text]
                                    for cell_uri, (kind, text) in zip(uris, cells, strict=True)]
        for cell_uri in uris:
            self.versions[cell_uri] = 1
        self.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(
                    kind=types.NotebookCellKind.Code if kind == "code"
                    else types.NotebookCellKind.Markup, document=cell_uri)
                    for cell_uri, (kind, _) in zip(uris, cells, strict=True)]),
            cell_text_documents=[types.TextDocumentItem(
                uri=cell_uri, language_id="python" if kind == "code" else "markdown",
                version=1, text=text) for cell_uri, (kind, text) in zip(uris, cells, strict=True)],
        ))
        return uris

    def cell_text(self, notebook_uri: str, cell_uri: str) -> str:
        (text,) = [c[2] for c in self.notebook_cells[notebook_uri] if c[0] == cell_uri]
        return text

    def replace_cell_text(self, notebook_uri: str, cell_uri: str, text: str) -> None:
        """A full-text change of one cell, as a notebookDocument/didChange."""
        self.versions[notebook_uri] += 1
        self.versions[cell_uri] += 1
        for cell in self.notebook_cells[notebook_uri]:
            if cell[0] == cell_uri:
                cell[2] = text
        self.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=notebook_uri, version=self.versions[notebook_uri]),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(text_content=[
                    types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(
                            uri=cell_uri, version=self.versions[cell_uri]),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=text)])])),
        ))

    def save_notebook(self, notebook_uri: str) -> None:
        self.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri)))

    def apply_cell_edits(self, notebook_uri: str, edit: types.WorkspaceEdit) -> None:
        """Apply a workspace edit of the notebook's cells as the notebook editor does."""
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit), change
            uri = change.text_document.uri
            assert change.text_document.version == self.versions[uri], (uri, change)
            self.replace_cell_text(notebook_uri, uri,
                                   apply_edits(self.cell_text(notebook_uri, uri), change.edits))

    def save(self, uri: str) -> None:
        self.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def latest(self, uri: str) -> types.PublishDiagnosticsParams | None:
        for params in reversed(self.published):
            if params.uri == uri:
                return params
        return None

    async def diagnostics_for(
        self, uri: str, version: int | None = None, timeout: float = 30.0, after: int = 0
    ) -> list[types.Diagnostic]:
        """Wait for a publish for ``uri`` (at ``version``) among publishes after index ``after``."""

        def found() -> types.PublishDiagnosticsParams | None:
            for params in reversed(self.published[after:]):
                if params.uri == uri and (version is None or params.version == version):
                    return params
            return None

        params = await wait_for(found, timeout, f"diagnostics for {uri} v{version}")
        return list(params.diagnostics)

    async def settled_diagnostics(
        self, uri: str, version: int | None = None, timeout: float = 60.0, after: int = 0
    ) -> list[types.Diagnostic]:
        """The diagnostics of ``uri`` once every capture mode has reported (fx's are published
        first, the other modes' with them after): its last publish after index ``after``
        before the server next said it was idle."""

        def found() -> types.PublishDiagnosticsParams | None:
            for end in reversed(self.idle_marks):
                if end <= after:
                    return None
                for params in reversed(self.published[after:end]):
                    if params.uri == uri and (version is None or params.version == version):
                        return params
            return None

        params = await wait_for(found, timeout, f"settled diagnostics for {uri} v{version}")
        return list(params.diagnostics)


def make_client() -> FxClient:
    client = FxClient()
    features = dict(DEFAULT_CLIENT_FEATURES)

    def publish(client: FxClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish

    def status(client: FxClient, params: Any) -> None:
        client.statuses.append(params._asdict())
        if params.state == "idle":
            client.idle_marks.append(len(client.published))

    def traced(client: FxClient, params: Any) -> None:
        client.traced.append(params._asdict())

    def refresh(client: FxClient, params: None) -> None:
        client.diagnostic_refreshes += 1

    features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = refresh
    work_done = features[types.PROGRESS]

    def progress(client: FxClient, params: types.ProgressParams) -> None:
        if isinstance(params.value, dict) and "kind" not in params.value:
            client.partial_results.setdefault(params.token, []).append(params.value)
        else:
            work_done(client, params)

    features[types.PROGRESS] = progress
    features["fxLsp/status"] = status
    features["fxLsp/traced"] = traced
    register_lsp_features(client, features)
    return client


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")
        await asyncio.sleep(0.05)


def capabilities(
    encodings: list[str] | None = None, resolve_code_actions: bool = False,
    notebooks: bool = False, pulls: bool = False, refreshes: bool = False,
    annotations: bool = False,
) -> types.ClientCapabilities:
    """``resolve_code_actions``: ask for code actions' edits with codeAction/resolve, as VS
    Code does; ``notebooks``: sync notebook documents (LSP 3.17), as VS Code does; ``pulls``:
    pull diagnostics (LSP 3.17), and ``refreshes``: pull again when asked to;
    ``annotations``: show edits' change annotations (VS Code's refactor preview)."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
            if refreshes else None,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=True,
                change_annotation_support=types.ChangeAnnotationsSupportOptions(
                    groups_on_label=True)) if annotations else None)
        if refreshes or annotations else None,
        notebook_document=types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities())
        if notebooks else None,
        general=types.GeneralClientCapabilities(position_encodings=encodings)
        if encodings
        else None,
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True
            ),
            diagnostic=types.DiagnosticClientCapabilities(related_document_support=True)
            if pulls else None,
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            inlay_hint=types.InlayHintClientCapabilities(),
            code_action=types.CodeActionClientCapabilities(
                data_support=True,
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
            )
            if resolve_code_actions
            else None,
        ),
    )


@contextlib.asynccontextmanager
async def session(
    root: pathlib.Path,
    options: dict[str, Any] | None = None,
    encodings: list[str] | None = None,
    process_id: int | None = None,
    folders: list[pathlib.Path] | None = None,
    resolve_code_actions: bool = False,
    notebooks: bool = False,
    pulls: bool = False,
    refreshes: bool = False,
    annotations: bool = False,
) -> AsyncIterator[FxClient]:
    """Start ``python -m fx_lsp serve --stdio`` rooted at ``root``, initialize, yield, shut down."""
    client = make_client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio", cwd=str(root))
    try:
        client.initialize_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(encodings, resolve_code_actions, notebooks, pulls,
                                          refreshes, annotations),
                process_id=process_id,
                root_uri=from_fs_path(str(root)),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(folder)), name=folder.name)
                    for folder in folders or [root]
                ],
                initialization_options=options or {},
            )
        )
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()


async def warm_up(client: FxClient, folder: pathlib.Path) -> None:
    """Trace one small class in a project of its own and wait for it, however long a cold
    start takes (the zygote imports torch: tens of seconds on a loaded machine with a CUDA
    build), so that the tests sharing the server wait only for their own traces."""
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'warm-up'\n")
    model = folder / "model.py"
    model.write_text("from torch import nn\n\n\nclass Scale(nn.Module):\n"
                     "    def forward(self, x):\n        return x * 2\n")
    await client.diagnostics_for(client.open(model), version=1, timeout=300.0)
    await close_documents(client)
    forget_records(client)


def forget_records(client: FxClient) -> None:
    """Forget what the client recorded (publishes, statuses, traces, messages, open
    versions), so a test that borrows a shared server sees only its own."""
    for records in (client.published, client.statuses, client.traced, client.idle_marks,
                    client.log_messages, client.messages):
        records.clear()
    for table in (client.versions, client.notebook_cells, client.diagnostics,
                  client.progress_reports):
        table.clear()


async def close_documents(client: FxClient, timeout: float = 60.0) -> None:
    """Close every document the test opened and wait until the server has cleared their
    diagnostics and is idle: nothing of this test is left to reach the next one."""
    opened = list(client.versions)
    for uri in opened:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def cleared() -> bool:
        publishes = [client.latest(uri) for uri in opened]
        idle = not client.statuses or (client.statuses[-1]["state"] == "idle"
                                       and client.statuses[-1]["pending"] == 0)
        return idle and all(p is None or not p.diagnostics for p in publishes)

    await wait_for(cleared, timeout, "the closed documents' diagnostics cleared and idle")


def new_project(parent: pathlib.Path) -> pathlib.Path:
    """An empty project folder (``<parent>/ws`` with a pyproject.toml) to open as a workspace."""
    workspace = parent / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    return workspace
