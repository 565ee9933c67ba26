"""The texts a language server request or job sees: the workspace's folders and roots, open
buffers (a notebook's module in place of its JSON), files on disk, and the snapshot of a
document a request is about (``fx_lsp.snapshot.DocumentSnapshot``)."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fx_lsp import notebooks, positions
from fx_lsp.documents import Document, Documents
from fx_lsp.initialization_options import Options
from fx_lsp.settings import Settings
from fx_lsp.snapshot import DocumentSnapshot, Files
from fxcore.workspace.paths import find_workspace_root, source_text


class WorkspaceTexts(LanguageServer):
    """The server's reading of texts; ``FxLanguageServer`` holds the state it reads."""

    notebooks: dict[str, notebooks.NotebookModule]
    documents: Documents
    settings: Settings
    files: Files
    _disk_lines: dict[str, tuple[float, list[str]]]

    def workspace_folders(self) -> list[str] | None:
        """The folders the client opened (``workspaceFolders``, else ``rootUri``), or None
        when it opened none (a single file)."""
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        found = [f for f in folders if f] or [self.workspace.root_path]
        return [f for f in found if f] or None

    def root_of(self, path: str) -> str:
        """The workspace root of ``path``, never above the folder the client opened: quick fixes
        edit its ``pyproject.toml`` and the cache lives there."""
        return find_workspace_root(path, self.workspace_folders())

    def options_for(self, path: str) -> Options:
        return self.settings.options_for(path)

    def buffer_text(self, document: Document) -> str:
        """An open document's text: its buffer's, a notebook's module's (what its results'
        lines are lines of)."""
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            return notebook.text
        return self.workspace.get_text_document(document.uri).source

    def overlay_text(self, document: Document) -> str:
        """What a job gets for an open document: its buffer, a notebook's JSON (the worker
        builds its module from it as from the file: ``fxcore.workspace.paths.source_text``)."""
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            return notebook.json
        return self.workspace.get_text_document(document.uri).source

    def _open_text(self, path: str) -> str | None:
        """The text of an open buffer for ``path`` (any language), else None."""
        notebook = self.notebooks.get(path)
        if notebook is not None:
            return notebook.text
        for document in self.workspace.text_documents.values():
            # A notebook cell's document has the notebook's path: it is not the file's text.
            if document.path == path and self.workspace.get_notebook_document(
                    cell_uri=document.uri) is None:
                return document.source
        return None

    def text_of(self, path: str) -> str | None:
        """The buffer if open, else the file on disk (None unless UTF-8: fixes write it back)."""
        text = self._open_text(path)
        return text if text is not None else source_text(path, {}, strict=True)

    def lines_of(self, path: str) -> list[str]:
        notebook = self.notebooks.get(path)
        if notebook is not None:
            return notebook.lines
        document = self.documents.get(path)
        if document is not None:
            return positions.split_lines(self.buffer_text(document))
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            return [""]
        cached = self._disk_lines.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, positions.split_lines(self.text_of(path) or ""))
            self._disk_lines[path] = cached
        return cached[1]

    def cell_of(self, uri: str) -> tuple[notebooks.NotebookModule, int] | None:
        """The open notebook whose code cell ``uri`` is, and the cell's index, if it is one."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        module = self.notebooks.get(to_fs_path(notebook.uri) or "") if notebook else None
        index = module.cell_index(uri) if module is not None else None
        return None if module is None or index is None else (module, index)

    def snapshot(self, uri: str) -> DocumentSnapshot | None:
        """The open document at ``uri`` as a request about it sees it, or None if it is not
        open. A notebook cell's is its notebook's, the module (the handlers move the request
        and the answer between the cell and the module with ``fx_lsp.notebooks``)."""
        cell = self.cell_of(uri)
        path = cell[0].path if cell is not None else to_fs_path(uri) or ""
        document = self.documents.get(path)
        if document is None:
            return None
        if cell is not None and not self.documents.is_current(document):
            # Its result's module lines are of the cells as they were: through today's line
            # map they would land in other cells. The trace of the new text publishes anew and
            # asks the client to ask again (code lenses, inlay hints).
            return None
        return DocumentSnapshot(
            uri=document.uri,
            path=document.path,
            version=document.version,
            text=self.buffer_text(document),
            encoding=self.encoding,
            options=self.options_for(document.path),
            result=document.result,
            result_version=document.result_version,
            current=self.documents.is_current(document),
            entries=tuple(document.entries),
            others=tuple(self.documents.other_results(document)),
            traced_with=tuple(self.documents.results_traced_with(document)),
            files=self.files,
        )

    @property
    def resolves_code_actions(self) -> bool:
        """The client asks for a code action's edit with ``codeAction/resolve``."""
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        support = code_action.resolve_support if code_action else None
        return support is not None and "edit" in support.properties

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)
