"""Document handlers: text documents and LSP 3.17 notebook documents opened, changed, saved
and closed (pygls's workspace keeps their texts and cells), ``pyproject.toml`` edits, and
watched files."""

from __future__ import annotations

import os
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from fx_lsp.features import diagnostics
from fx_lsp.server import notebooks
from fx_lsp.server.documents import Document
from fx_lsp.server.handlers import Handlers
from fx_lsp.server.protocol import (
    guarded,
)
from fx_lsp.server.session import Session

handlers = Handlers()


def _is_pyproject(path: str) -> bool:
    return os.path.basename(path) == "pyproject.toml"


def _config_changed(session: Session, path: str) -> None:
    root = os.path.dirname(path)
    session.settings.forget(root)
    for document in session.documents:
        if session.texts.root_of(document.path) == root:
            session.documents.schedule(document)


@handlers.feature(types.TEXT_DOCUMENT_DID_OPEN)
@guarded()
def did_open(session: Session, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    path = to_fs_path(item.uri)
    if path is not None and (item.language_id == "python" or path.endswith((".py", ".pyi"))):
        session.documents.open(item.uri, path, item.version)


@handlers.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@guarded()
def did_change(session: Session, params: types.DidChangeTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        session.settings.forget(os.path.dirname(path))  # the next trace reads the edited buffer
        return
    document = session.documents.get(path)
    if document is None:
        return
    _edited(session, document, params.text_document.version, path)


def _edited(session: Session, document: Document, version: int, path: str) -> None:
    """A document's text changed: outdate its result, trace it while typing if the settings
    say so, and tell the status."""
    session.documents.changed(document, version)
    options = session.settings.options_for(path)
    if options.run == "onType":
        session.documents.trace_with_dependents(document, options.debounce_ms / 1000)
    session.send_status()


@handlers.feature(types.TEXT_DOCUMENT_DID_SAVE)
@guarded()
def did_save(session: Session, params: types.DidSaveTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        _config_changed(session, path)
        return
    session.files_changed([path])
    document = session.documents.get(path)
    if document is not None:
        session.documents.trace_with_dependents(document)
    else:
        session.documents.file_changed(path)


@handlers.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@guarded()
def did_close(session: Session, params: types.DidCloseTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        session.settings.forget(os.path.dirname(path))  # unsaved edits closed unsaved are gone
    document = session.documents.close(path)
    if document is None:
        return
    session.publisher.clear(document.uri)
    for other in session.documents:
        if any(e.traced_path == path for e in other.entries):
            session.publisher.publish(other)
    session.send_status()


# -- notebooks (LSP 3.17 notebook documents; pygls's workspace keeps their cells) ------------


def _notebook_module(session: Session, uri: str) -> notebooks.NotebookModule | None:
    """The module of the open notebook at ``uri`` from its cells' current texts (None for a
    notebook with no file, such as an untitled one: nothing to trace it as)."""
    notebook = session.server.workspace.get_notebook_document(notebook_uri=uri)
    path = to_fs_path(uri)
    if notebook is None or path is None:
        return None
    cells = {}
    for cell in notebook.cells:
        # pygls keeps documents by their unquoted URIs (VS Code's cell URIs hold %3D).
        document = session.server.workspace.text_documents.get(unquote(cell.document))
        if document is not None and document.language_id in (None, "python"):
            cells[cell.document] = (document.version or 0, document.source)
    return notebooks.module_of(notebook, path, cells, session.server.encoding)


@handlers.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
@guarded()
def did_open_notebook(session: Session, params: types.DidOpenNotebookDocumentParams) -> None:
    module = _notebook_module(session, params.notebook_document.uri)
    if module is None:
        return
    session.notebooks[module.path] = module
    # A workspace trace may have published on the notebook's file: its cells take over.
    session.publisher.send(diagnostics.path_to_uri(module.path), [])
    session.documents.open(module.uri, module.path, 0)


@handlers.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
@guarded()
def did_change_notebook(
    session: Session, params: types.DidChangeNotebookDocumentParams
) -> None:
    module = _notebook_module(session, params.notebook_document.uri)
    document = session.documents.get(module.path) if module is not None else None
    if module is None or document is None:
        return
    before = session.notebooks[module.path]
    session.notebooks[module.path] = module
    for gone in {cell.uri for cell in before.cells} - {cell.uri for cell in module.cells}:
        session.publisher.clear(gone)
    if not notebooks.same_module(before, module):
        # Running a cell changes its outputs and execution summary, not the module: no trace.
        _edited(session, document, document.version + 1, module.path)


@handlers.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
@guarded()
def did_save_notebook(session: Session, params: types.DidSaveNotebookDocumentParams) -> None:
    path = to_fs_path(params.notebook_document.uri) or ""
    # Its cells' constructor calls are call sites (fxcore.workspace.call_sites reads the saved
    # file).
    session.files_changed([path])
    document = session.documents.get(path)
    if document is not None:
        session.documents.trace_with_dependents(document)


@handlers.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
@guarded()
def did_close_notebook(
    session: Session, params: types.DidCloseNotebookDocumentParams
) -> None:
    path = to_fs_path(params.notebook_document.uri) or ""
    if session.documents.close(path) is not None:
        session.publisher.clear(params.notebook_document.uri)  # each of its cells
    session.notebooks.pop(path, None)
    session.send_status()


@handlers.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@guarded()
def did_change_watched_files(
    session: Session, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [to_fs_path(change.uri) or "" for change in params.changes]
    session.files_changed([path for path in paths if path])
    for path in paths:
        if _is_pyproject(path):
            _config_changed(session, path)
        elif path not in session.documents:
            session.documents.file_changed(path)
